import t from 'tap'
import type { A2AConfigInput } from '../../index.js'
import { listen, parseSse, postStream, privateRedis, receiver, rpc, until, userMessage, waitOrEcho } from '../helper.js'

// CONTRACT.md §11.2: one task model across versions, and across instances sharing Redis (a private redis-server).

async function post (url: string, method: string, params: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(rpc(method, params)) })
  return await res.json() as any
}

const V1 = { 'a2a-version': '1.0' }

/** Two instances' configuration: tasks, push configs and deliveries in one Redis. */
function sharedConfig (url: string): A2AConfigInput {
  return {
    services: { cache: { type: 'cache', url } },
    tasks: { backend: 'kvcache' },
    push_notifications: { backend: 'kvcache', config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.05 } },
    server: { shutdown_timeout: 0.5 }
  }
}

t.test('§11.2 on Redis: a v1.0 stream on one instance follows a task a v0.3 client drives on another; lists and webhooks agree', async t => {
  const redis = await privateRedis(t)
  const hook = await receiver(t)
  const shared = sharedConfig(redis.url)
  const a = await listen(t, { executor: waitOrEcho, config: shared })
  const b = await listen(t, { executor: waitOrEcho, config: shared })

  // v0.3 on A starts the task; v1.0 on B registers a webhook and streams it; v0.3 on A cancels it.
  const started = await post(a.url, 'message/send', { message: userMessage('wait'), configuration: { blocking: false } })
  const id = started.result.id as string
  await until(async () => (await post(b.url, 'GetTask', { id }, V1)).result.status.state === 'TASK_STATE_WORKING')
  const created = await post(b.url, 'CreateTaskPushNotificationConfig', { taskId: id, url: `${hook.url}/v1`, authentication: { scheme: 'Bearer', credentials: 'c' } }, V1)
  t.equal(created.result.id, 'default')
  const stream = postStream(b.url, rpc('SubscribeToTask', { id }, 'b'), V1)
  await until(() => b.app.a2aStreams.size === 1)
  const canceled = await post(a.url, 'tasks/cancel', { id })
  t.equal(canceled.result.status.state, 'canceled')
  const events = (await stream).events.map(e => e.result)
  t.match(events[0], { task: { id, status: { state: 'TASK_STATE_WORKING' } } })
  t.match(events[events.length - 1], { statusUpdate: { taskId: id, status: { state: 'TASK_STATE_CANCELED' } } })
  await until(() => hook.received.some(r => r.body?.task?.status?.state === 'TASK_STATE_CANCELED'))
  t.equal(hook.received[0].headers['content-type'], 'application/a2a+json', 'the v1.0 config delivers v1.0 bodies, from either instance')

  // v1.0 SendMessage on A, read in v0.3 on B; ListTasks with a time filter on B (the filter runs over Redis pages).
  const sent = await post(a.url, 'SendMessage', { message: { messageId: 'r1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }, V1)
  t.equal(sent.result.task.status.state, 'TASK_STATE_COMPLETED')
  const read = await post(b.url, 'tasks/get', { id: sent.result.task.id })
  t.match(read.result, { kind: 'task', status: { state: 'completed' }, artifacts: [{ parts: [{ kind: 'text', text: 'echo: hi' }] }] })
  const after = Date.parse(canceled.result.status.timestamp)
  const listed = await post(b.url, 'ListTasks', { statusTimestampAfter: new Date(after).toISOString(), pageSize: 1 }, V1)
  t.same(listed.result.tasks.map((x: any) => x.id), [sent.result.task.id])
  t.equal(listed.result.totalSize, 1)
  t.equal(listed.result.nextPageToken, '')
  const all = await post(b.url, 'ListTasks', { pageSize: 1, statusTimestampAfter: '2020-01-01T00:00:00Z' }, V1)
  t.equal(all.result.totalSize, 2)
  t.not(all.result.nextPageToken, '')
})

t.test('§12 on Redis: a REST v0.3 stream on one instance follows a task REST v1.0 drives on another; a /v1 webhook is v0.3', async t => {
  const redis = await privateRedis(t)
  const hook = await receiver(t)
  const shared = sharedConfig(redis.url)
  const a = await listen(t, { executor: waitOrEcho, config: shared })
  const b = await listen(t, { executor: waitOrEcho, config: shared })
  const json = { 'content-type': 'application/json' }

  const started = await (await fetch(`${a.url}/message:send`, {
    method: 'POST', headers: json, body: JSON.stringify({ message: { messageId: 'rr1', role: 'ROLE_USER', parts: [{ text: 'wait' }] }, configuration: { returnImmediately: true } })
  })).json() as any
  const id = started.task.id as string
  await until(async () => (await (await fetch(`${b.url}/v1/tasks/${id}`)).json() as any).status.state === 'TASK_STATE_WORKING')
  const created = await fetch(`${b.url}/v1/tasks/${id}/pushNotificationConfigs`, {
    method: 'POST', headers: json, body: JSON.stringify({ pushNotificationConfig: { id: 'v03', url: `${hook.url}/v03`, token: 'tk' } })
  })
  t.equal(created.status, 201)
  const stream = fetch(`${b.url}/v1/tasks/${id}:subscribe`, { method: 'POST' }).then(async res => res.text())
  await until(() => b.app.a2aStreams.size === 1)
  const canceled = await (await fetch(`${a.url}/tasks/${id}:cancel`, { method: 'POST' })).json() as any
  t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
  const events = parseSse(await stream).events
  t.match(events[0], { task: { id, status: { state: 'TASK_STATE_WORKING' } } })
  t.match(events[events.length - 1], { statusUpdate: { taskId: id, status: { state: 'TASK_STATE_CANCELLED' }, final: true } })
  await until(() => hook.received.some(r => r.body?.status?.state === 'canceled'))
  t.match(hook.received[0].headers['content-type'], /^application\/json/, 'a config made on /v1 delivers v0.3 bodies, from either instance')
  t.equal(hook.received[0].headers['x-a2a-notification-token'], 'tk')
  const listed = await (await fetch(`${a.url}/v1/tasks/${id}/pushNotificationConfigs`)).json() as any
  t.same(listed.configs.map((c: any) => c.name), [`tasks/${id}/pushNotificationConfigs/v03`], 'the config, read on the other instance')
})
