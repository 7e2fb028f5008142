import t from 'tap'
import { TEST_REDIS, build, call, receiver, redisDb, until, userMessage } from '../helper.js'

const DB = 15

t.test('with the kvcache backend, push configs live in one Redis hash per task and deliveries flow', async t => {
  const redis = await redisDb(t, DB)
  const hook = await receiver(t)
  const app = await build(t, {
    config: {
      services: { cache: { type: 'cache', url: TEST_REDIS.url, db: DB } },
      push_notifications: { backend: 'kvcache', key_prefix: 'test:push:', config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01 } }
    }
  })
  const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: hook.url, token: 'tk' } } })
  t.equal(sent.body.result.status.state, 'completed')
  await until(() => hook.received.length === 2)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'completed'])
  const key = `test:push:${sent.body.result.id}`
  t.equal(await redis.exists(key), 1)
  t.ok(await redis.ttl(key) > 0, 'the configs expire with the task')
  const list = await call(app, 'tasks/pushNotificationConfig/list', { id: sent.body.result.id })
  t.same(list.body.result, [{ taskId: sent.body.result.id, pushNotificationConfig: { id: 'default', url: hook.url, token: 'tk' } }])
  const ready = await app.inject('/ready')
  t.same(ready.json(), { status: 'ready', checks: { tasks: 'ok', redis: 'ok' } })
})

t.test('Redis down: set and a message with a push config fail fast with 503 -32603, and nothing is half-written', async t => {
  const app = await build(t, {
    config: {
      services: { cache: { type: 'cache', url: 'redis://127.0.0.1:1' } },
      push_notifications: { backend: 'kvcache' }
    }
  })
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  t.equal(task.status.state, 'completed', 'tasks in memory are unaffected')
  const set = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 's', method: 'tasks/pushNotificationConfig/set', params: { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/' } } } })
  t.equal(set.statusCode, 503)
  t.equal(set.headers['retry-after'], '1')
  t.same(set.json(), { jsonrpc: '2.0', id: 's', error: { code: -32603, message: 'Internal error', data: 'storage unavailable' } })
  const send = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 'm', method: 'message/send', params: { message: userMessage('y'), configuration: { pushNotificationConfig: { url: 'https://hooks.example.com/' } } } } })
  t.equal(send.statusCode, 503)
  t.equal(send.json().error.code, -32603)
  const list = await call(app, 'tasks/list', {})
  t.same(list.body.result.tasks.map((x: any) => x.id), [task.id], 'the refused message made no task')
  const ready = await app.inject('/ready')
  t.equal(ready.statusCode, 503)
  t.same(ready.json(), { status: 'unavailable', checks: { tasks: 'ok', redis: 'unavailable' } })
  t.equal((await app.inject('/health')).statusCode, 200)
})
