import { connect as connectHttp2 } from 'node:http2'
import { connect, type Socket } from 'node:net'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import t from 'tap'
import pino from 'pino'
import { HttpAnswers } from '../../plugins/answers.js'
import ssePlugin, { type EventSource } from '../../plugins/sse.js'
import { AnswerBudget } from '../../services/serving/answer-budget.js'
import { taskNotFound, type JsonRpcError } from '../../services/kernel/errors.js'
import { h2Post, logCapture, parseSse, processWarnings, until } from '../helper.js'

/** A hand-driven source: the test writes and ends it. */
function manualSource (id?: number) {
  let sink: { write (json: string, id?: number): boolean | null, end (): void, abort (): void, fail? (error: JsonRpcError): void } | undefined
  let closed = 0
  let drains = 0
  const source: EventSource = {
    attach (s) { sink = s },
    drain () { drains++ },
    close () { closed++ },
    snapshot: () => '{"snapshot":true}',
    snapshotId: () => id
  }
  return {
    source,
    write: (json: string, eventId?: number) => (sink as { write (json: string, id?: number): boolean | null }).write(json, eventId),
    end: () => sink?.end(),
    abort: () => sink?.abort(),
    fail: (error: JsonRpcError) => sink?.fail?.(error),
    closed: () => closed,
    drains: () => drains
  }
}

async function app (t: { teardown (fn: () => unknown): void }, opts: Partial<Parameters<typeof ssePlugin>[1]> = {}) {
  const fastify = Fastify({ logger: false })
  const sources: Array<ReturnType<typeof manualSource>> = []
  await fastify.register(ssePlugin, { maxStreams: 10, heartbeatMs: 60_000, ...opts })
  fastify.post('/stream', async function (request, reply) {
    const slot = this.a2aStreams.take()
    if (slot === null) return reply.code(429).send()
    // `?id=N`: a source whose frames have ids, its snapshot under N.
    const id = (request.query as { id?: string }).id
    const s = manualSource(id === undefined ? undefined : Number(id))
    sources.push(s)
    // `?wait=N`: the stream opens N ms late, as one does after Redis I/O.
    const wait = Number((request.query as { wait?: string }).wait ?? 0)
    if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
    this.a2aStreams.open(reply, 'id-1', s.source, slot)
    return reply
  })
  fastify.post('/error', async function (_request, reply) {
    this.a2aStreams.error(reply, { jsonrpc: '2.0', id: 3, error: { code: -32001, message: 'Task not found', data: 'x' } })
    return reply
  })
  const url = await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  return { fastify, url, sources }
}

/** A client of a stream of `/stream` that reads nothing (its socket paused), once the stream's source is there. */
async function pausedClient (t: { teardown (fn: () => unknown): void }, url: string, sources: unknown[]): Promise<Socket> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  t.teardown(() => socket.destroy())
  socket.pause()
  socket.write('POST /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n')
  await until(() => sources.length === 1)
  return socket
}

t.test('the plugin writes each result as one data event carrying the request id, with the SSE headers', async t => {
  const { fastify, url, sources } = await app(t)
  const pending = fetch(url + '/stream', { method: 'POST' })
  await until(() => sources.length === 1)
  sources[0].write('{"n":1}')
  sources[0].write('{"n":2}')
  sources[0].end()
  const res = await pending
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  t.equal(res.headers.get('cache-control'), 'no-cache')
  t.equal(res.headers.get('x-accel-buffering'), 'no')
  t.equal(res.headers.get('connection'), 'keep-alive')
  const raw = await res.text()
  t.equal(raw, 'data: {"jsonrpc":"2.0","id":"id-1","result":{"n":1}}\n\ndata: {"jsonrpc":"2.0","id":"id-1","result":{"n":2}}\n\n')
  t.same(parseSse(raw).events.map(e => e.result.n), [1, 2])
  t.equal(fastify.a2aStreams.size, 0)
  t.equal(sources[0].closed(), 1)
  t.equal(sources[0].write('{"late":true}'), false, 'a write after the end goes nowhere')
})

