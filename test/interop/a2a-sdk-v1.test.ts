import { A2AClient } from '@a2a-js/sdk/client'
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk-v1/client'
import { GetTaskRequest, ListTasksRequest, SubscribeToTaskRequest, TaskState, type Task } from '@a2a-js/sdk-v1'
import Fastify from 'fastify'
import t from 'tap'
import a2a, { type AgentExecutor } from '../../index.js'
import { WAIT_OR_ECHO_IN_TWO_MODULE, listen, postgresSchema, privateRedis, receiver, serve, testDatabase, until } from '../helper.js'
import { collect, driveEverything, executor, nextId, readState, sendRequest, textOf, v1Client } from './sdk-v1.js'

// The official v1.x client (@a2a-js/sdk 1.x, default options: no legacyCompat) against this server, beside the
// 0.3.14 client (CONTRACT.md §11). Every v1.0 operation, through the client's own API.

t.test('@a2a-js/sdk 1.x, default options, drives every v1.0 operation against the plugin', async t => {
  const { app, url } = await listen(t, { executor })
  const client = await v1Client(url)
  await driveEverything(t, client, { state: async id => (await app.a2aTasks.store.get(id))?.task.status.state })
})

// The scale-out modes: the client drives one instance while the other reads each task as stored.
for (const where of ['redis', 'postgres'] as const) {
  t.test(`@a2a-js/sdk 1.x drives every v1.0 operation against one of two instances sharing ${where === 'redis' ? 'Redis' : 'PostgreSQL'}`, async t => {
    const config = where === 'redis'
      ? { services: { cache: { type: 'cache' as const, url: (await privateRedis(t)).url } }, tasks: { backend: 'kvcache' as const }, push_notifications: { backend: 'kvcache' as const } }
      : { services: { postgres: { url: await postgresSchema(t, await testDatabase(t)) } }, tasks: { backend: 'postgres' as const }, push_notifications: { backend: 'postgres' as const } }
    const shared = { ...config, server: { shutdown_timeout: 0.5 } }
    const a = await listen(t, { executor, config: shared })
    const b = await listen(t, { executor, config: shared })
    const client = await v1Client(a.url)
    await driveEverything(t, client, { state: async id => (await b.app.a2aTasks.store.get(id))?.task.status.state })
  })
}

t.test('@a2a-js/sdk 1.x drives every v1.0 operation against the standalone server (the CLI, an executor module), over JSON-RPC and HTTP+JSON', async t => {
  t.testdir({ 'agent.yml': 'agent:\n  name: Standalone\n  executor: ./echo.js\n', 'echo.js': WAIT_OR_ECHO_IN_TWO_MODULE })
  const served = await serve(t, ['--config', 'agent.yml'])
  const client = await v1Client(served.url)
  await driveEverything(t, client, { state: readState(client) })
  const rest = await v1Client(served.url, {}, 'HTTP+JSON')
  await driveEverything(t, rest, { state: readState(rest) })
})

t.test('@a2a-js/sdk 1.x over its HTTP+JSON transport drives every v1.0 operation (CONTRACT.md §12)', async t => {
  const { url } = await listen(t, { executor })
  const client = await v1Client(url, {}, 'HTTP+JSON')
  t.match((client.transport as object).constructor.name, /RestTransport/, 'the REST transport, from the card\'s HTTP+JSON 1.0 entry')
  await driveEverything(t, client, { state: readState(client) })
})

t.test('@a2a-js/sdk 1.x against the plugin registered under a prefix in a host app, over JSON-RPC and HTTP+JSON', async t => {
  const host = Fastify({ logger: false })
  host.get('/', async () => 'host')
  await host.register(a2a, { prefix: '/agent', executor })
  const base = await host.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => host.close())
  const client = await v1Client(`${base}/agent/`)
  t.match((client.transport as unknown as { endpoint: string }).endpoint, /\/agent\/$/, 'the card names the prefixed URL')
  await driveEverything(t, client, { state: readState(client) })
  // The HTTP+JSON routes live under the prefix too (CONTRACT.md §12), and the host's own route is untouched.
  const rest = await v1Client(`${base}/agent/`, {}, 'HTTP+JSON')
  await driveEverything(t, rest, { state: readState(rest) })
  t.equal(await (await fetch(`${base}/`)).text(), 'host')
})

t.test('@a2a-js/sdk 1.x and 0.3.14 against the standalone server started with no config', async t => {
  t.testdir({})
  const served = await serve(t, [])
  const client = await v1Client(served.url)
  const sent = await client.sendMessage(sendRequest('standalone')) as Task
  t.equal(sent.status?.state, TaskState.TASK_STATE_COMPLETED)
  t.match(textOf(sent), /standalone/)
  const events = await collect(client.sendMessageStream(sendRequest('streamed')))
  t.equal(events[0].payload?.$case, 'task')
  const listed = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 1 }))
  t.equal(listed.tasks.length, 1)
  t.equal(listed.totalSize, 2)

  const old = await A2AClient.fromCardUrl(`${served.url}/.well-known/agent-card.json`)
  const got = await old.getTask({ id: sent.id }) as any
  t.equal(got.result.kind, 'task', 'the 0.3 client reads the task the 1.x client made')
  t.equal(got.result.status.state, 'completed')
})

