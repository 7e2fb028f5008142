// Requests in flight are bounded (services/serving/request-budget.ts, routes/inbound.ts, services/grpc/binding.ts): the bytes
// of requests received and not yet handed to their operation take room in server.max_request_bytes (and their
// connection's share) before an HTTP body is read, or as a gRPC call reaches its handler. What finds no room waits a
// little then gets 503 with Retry-After (HTTP), or RESOURCE_EXHAUSTED at once (gRPC); a refused request makes no task.
// The task service's `start` is held shut here, so that requests stay "being handled" for as long as a test needs.
import { connect as connectH2, type ClientHttp2Session } from 'node:http2'
import { connect, type Socket } from 'node:net'
import { status as Status } from '@grpc/grpc-js'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { AgentExecutor } from '../../index.js'
import { TEST_REDIS, listen, listenGrpc, parseSse, redisDb, rpc, until, userMessage } from '../helper.js'
import { V1_SERVICE } from '../../services/grpc/protos.js'
import { grpcClients, grpcFrame, unary } from './grpc-client.js'
import { ANONYMOUS } from '../../services/auth/principal.js'

const MiB = 1024 * 1024
const small: AgentExecutor = async function * () { yield 'ok' }

/**
 * Holds every new task at the door (the task service's `start`) until `open()`, its request in flight; with `only`,
 * the tasks whose message id starts with it.
 */
function holdTasks (app: FastifyInstance, only = ''): { open: () => void, held: () => number } {
  const tasks = app.a2aTasks
  const start = tasks.start.bind(tasks)
  let open = (): void => {}
  const opened = new Promise<void>(resolve => { open = resolve })
  let held = 0
  tasks.start = async (...args: Parameters<typeof start>) => {
    if (!args[0].messageId.startsWith(only)) return await start(...args)
    held++
    await opened
    return await start(...args)
  }
  return { open, held: () => held }
}

async function taskCount (app: FastifyInstance): Promise<number> {
  return (await app.a2aTasks.store.list({ pageSize: 100, owner: ANONYMOUS.id })).tasks.length
}

/** A raw HTTP/1 socket, destroyed at teardown. */
async function socketTo (t: { teardown (fn: () => unknown): void }, url: string): Promise<Socket> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  socket.on('error', () => {})
  t.teardown(() => socket.destroy())
  await new Promise(resolve => socket.once('connect', resolve))
  return socket
}

// This file owns Redis db 0 (the kvcache case).
const DB = 0

for (const backend of ['memory', 'kvcache'] as const) {
  t.test(`40 concurrent 2 MB message/stream requests hold at most server.max_request_bytes: the rest wait, then get 503 with Retry-After and make no task, and other clients are served (${backend} store)`, async t => {
    const store = backend === 'memory'
      ? {}
      : { services: { cache: { type: 'cache' as const, url: TEST_REDIS.url, db: DB } }, tasks: { backend: 'kvcache' as const }, push_notifications: { backend: 'kvcache' as const } }
    if (backend === 'kvcache') await redisDb(t, DB)
    const { app, url } = await listen(t, { executor: small, config: { ...store, server: { max_request_bytes: 8 * MiB } } })
    const gate = holdTasks(app)
    const body = (i: number) => JSON.stringify(rpc('message/stream', { message: userMessage('x'.repeat(2_000_000), { messageId: `m-${i}` }) }))
    const answers = Array.from({ length: 40 }, async (_, i) => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: body(i) })
      return { status: res.status, retryAfter: res.headers.get('retry-after'), connection: res.headers.get('connection'), text: await res.text() }
    })
    const budget = app.a2aRequests
    // Four 2 MB bodies fit in 8 MiB; their tasks are held, so the 36 others find no room, wait, and are refused.
    await until(() => gate.held() === 4 && budget.refused === 36, 3000)
    t.comment(`held: ${budget.bytes} bytes of requests (peak ${budget.peak}), ${budget.refused} refused`)
    t.ok(budget.peak <= 8 * MiB, `at most the budget is held (peak ${budget.peak} bytes)`)
    const list = await fetch(`${url}/tasks`)
    t.equal(list.status, 200, 'a request with no body is served meanwhile')
    gate.open()
    const done = await Promise.all(answers)
    const served = done.filter(a => a.status === 200)
    const refused = done.filter(a => a.status === 503)
    t.equal(served.length, 4, 'the four admitted are streamed')
    for (const answer of served) t.equal(parseSse(answer.text).events.at(-1)?.result?.status?.state, 'completed', 'to their task\'s end')
    t.equal(refused.length, 36, 'the others are refused')
    t.same(refused.map(a => a.retryAfter), Array(36).fill('1'), 'with Retry-After: 1')
    t.same(refused.map(a => a.connection), Array(36).fill('close'), 'and their connections closed, their bodies unread')
    t.match(JSON.parse(refused[0].text), { error: { code: -32603, data: /server\.max_request_bytes/ } }, 'and the overload error')
    t.equal(await taskCount(app), 4, 'a refused request made no task')
    await until(() => budget.bytes === 0)
    t.pass('every byte is given back')
  })
}