t.test('an error stream is one event and the end', async t => {
  const { url } = await app(t)
  const res = await fetch(url + '/error', { method: 'POST' })
  t.equal(res.status, 200)
  t.equal(await res.text(), 'data: {"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"Task not found","data":"x"}}\n\n')
})

t.test('an idle stream gets keep-alive comments from the shared timer', async t => {
  const { url, sources } = await app(t, { heartbeatMs: 10 })
  const res = await fetch(url + '/stream', { method: 'POST' })
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const first = new TextDecoder().decode((await reader.read()).value)
  t.equal(first, ': keep-alive\n\n')
  sources[0].end()
  await reader.cancel()
})

t.test('row 15: a source that fails its stream on a binding with no error frame just ends it, and leaves the hub', async t => {
  const { fastify, url, sources } = await app(t)
  const res = fetch(url + '/stream', { method: 'POST' }).then(async r => await r.text())
  await until(() => sources.length === 1 && fastify.a2aStreams.size === 1)
  sources[0].write('{"first":1}')
  sources[0].fail(taskNotFound('t1'))
  t.equal(await res, 'data: {"jsonrpc":"2.0","id":"id-1","result":{"first":1}}\n\n')
  await until(() => fastify.a2aStreams.size === 0)
  t.equal(sources[0].closed(), 1)
})

t.test('a client that goes away closes its source and leaves the hub', async t => {
  const { fastify, url, sources } = await app(t)
  const ac = new AbortController()
  const res = await fetch(url + '/stream', { method: 'POST', signal: ac.signal })
  t.equal(res.status, 200)
  t.equal(fastify.a2aStreams.size, 1)
  ac.abort()
  await until(() => fastify.a2aStreams.size === 0)
  t.equal(sources[0].closed(), 1)
  // The source may still end (its task settles) after the client left: nothing is written and nothing is closed twice.
  sources[0].end()
  t.equal(sources[0].write('{"late":true}'), false)
  t.equal(sources[0].closed(), 1)
})

t.test('a client that stops reading is cut off once its queue passes the limit, and its source is closed', async t => {
  const { fastify, url, sources } = await app(t, { maxQueuedBytes: 64 * 1024 })
  await pausedClient(t, url, sources)
  const big = JSON.stringify({ text: 'x'.repeat(1024 * 1024) })
  // The kernel's socket buffers take the first megabytes; then the response's own queue grows past the limit.
  let writes = 0
  while (sources[0].closed() === 0 && writes < 256) {
    sources[0].write(big)
    writes++
    await new Promise(resolve => setImmediate(resolve))
  }
  t.equal(sources[0].closed(), 1, 'the source is closed: the task goes on without this client')
  await until(() => fastify.a2aStreams.size === 0)
  t.equal(sources[0].write(big), false, 'nothing more is written to it')
})

t.test('a client that takes nothing, with more than the limit queued behind the event being written, is cut off once still', async t => {
  const { fastify, url, sources } = await app(t, { maxQueuedBytes: 64 * 1024 })
  const socket = await pausedClient(t, url, sources)
  socket.on('error', () => {})
  // The event being written is spared, whatever its size; the one behind it is not (15 MiB: more than the kernel's
  // socket buffers take, about 10 MB at most on Linux, less than the 16 MiB a write may leave behind before it is cut
  // at once).
  sources[0].write(JSON.stringify({ text: 'x'.repeat(24 * 1024 * 1024) }))
  sources[0].write(JSON.stringify({ text: 'y'.repeat(15 * 1024 * 1024) }))
  await until(() => sources[0].closed() === 1, 1000)
  t.equal(fastify.a2aStreams.size, 0, 'cut off, its slot given back')
})

t.test('take hands out at most max streams slots, each given back once, by the stream\'s end', async t => {
  const { fastify, url, sources } = await app(t, { maxStreams: 1 })
  const pending = fetch(url + '/stream', { method: 'POST' })
  await until(() => sources.length === 1)
  t.equal(fastify.a2aStreams.take(), null, 'the open stream holds the only slot')
  t.equal((await fetch(url + '/stream', { method: 'POST' })).status, 429)
  sources[0].end()
  await (await pending).text()
  const slot = fastify.a2aStreams.take()
  t.type(slot, 'function', 'the ended stream gave its slot back')
  slot?.()
  slot?.()
  const again = fastify.a2aStreams.take()
  t.type(again, 'function')
  t.equal(fastify.a2aStreams.take(), null, 'a release called twice gave back one slot')
})

