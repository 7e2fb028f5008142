import t from 'tap'
import { build, buildLogged, call, listen, listenGrpc, postStream, privateRedis, rpc, until, userMessage, waitOrEcho, waitOrEchoInTwo } from './helper.js'
import { grpcClients, unary } from './routes/grpc-client.js'

t.test('a stalled Redis fails requests with 503 -32603 instead of hanging; /ready says so; all recovers', async t => {
  const redis = await privateRedis(t)
  const app = await build(t, {
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      push_notifications: { backend: 'kvcache' }
    }
  })
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  const set = (id: string) => app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id, method: 'tasks/pushNotificationConfig/set', params: { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/' } } } })
  t.equal((await set('before')).statusCode, 200)

  redis.stop()
  const stalled = await set('stalled')
  t.equal(stalled.statusCode, 503)
  t.same(stalled.json(), { jsonrpc: '2.0', id: 'stalled', error: { code: -32603, message: 'Internal error', data: 'storage unavailable' } })
  t.equal((await app.inject('/ready')).statusCode, 503)
  t.equal((await app.inject('/health')).statusCode, 200, '/health stays 200')

  redis.resume()
  await until(async () => (await app.inject('/ready')).statusCode === 200)
  t.equal((await set('after')).statusCode, 200)
})

t.test('a Redis that restarts empty: memory tasks are unaffected, kvcache data is gone with a clear error', async t => {
  const redis = await privateRedis(t)
  const app = await build(t, {
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      push_notifications: { backend: 'kvcache' }
    }
  })
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/' } })
  await redis.restart()
  await until(async () => (await app.inject('/ready')).statusCode === 200)
  t.equal((await call(app, 'tasks/get', { id: task.id })).body.result.status.state, 'completed')
  const got = await call(app, 'tasks/pushNotificationConfig/get', { id: task.id })
  t.same(got.body.error, { code: -32001, message: 'Task not found', data: `task "${task.id}" has no push notification config` })
})

t.test('with tasks in Redis, a stall fails sends, gets and streams fast with 503; the reaper only logs; all recovers', async t => {
  const redis = await privateRedis(t)
  const { app, logs } = await buildLogged(t, {
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', lease_ttl: 0.2 },
      push_notifications: { backend: 'kvcache' },
      server: { shutdown_timeout: 0.5 }
    }
  })
  const before = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  t.equal(before.status.state, 'completed')

  redis.stop()
  for (const [method, params] of [
    ['message/send', { message: userMessage('y') }],
    ['tasks/get', { id: before.id }],
    ['tasks/list', {}],
    ['tasks/resubscribe', { id: before.id }]
  ] as const) {
    const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: method, method, params } })
    t.equal(res.statusCode, 503, `${method}: 503`)
    t.equal(res.headers['retry-after'], '1')
    t.same(res.json(), { jsonrpc: '2.0', id: method, error: { code: -32603, message: 'Internal error', data: 'storage unavailable' } })
  }
  await until(() => logs.lines().some(l => l.msg === 'orphaned tasks not reaped'))
  t.equal((await app.inject('/ready')).statusCode, 503)

  redis.resume()
  await until(async () => (await app.inject('/ready')).statusCode === 200)
  const after = (await call(app, 'message/send', { message: userMessage('z') })).body.result
  t.equal(after.status.state, 'completed')
  t.equal((await call(app, 'tasks/get', { id: before.id })).body.result.id, before.id, 'nothing written before the stall is lost')
})

t.test('row 15: after Redis restarts empty, a resubscribe following a task that is gone ends with -32001 instead of staying open', async t => {
  const redis = await privateRedis(t)
  const { app, url } = await listen(t, {
    executor: waitOrEcho,
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache' },
      push_notifications: { backend: 'kvcache' },
      server: { shutdown_timeout: 0.5, heartbeat_interval: 0.2 }
    }
  })
  const task = (await call(app, 'message/send', { message: userMessage('wait'), configuration: { blocking: false } })).body.result
  const following = postStream(url, rpc('tasks/resubscribe', { id: task.id }))
  await until(() => app.a2aStreams.size === 1)
  await redis.restart()
  const stream = await following
  t.same(stream.events[stream.events.length - 1].error, { code: -32001, message: 'Task not found', data: `task "${task.id}" was not found` })
  await until(() => app.a2aStreams.size === 0)
  t.equal((await call(app, 'tasks/get', { id: task.id })).body.error.code, -32001)
})

t.test('gRPC health follows readiness: NOT_SERVING while Redis does not answer, SERVING once it does', async t => {
  const redis = await privateRedis(t)
  const { target } = await listenGrpc(t, {
    executor: waitOrEchoInTwo,
    config: { services: { cache: { type: 'cache', url: redis.url } }, tasks: { backend: 'kvcache' }, push_notifications: { backend: 'kvcache' } }
  })
  const { health } = grpcClients(t, target)
  const check = async () => (await unary(health, 'Check', { service: 'lf.a2a.v1.A2AService' })).value?.status
  t.equal(await check(), 'SERVING')
  redis.stop()
  // Asked every 5 s, each check within 2 s.
  await until(async () => await check() === 'NOT_SERVING', 1500)
  t.pass('NOT_SERVING')
  redis.resume()
  await until(async () => await check() === 'SERVING', 1500)
  t.pass('SERVING again')
})