t.test('a request that finds no room waits and is served once room comes back; one whose client leaves while it waits is dropped', async t => {
  const { app, url } = await listen(t, { executor: small, config: { server: { max_request_bytes: 65_536, max_request_bytes_per_connection: 65_536 } } })
  const budget = app.a2aRequests
  const other = {}
  const full = budget.tryTake(other, 65_536)
  t.ok(full, 'the budget is full')
  const answer = fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage('hi') })) })
  await until(() => budget.waiting === 1)
  full?.release()
  const res = await answer
  t.equal(res.status, 200)
  t.equal((await res.json() as any).result.status.state, 'completed', 'served once room came back')

  const again = budget.tryTake(other, 65_536)
  const socket = await socketTo(t, url)
  const payload = JSON.stringify(rpc('message/send', { message: userMessage('gone') }))
  socket.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\n\r\n`)
  await until(() => budget.waiting === 1)
  const refusedBefore = budget.refused
  socket.destroy()
  await until(() => budget.waiting === 0 && budget.refused === refusedBefore + 1)
  again?.release()
  t.equal(budget.bytes, 0, 'the client gone, it waits no more and holds nothing')
  t.equal(await taskCount(app), 1, 'and made no task')
})

t.test('a chunked body counts as server.max_request_size from before it is read; a body over the limit takes nothing and gets 413', async t => {
  const { app, url } = await listen(t, { executor: small, config: { server: { max_request_size: 100_000 } } })
  const budget = app.a2aRequests
  const socket = await socketTo(t, url)
  socket.write('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"jso\r\n')
  await until(() => budget.bytes === 100_000)
  t.pass('the chunked body holds server.max_request_size')
  socket.destroy()
  await until(() => budget.bytes === 0)
  t.pass('given back when its connection goes')
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(100_001) })
  t.equal(res.status, 413)
  t.equal(budget.peak, 100_000, 'the body over the limit took nothing')
})

// gRPC: the scenario of issue 39 (300 SendStreamingMessage calls each carrying a large message, on one client), its
// messages scaled down to 200 kB against a 256 KiB connection share.

/** A call on a raw HTTP/2 session; settles with its grpc-status, once known (trailers or a trailers-only answer). */
function rawCall (session: ClientHttp2Session, rpc: string, request: unknown): Promise<number | undefined> {
  const stream = session.request({ ':method': 'POST', ':path': `/${V1_SERVICE}/${rpc}`, 'content-type': 'application/grpc', te: 'trailers' })
  stream.on('error', () => {})
  stream.end(grpcFrame(rpc, request))
  stream.resume()
  return new Promise(resolve => {
    stream.once('response', headers => { if (headers['grpc-status'] !== undefined) resolve(Number(headers['grpc-status'])) })
    stream.once('trailers', trailers => resolve(Number(trailers['grpc-status'])))
    stream.once('close', () => resolve(undefined))
  })
}

t.test('300 SendStreamingMessage calls with large messages on one connection hold at most its share of server.max_request_bytes: the rest are RESOURCE_EXHAUSTED and make no task, and other calls are served', async t => {
  const { app, target } = await listenGrpc(t, {
    executor: small,
    config: { server: { max_request_bytes: 65_536 * 8, max_request_bytes_per_connection: 262_144 }, protocol: { grpc: { max_concurrent_streams: 400 } } }
  })
  const gate = holdTasks(app, 's-')
  const session = connectH2(`http://${target}`)
  session.on('error', () => {})
  t.teardown(() => session.destroy())
  const message = { role: 'ROLE_USER', parts: [{ text: 'x'.repeat(200_000) }] }
  const statuses = Array.from({ length: 300 }, (_, i) => rawCall(session, 'SendStreamingMessage', { message: { ...message, messageId: `s-${i}` } }))
  const budget = app.a2aRequests
  await until(() => gate.held() === 1 && budget.refused === 299, 3000)
  t.ok(budget.peak < 262_144, `one message held on the connection (peak ${budget.peak} bytes)`)
  const { v1 } = grpcClients(t, target)
  const card = await unary(v1, 'GetExtendedAgentCard', {})
  t.not(card.error?.code, Status.RESOURCE_EXHAUSTED, 'a call carrying no bytes is served meanwhile')
  const other = await unary(v1, 'SendMessage', { message: { ...message, messageId: 'other', parts: [{ text: 'hi' }] } })
  t.not(other.error?.code, Status.RESOURCE_EXHAUSTED, 'another connection has its own share')
  gate.open()
  const done = await Promise.all(statuses)
  t.equal(done.filter(s => s === Status.RESOURCE_EXHAUSTED).length, 299, 'every call past the share is refused')
  t.equal(done.filter(s => s === Status.OK).length, 1, 'the admitted one is streamed to its end')
  t.equal(await taskCount(app), 2, 'a refused call made no task')
  await until(() => budget.bytes === 0)
  t.pass('every byte is given back')
})

t.test('a unary call that finds no room is RESOURCE_EXHAUSTED with retry-after, and served once room comes back', async t => {
  const { app, target } = await listenGrpc(t, { executor: small, config: { server: { max_request_bytes: 65_536 } } })
  const { v1 } = grpcClients(t, target)
  const full = app.a2aRequests.tryTake({}, 65_536)
  const message = { role: 'ROLE_USER', parts: [{ text: 'hello' }], messageId: 'u-1' }
  const refused = await unary(v1, 'SendMessage', { message })
  t.equal(refused.error?.code, Status.RESOURCE_EXHAUSTED)
  t.same(refused.error?.metadata.get('retry-after'), ['1'], 'with retry-after')
  t.equal(await taskCount(app), 0, 'and no task')
  full?.release()
  const served = await unary(v1, 'SendMessage', { message: { ...message, messageId: 'u-2' } })
  t.equal(served.value?.task?.status?.state, 'TASK_STATE_COMPLETED', 'served once room is back')
  t.equal(app.a2aRequests.bytes, 0)
})