t.test('a client that resets its socket before the stream opens frees its slot and closes its source', async t => {
  const { fastify, url, sources } = await app(t, { maxStreams: 2 })
  const { port } = new URL(url)
  for (let i = 0; i < 6; i++) {
    const socket = connect(Number(port), '127.0.0.1')
    await new Promise(resolve => socket.once('connect', resolve))
    socket.write('POST /stream?wait=30 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n')
    await until(() => sources.length === i + 1)
    socket.resetAndDestroy()
    // More resets than slots: each must have given its slot back for the next request to get one.
    await until(() => sources[i].closed() === 1)
  }
  t.equal(fastify.a2aStreams.size, 0, 'no ghost stream is left open')
  const slots = [fastify.a2aStreams.take(), fastify.a2aStreams.take()]
  t.ok(slots.every(s => typeof s === 'function'), 'both slots are free again')
  for (const slot of slots) slot?.()
})

t.test('a write to a response destroyed before its close event ends the stream at once', async t => {
  const fastify = Fastify({ logger: false })
  await fastify.register(ssePlugin, { maxStreams: 10, heartbeatMs: 60_000 })
  const seen: Array<{ write: boolean | null, size: number, closed: number }> = []
  fastify.post('/stream', async function (_request, reply) {
    const s = manualSource()
    this.a2aStreams.open(reply, 'id-1', s.source)
    // Destroyed in this tick: the close event that would drop the stream has not been delivered yet.
    reply.raw.destroy()
    seen.push({ write: s.write('{"n":1}'), size: this.a2aStreams.size, closed: s.closed() })
    return reply
  })
  const url = await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  await fetch(url + '/stream', { method: 'POST' }).catch(() => {})
  await until(() => seen.length === 1)
  t.same(seen[0], { write: false, size: 0, closed: 1 }, 'the write is refused and the stream is gone, in the same tick')
})

t.test('on close, streams get the snapshot after beforeShutdown and end', async t => {
  const order: string[] = []
  const { fastify, url, sources } = await app(t, { beforeShutdown: async () => { order.push('drain') } })
  const pending = fetch(url + '/stream', { method: 'POST' })
  await until(() => sources.length === 1)
  await fastify.close()
  const raw = await (await pending).text()
  t.same(order, ['drain'])
  t.equal(raw, 'data: {"jsonrpc":"2.0","id":"id-1","result":{"snapshot":true}}\n\n')
})

t.test('a source with ids: each frame starts with its id line, and so does the snapshot sent at close', async t => {
  const { fastify, url, sources } = await app(t)
  const pending = fetch(url + '/stream?id=9', { method: 'POST' })
  await until(() => sources.length === 1)
  sources[0].write('{"n":1}', 7)
  sources[0].write('{"n":2}')
  await fastify.close()
  t.equal(await (await pending).text(), 'id: 7\ndata: {"jsonrpc":"2.0","id":"id-1","result":{"n":1}}\n\n' +
    'data: {"jsonrpc":"2.0","id":"id-1","result":{"n":2}}\n\n' +
    'id: 9\ndata: {"jsonrpc":"2.0","id":"id-1","result":{"snapshot":true}}\n\n')
})

/**
 * A server whose one route waits, once its request has arrived, until the test opens the gate, then answers through
 * the hub with `answer`: the request is in flight when the test starts the close, and answered after it.
 */
async function lateAnswer (answer: (hub: FastifyInstance['a2aStreams'], reply: FastifyReply) => void) {
  const fastify = Fastify({ logger: false })
  await fastify.register(ssePlugin, { maxStreams: 10, heartbeatMs: 60_000 })
  let arrived = false
  let open: () => void = () => {}
  const gate = new Promise<void>(resolve => { open = resolve })
  fastify.post('/late', async function (_request, reply) {
    arrived = true
    await gate
    answer(this.a2aStreams, reply)
    return reply
  })
  const url = await fastify.listen({ host: '127.0.0.1', port: 0 })
  const pending = fetch(url + '/late', { method: 'POST' })
  await until(() => arrived)
  const closed = fastify.close()
  // Past preClose, which ends the open streams, and past the close of the idle sockets.
  await until(() => !fastify.server.listening)
  open()
  return { fastify, res: await pending, closed }
}