t.test('a 0.3 client and a 1.x client on the same task: one streams in v1.0 while the other drives it in v0.3', async t => {
  const { url } = await listen(t, { executor, config: { protocol: { dialect: 'a2a' } } })
  const v1 = await v1Client(url)
  const old = await A2AClient.fromCardUrl(`${url}/.well-known/agent-card.json`)
  const started = await old.sendMessage({ message: { kind: 'message', role: 'user', messageId: nextId('old'), parts: [{ kind: 'text', text: 'wait' }] }, configuration: { blocking: false } }) as any
  const id = started.result.id as string
  await until(async () => (await v1.getTask(GetTaskRequest.fromJSON({ id }))).status?.state === TaskState.TASK_STATE_WORKING)
  const subscription = v1.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id }))
  t.equal((await subscription.next()).value?.payload?.$case, 'task', 'the v1.0 stream is live')
  const canceled = await old.cancelTask({ id }) as any
  t.equal(canceled.result.status.state, 'canceled')
  const events = await collect(subscription)
  const end = events[events.length - 1].payload
  t.equal(end?.$case === 'statusUpdate' ? end.value.status?.state : undefined, TaskState.TASK_STATE_CANCELED)
  const listedOld = await old.getTask({ id }) as any
  t.equal(listedOld.result.status.state, 'canceled')
})

t.test('@a2a-js/sdk 1.x with security on: the extended card, and a v1.0 webhook received by a real receiver', async t => {
  const key = 'key-sdk-v1-0123456789'
  const hook = await receiver(t)
  const { url } = await listen(t, {
    executor,
    config: {
      security: { enabled: true, auth: { api_key: { keys: [{ key, scopes: ['agent:read', 'files:read'], id: 'sdk' }] } } },
      push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } }
    }
  })
  const client = await v1Client(url, { 'X-API-Key': key })
  const card = await client.getAgentCard()
  t.equal(card.capabilities?.extendedAgentCard, true)
  t.ok(card.skills.some(s => s.id === 'tool-list_directory'), 'the extended card, with the skills the key allows')

  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory()] }))
  const anonymous = await factory.createFromUrl(url)
  await t.rejects(anonymous.sendMessage(sendRequest('x')), /401|Unauthenticated|-32010/, 'no key: refused')

  const sent = await client.sendMessage(sendRequest('hook', {}, {
    taskPushNotificationConfig: { url: `${hook.url}/v1`, authentication: { scheme: 'Bearer', credentials: 'cred' } }
  })) as Task
  t.equal(sent.status?.state, TaskState.TASK_STATE_COMPLETED)
  await until(() => hook.received.some(r => r.body?.task?.status?.state === 'TASK_STATE_COMPLETED'))
  t.equal(hook.received[0].headers['content-type'], 'application/a2a+json')
  t.equal(hook.received[0].headers.authorization, 'Bearer cred')
})

t.test('one task driven in turn over REST v1.0, JSON-RPC v1.0, JSON-RPC v0.3 and REST v0.3, each by its official client', async t => {
  // Each turn's message "more" asks for more input; anything else completes the task.
  const turns: AgentExecutor = async function * (ctx) {
    const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
    yield `turn: ${text}`
    if (text === 'more') yield { kind: 'status', state: 'input_required', message: 'more?' }
  }
  const { url } = await listen(t, { executor: turns })
  const rest = await v1Client(url, {}, 'HTTP+JSON')
  const rpc = await v1Client(url)
  const old = await A2AClient.fromCardUrl(`${url}/.well-known/agent-card.json`)
  const { ClientFactory: OldFactory, RestTransportFactory } = await import('@a2a-js/sdk/client')
  const oldRest = await new OldFactory({ transports: [new RestTransportFactory()] }).createFromUrl(url)

  const first = await rest.sendMessage(sendRequest('more')) as Task
  t.equal(first.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, 'REST v1.0 starts it')
  const id = first.id
  const second = await rpc.sendMessage(sendRequest('more', { taskId: id, contextId: first.contextId })) as Task
  t.equal(second.id, id)
  t.equal(second.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, 'JSON-RPC v1.0 continues it')
  const third = await old.sendMessage({ message: { kind: 'message', role: 'user', messageId: nextId('old'), taskId: id, contextId: first.contextId, parts: [{ kind: 'text', text: 'done' }] } }) as any
  t.equal(third.result.id, id)
  t.equal(third.result.status.state, 'completed', 'JSON-RPC v0.3 finishes it')
  const read = await oldRest.getTask({ id })
  t.equal(read.status.state, 'completed', 'REST v0.3 reads it')
  t.same(read.history?.filter(m => m.role === 'user').map(m => (m.parts[0] as { text: string }).text), ['more', 'more', 'done'])
  t.equal(read.artifacts?.length, 3, 'one artifact per turn, whoever sent it')
  const again = await rest.getTask(GetTaskRequest.fromJSON({ id }))
  t.equal(again.status?.state, TaskState.TASK_STATE_COMPLETED)
})
