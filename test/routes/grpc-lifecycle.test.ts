import { createServer } from 'node:net'
import { status as Status } from '@grpc/grpc-js'
import type { AgentExecutor } from '../../index.js'
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import a2a, { validateConfig, withinCloseBudget } from '../../index.js'
import { listenGrpc, logCapture, privateRedis, rpc, until, userMessage, waitOrEchoInTwo } from '../helper.js'
import { stubIdp } from '../services/auth/idp.js'
import { peerAddress } from '../../services/grpc/binding.js'
import { freePort } from '../../scripts/redis-server.js'
import { grpcClients, metadataOf, streamAll, unary } from './grpc-client.js'
import { RedisTaskStore } from '../../services/tasks/redis-store.js'

// The gRPC server's life (CONTRACT.md §13): calls whose caller leaves, or that are still being prepared when the
// server shuts down, hold nothing; a shutdown that runs out of time cuts the last calls off; a port that is taken
// stops the start; health follows readiness; the metrics count gRPC calls. A slow identity provider (a real RFC
// 7662 stub, answering after 2 s) holds a call in its preparation.

const executor = waitOrEchoInTwo
const user = (text: string) => ({ messageId: `l-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] })
const bearer = { authorization: 'Bearer tok-lifecycle' }

async function withSlowIdp (t: Test, server: Record<string, unknown> = {}) {
  const idp = await stubIdp(t)
  idp.tokens.set('tok-lifecycle', { active: true, sub: 'lena', scope: 'api:read' })
  idp.mode('slow')
  const oauth2 = { introspection_endpoint: idp.endpoint, client_id: 'a2a-server', client_secret: 'idp-client-secret', required_scopes: ['api:read'], timeout: 5 }
  const served = await listenGrpc(t, { executor, config: { server, security: { enabled: true, auth: { oauth2 } } } })
  return { ...served, idp, clients: grpcClients(t, served.target) }
}

t.test('a stream whose caller leaves while it is prepared holds no slot: the task goes on', async t => {
  const { app, idp, clients: { v1 } } = await withSlowIdp(t, { max_streams: 1 })
  const call = v1.SendStreamingMessage({ message: user('wait') }, metadataOf(bearer))
  call.on('error', () => {})
  await until(() => idp.calls() === 1)
  call.cancel()
  // The identity provider answers; the task is made; the stream finds its caller gone.
  await until(async () => (await app.a2aTasks.store.list({ pageSize: 1 })).tasks.length === 1, 1000)
  await until(() => app.a2aGrpc?.binding?.size === 0)
  const [task] = (await app.a2aTasks.store.list({ pageSize: 1 })).tasks
  t.equal(task.task.status.state, 'in_progress', 'the task goes on')
  idp.mode('ok')
  const again = streamAll(v1, 'SubscribeToTask', { id: task.task.id }, bearer)
  await until(() => app.a2aGrpc?.binding?.size === 1)
  t.pass('the one stream slot was given back')
  await unary(v1, 'CancelTask', { id: task.task.id }, bearer)
  t.equal((await again).error, undefined)
})

t.test('a unary call whose caller leaves while it is prepared sends nothing and holds no answer bytes', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok-lifecycle', { active: true, sub: 'lena', scope: 'api:read' })
  idp.mode('slow')
  const oauth2 = { introspection_endpoint: idp.endpoint, client_id: 'a2a-server', client_secret: 'idp-client-secret', required_scopes: ['api:read'], timeout: 5 }
  const { app, url, target } = await listenGrpc(t, { executor, config: { metrics: { enabled: true }, security: { enabled: true, auth: { oauth2 } } } })
  const { v1 } = grpcClients(t, target)
  const call = v1.GetExtendedAgentCard({}, metadataOf(bearer), () => {})
  await until(() => idp.calls() === 1)
  call.cancel()
  // The identity provider answers (in 2 s); the method runs and is counted; its answer finds the caller gone.
  await until(async () => /a2a_rpc_requests_total\{method="GetExtendedAgentCard",code="0"\} 1/.test(await (await fetch(`${url}/metrics`)).text()), 1000)
  t.equal(app.a2aAnswers.bytes, 0, 'no answer bytes held')
  t.equal(app.a2aAnswers.waiting, 0)
  idp.mode('ok')
  t.equal((await unary(v1, 'GetExtendedAgentCard', {}, bearer)).error, undefined, 'the next call is answered')
})

t.test('a stream prepared while the server shuts down gets its task as it stands, and ends', async t => {
  const { app, idp, clients: { v1 } } = await withSlowIdp(t, { shutdown_timeout: 10 })
  const stream = streamAll(v1, 'SendStreamingMessage', { message: user('late') }, bearer)
  await until(() => idp.calls() === 1)
  await app.close()
  const { messages, error } = await stream
  t.equal(error, undefined, 'ended with OK')
  t.ok(messages[0].task.id, 'the task first')
  t.equal(messages[messages.length - 1].task?.id, messages[0].task.id, 'the snapshot last')
})

t.test('a call still running when server.shutdown_timeout has passed is cut off', async t => {
  const { app, idp, clients: { v1 } } = await withSlowIdp(t, { shutdown_timeout: 1 })
  const pending = unary(v1, 'GetTask', { id: 'x' }, bearer)
  await until(() => idp.calls() === 1)
  await app.close()
  const { error } = await pending
  t.ok(error !== undefined && [Status.UNAVAILABLE, Status.CANCELLED, Status.INTERNAL].includes(error.code), `cut off: ${error?.code} ${error?.details}`)
})

t.test('a taken gRPC port stops the start, saying so', async t => {
  const port = await freePort()
  const blocker = createServer().listen(port, '127.0.0.1')
  await new Promise(resolve => blocker.once('listening', resolve))
  t.teardown(() => blocker.close())
  await t.rejects(listenGrpc(t, { executor, config: { protocol: { grpc: { port } } } }), {
    code: 'A2A_ERR_LISTEN',
    message: `cannot listen for gRPC on 127.0.0.1:${port}: address in use (set protocol.grpc.port)`
  })
})

t.test('on an IPv6 host: the server binds it, and callers are known by their address', async t => {
  const port = await freePort()
  await listenGrpc(t, { executor, config: { server: { host: '::1' }, protocol: { grpc: { port, advertised_url: `[::1]:${port}` } } } })
  const { health } = grpcClients(t, `[::1]:${port}`)
  t.same((await unary(health, 'Check', { service: '' })).value, { status: 'SERVING' })
  t.equal(peerAddress('ipv6:[::1]:5000'), '::1')
  t.equal(peerAddress('[::1]:5000'), '::1')
  t.equal(peerAddress('ipv4:127.0.0.1:5000'), '127.0.0.1')
  t.equal(peerAddress('127.0.0.1:5000'), '127.0.0.1')
  t.equal(peerAddress('::1'), '::1', 'a bare IPv6 address')
})

t.test('the metrics count gRPC calls under their methods, as over the other bindings', async t => {
  const { url, target } = await listenGrpc(t, { executor, config: { metrics: { enabled: true } } })
  const { v1 } = grpcClients(t, target)
  await unary(v1, 'SendMessage', { message: user('counted') })
  await unary(v1, 'GetTask', { id: 'nope' })
  await streamAll(v1, 'SendStreamingMessage', { message: user('streamed') })
  const text = await (await fetch(`${url}/metrics`)).text()
  t.match(text, /a2a_rpc_requests_total\{method="SendMessage",code="0"\} 1/)
  t.match(text, /a2a_rpc_requests_total\{method="GetTask",code="-32001"\} 1/)
  t.match(text, /a2a_rpc_requests_total\{method="SendStreamingMessage",code="0"\} 1/)
})

t.test('the open-streams gauge (issue 39 row 18) counts gRPC streams beside SSE ones', async t => {
  const { app, url, target } = await listenGrpc(t, { executor, config: { metrics: { enabled: true } } })
  const { v1 } = grpcClients(t, target)
  const gauge = async () => Number(/^a2a_open_streams (\d+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1])
  t.equal(await gauge(), 0)
  const followed = streamAll(v1, 'SendStreamingMessage', { message: user('wait') })
  await until(() => app.a2aGrpc?.binding?.size === 1)
  t.equal(await gauge(), 1, 'one gRPC stream open')
  const [task] = (await app.a2aTasks.store.list({ pageSize: 1 })).tasks
  await unary(v1, 'CancelTask', { id: task.task.id })
  await followed
  await until(async () => await gauge() === 0)
  t.pass('none once it ended')
})

t.test('shutdown ends a stream of a task running on another instance with its snapshot; the task goes on there', async t => {
  const redis = await privateRedis(t)
  const config = { services: { cache: { type: 'cache', url: redis.url } }, tasks: { backend: 'kvcache' }, push_notifications: { backend: 'kvcache' } } as const
  const a = await listenGrpc(t, { executor, config })
  const b = await listenGrpc(t, { executor, config })
  const { v1: onB } = grpcClients(t, b.target)
  const { v1: onA } = grpcClients(t, a.target)
  const started = await unary(onB, 'SendMessage', { message: user('wait'), configuration: { returnImmediately: true } })
  const id = started.value.task.id
  await until(async () => (await unary(onA, 'GetTask', { id })).value?.status?.state === 'TASK_STATE_WORKING')
  const followed = streamAll(onA, 'SubscribeToTask', { id })
  await until(() => a.app.a2aGrpc?.binding?.size === 1)
  await a.app.close()
  const { messages, error } = await followed
  t.equal(error, undefined, 'ended with OK')
  t.equal(messages[messages.length - 1].task?.status?.state, 'TASK_STATE_WORKING', 'the snapshot last')
  t.equal((await unary(onB, 'GetTask', { id })).value?.status?.state, 'TASK_STATE_WORKING', 'the task goes on on the other instance')
  await unary(onB, 'CancelTask', { id })
})

t.test('a host whose pluginTimeout is shorter than server.shutdown_timeout: the drain fits it, and every stream ends with its task failed', async t => {
  const logs = logCapture()
  const app = Fastify({ pluginTimeout: 2000, logger: { level: 'warn', stream: logs.stream } })
  const port = await freePort()
  await app.register(a2a, { executor, config: { server: { shutdown_timeout: 10 }, protocol: { grpc: { enabled: true, port, advertised_url: `127.0.0.1:${port}` } } } })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.ok(logs.lines().some(l => l.msg.startsWith('server.shutdown_timeout is cut short') && l.used === 1.5), 'a warning names the time used')
  const { v1 } = grpcClients(t, `127.0.0.1:${port}`)
  const overGrpc = streamAll(v1, 'SendStreamingMessage', { message: user('wait') })
  const sse = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/stream', { message: userMessage('wait') })) })
  const overHttp = sse.text()
  await until(() => app.a2aTasks.running === 2)
  await app.close()
  const { messages, error } = await overGrpc
  t.equal(error, undefined)
  t.equal(messages[messages.length - 1].statusUpdate?.status?.state, 'TASK_STATE_FAILED', 'gRPC: the task failed by the drain')
  t.match(await overHttp, /"state":"failed"/, 'SSE: the same')
})

t.test('drain (issue 39 row 8): once the close begins, gRPC health says NOT_SERVING and new calls are UNAVAILABLE, as HTTP answers 503, while a call accepted before finishes', async t => {
  let open!: () => void
  const gate = new Promise<void>(resolve => { open = resolve })
  // A task that runs until the test lets it end: accepted before the close, it outlives the close's beginning.
  const slow: AgentExecutor = async function * () {
    yield 'working'
    await gate
    yield 'done'
  }
  const { app, url, target } = await listenGrpc(t, { executor: slow, config: { server: { shutdown_timeout: 10 } } })
  const { v1, health } = grpcClients(t, target)
  const check = async () => (await unary(health, 'Check', { service: 'lf.a2a.v1.A2AService' })).value?.status
  t.equal(await check(), 'SERVING')
  const accepted = unary(v1, 'SendMessage', { message: user('slow') })
  await until(() => app.a2aTasks.running === 1)
  const closing = app.close()
  t.equal((await fetch(`${url}/health`)).status, 503, 'HTTP answers 503')
  t.equal(await check(), 'NOT_SERVING', 'gRPC health says NOT_SERVING at once, during the task drain')
  const refused = await unary(v1, 'GetTask', { id: 'any' })
  t.equal(refused.error?.code, Status.UNAVAILABLE, 'a call sent after the close began is refused')
  const stream = await streamAll(v1, 'SendStreamingMessage', { message: user('late') })
  t.equal(stream.error?.code, Status.UNAVAILABLE, 'so is a stream')
  t.equal(app.a2aTasks.running, 1, 'no task was started by them')
  open()
  const { value, error } = await accepted
  t.equal(error, undefined)
  t.equal(value.task.status.state, 'TASK_STATE_COMPLETED', 'the call accepted before the close finishes with its task')
  await closing
})

t.test('withinCloseBudget: no bound (pluginTimeout 0) or room enough leaves the configuration as it is', async t => {
  const config = validateConfig({ server: { shutdown_timeout: 30 } })
  t.equal(withinCloseBudget(config, 0), config)
  t.equal(withinCloseBudget(config, 60_000), config)
  t.equal(withinCloseBudget(config, 10_000).server.shutdown_timeout, 9.5)
  t.equal(withinCloseBudget(config, 300).server.shutdown_timeout, 0)
})

t.test('row 15 on gRPC: a stream whose task settled unheard (its event lost, as across a Redis restart) ends with the task as stored; one whose task vanished ends', async t => {
  const redis = await privateRedis(t)
  const config = {
    services: { cache: { type: 'cache', url: redis.url } },
    tasks: { backend: 'kvcache' },
    push_notifications: { backend: 'kvcache' },
    server: { heartbeat_interval: 0.2, shutdown_timeout: 0.5 }
  } as const
  const a = await listenGrpc(t, { executor, config })
  const b = await listenGrpc(t, { executor, config })
  const { v1: onB } = grpcClients(t, b.target)
  const { v1: onA } = grpcClients(t, a.target)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  // A store with no announcer writes as the instances' does, and publishes nothing.
  const silent = new RedisTaskStore(client, { keyPrefix: 'a2a:task:', ttlSeconds: 60, pruneIntervalMs: 0 })
  const ids: string[] = []
  for (let i = 0; i < 2; i++) {
    const started = await unary(onB, 'SendMessage', { message: user('wait'), configuration: { returnImmediately: true } })
    ids.push(started.value.task.id)
    await until(async () => (await unary(onA, 'GetTask', { id: ids[i] })).value?.status?.state === 'TASK_STATE_WORKING')
  }
  const settled = streamAll(onA, 'SubscribeToTask', { id: ids[0] })
  const vanished = streamAll(onA, 'SubscribeToTask', { id: ids[1] })
  await until(() => a.app.a2aGrpc?.binding?.size === 2)
  const stored = await silent.get(ids[0])
  if (stored === null) throw new Error('the task is not stored')
  const completed = { ...stored.task, status: { state: 'completed' as const, timestamp: new Date().toISOString() } }
  t.equal(await silent.replace({ ...stored, version: stored.version + 1, task: completed }), true)
  await client.del(`a2a:task:t:${ids[1]}`)
  const one = await settled
  t.equal(one.error, undefined, 'ended with OK')
  t.equal(one.messages[one.messages.length - 1].task?.status?.state, 'TASK_STATE_COMPLETED', 'the task as stored, last')
  t.match(one.messages[one.messages.length - 1].task?.metadata, { fields: { 'fastify-a2a.resync': { boolValue: true } } }, 'marked as a resync')
  const two = await vanished
  t.equal(two.messages[0].task?.status?.state, 'TASK_STATE_WORKING')
  t.equal(two.messages.length, 1, 'nothing more: the task is gone')
  await until(() => a.app.a2aGrpc?.binding?.size === 0)
  for (const id of ids) await unary(onB, 'CancelTask', { id }).catch(() => {})
})