t.test('a stream opened after the shutdown ended the others gets its snapshot at once and closes its connection', async t => {
  const { fastify, res, closed } = await lateAnswer((hub, reply) => hub.open(reply, 'late', manualSource().source))
  t.equal(res.headers.get('connection'), 'close')
  t.equal(await res.text(), 'data: {"jsonrpc":"2.0","id":"late","result":{"snapshot":true}}\n\n')
  t.equal(fastify.a2aStreams.size, 0)
  await closed
})

t.test('an error stream sent while the server closes closes its connection', async t => {
  const { res, closed } = await lateAnswer((hub, reply) =>
    hub.error(reply, { jsonrpc: '2.0', id: 4, error: { code: -32001, message: 'Task not found' } }))
  t.equal(res.headers.get('connection'), 'close')
  t.equal(await res.text(), 'data: {"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"Task not found"}}\n\n')
  await closed
})

t.test('over HTTP/2 a stream goes out without a connection header, and node has nothing to warn about', async t => {
  const warnings = processWarnings(t)
  const fastify = Fastify({ http2: true, logger: false })
  await fastify.register(ssePlugin, { maxStreams: 10, heartbeatMs: 60_000 })
  fastify.post('/stream', async function (_request, reply) {
    const s = manualSource()
    // The hub is typed for HTTP/1 replies; over HTTP/2 it uses only what both kinds share.
    this.a2aStreams.open(reply as unknown as FastifyReply, 'h2', s.source)
    s.write('{"n":1}')
    s.end()
    return reply
  })
  const url = await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const session = connectHttp2(url)
  t.teardown(() => session.destroy())
  const { headers, text } = await h2Post(session, '/stream')
  t.equal(headers[':status'], 200)
  t.equal(headers['content-type'], 'text/event-stream')
  t.equal(headers.connection, undefined)
  t.equal(text, 'data: {"jsonrpc":"2.0","id":"h2","result":{"n":1}}\n\n')
  session.close()
  await new Promise(resolve => setImmediate(resolve))
  t.same(warnings, [])
})

t.test('a stream whose client takes nothing gets no keep-alive, and is reset after server.write_timeout with its slot given back', async t => {
  const budget = new AnswerBudget({ maxBytes: Infinity, maxBytesPerConnection: Infinity })
  const logs = logCapture()
  const answers = new HttpAnswers(budget, 1000, pino({ level: 'info' }, logs.stream))
  const { fastify, url, sources } = await app(t, { heartbeatMs: 10, maxStreams: 1, answers })
  const socket = await pausedClient(t, url, sources)
  // One event larger than the kernel's socket buffers take: the event being written, which the 1 MiB rule spares.
  sources[0].write(JSON.stringify({ text: 'x'.repeat(24 * 1024 * 1024) }))
  t.ok(budget.bytes > 0, 'what was written counts until its client takes it')
  t.equal(fastify.a2aStreams.take(), null, 'the stream holds the only slot')
  await until(() => fastify.a2aStreams.size === 0, 1000)
  t.equal(sources[0].closed(), 1, 'the source is closed: the task goes on without this client')
  t.equal(budget.bytes, 0, 'the room it held is back')
  t.equal(answers.watching, 0)
  const slot = fastify.a2aStreams.take()
  t.type(slot, 'function', 'its slot is free again')
  slot?.()
  const resetLine = (): any => logs.lines().find(l => /within server\.write_timeout/.test(String(l.msg)))
  await until(() => resetLine() !== undefined, 3000).catch(() => {})
  const line = resetLine()
  t.match(line, { untaken: Number }, `the reset is logged with what was left untaken (${JSON.stringify(logs.lines().map(l => l.msg))})`)
  // Reading now, the client finds no keep-alive behind the event, and its connection reset.
  let received = ''
  const ended = new Promise(resolve => {
    socket.on('error', resolve)
    socket.on('close', resolve)
  })
  socket.on('data', chunk => { received += chunk.toString('latin1').slice(-64) })
  socket.resume()
  await ended
  t.notMatch(received, /keep-alive/, 'no keep-alive went to a client that took nothing')
})

t.test('at shutdown, a stream whose client has not taken its last bytes within the grace is reset, and leaves the count', async t => {
  const budget = new AnswerBudget({ maxBytes: Infinity, maxBytesPerConnection: Infinity })
  const answers = new HttpAnswers(budget, 60_000, pino({ level: 'silent' }))
  const { fastify, url, sources } = await app(t, { answers })
  const socket = await pausedClient(t, url, sources)
  socket.on('error', () => {})
  // More than the kernel's socket buffers take: the stream cannot flush while its client reads nothing.
  sources[0].write(JSON.stringify({ text: 'x'.repeat(24 * 1024 * 1024) }))
  fastify.a2aStreams.endAll()
  t.equal(fastify.a2aStreams.size, 1, 'ended, its last bytes untaken: still counted')
  await until(() => fastify.a2aStreams.size === 0, 10_000)
  t.equal(budget.bytes, 0, 'reset after the grace: its room is back')
})

t.test('an event the answer budget has no room for is refused unwritten; the stream drains once room comes back', async t => {
  const budget = new AnswerBudget({ maxBytes: 1024, maxBytesPerConnection: 1024 })
  const answers = new HttpAnswers(budget, 30_000, pino({ level: 'silent' }))
  const { url, sources } = await app(t, { answers })
  const other = budget.tryTake({}, 1000) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  const pending = fetch(url + '/stream', { method: 'POST' })
  await until(() => sources.length === 1)
  const event = JSON.stringify({ text: 'x'.repeat(100) })
  t.equal(sources[0].write(event), null, 'no room: nothing written')
  t.equal(sources[0].write(event), null, 'still none, and one wait for it')
  t.equal(budget.waiting, 1)
  t.equal(sources[0].drains(), 0)
  other.release()
  await until(() => sources[0].drains() === 1)
  t.equal(budget.bytes, 0, 'the reservation went back: the source wrote nothing with it')
  t.equal(sources[0].write(event), true, 'room again')
  sources[0].end()
  const raw = await (await pending).text()
  t.equal(parseSse(raw).events.length, 1)
})

t.test('a stream that goes while it waits for room gives up the wait', async t => {
  const budget = new AnswerBudget({ maxBytes: 1024, maxBytesPerConnection: 1024 })
  const answers = new HttpAnswers(budget, 30_000, pino({ level: 'silent' }))
  const { fastify, url, sources } = await app(t, { answers })
  // All the room: no grant can come before the stream goes.
  const other = budget.tryTake({}, 1024) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  const ac = new AbortController()
  await fetch(url + '/stream', { method: 'POST', signal: ac.signal })
  await until(() => sources.length === 1)
  t.equal(sources[0].write('{"n":1}'), null)
  t.equal(budget.waiting, 1)
  ac.abort()
  await until(() => fastify.a2aStreams.size === 0)
  t.equal(budget.waiting, 0, 'the wait went with the stream')
  other.release()
  t.equal(budget.bytes, 0)
})

t.test('room granted to a stream cut off in the same tick goes back at once', async t => {
  const budget = new AnswerBudget({ maxBytes: 1024, maxBytesPerConnection: 1024 })
  const answers = new HttpAnswers(budget, 30_000, pino({ level: 'silent' }))
  const { fastify, url, sources } = await app(t, { answers })
  const other = budget.tryTake({}, 1000) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  fetch(url + '/stream', { method: 'POST' }).then(res => res.text()).catch(() => {})
  await until(() => sources.length === 1)
  t.equal(sources[0].write('{"n":1}'), null)
  other.release()
  sources[0].abort()
  await until(() => fastify.a2aStreams.size === 0 && budget.bytes === 0)
  t.equal(sources[0].drains(), 0, 'the source of a stream gone is not asked to write')
})
