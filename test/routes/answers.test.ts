// Answers in flight are bounded (plugins/answers.ts, services/serving/answer-budget.ts): the server's and each connection's
// share of bytes written and not yet taken, a connection whose client stops taking closed after
// server.write_timeout, and streams whose events are larger than the 1 MiB a non-reader may hold reaching readers whole.
import { connect, type Socket } from 'node:net'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { A2AOptions } from '../../index.js'
import { listen, parseSse, postStream, rpc, until, userMessage } from '../helper.js'

const MiB = 1024 * 1024

/** Sends a message of `size` characters; the built-in agent echoes it, so the task holds it twice. */
async function bigTask (url: string, size: number, char = 'x'): Promise<{ id: string, answer: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(rpc('message/send', { message: userMessage(char.repeat(size)) }))
  })
  const body = await res.json() as { result: { id: string, status: { state: string } } }
  if (body.result?.status?.state !== 'completed') throw new Error(`task not completed: ${JSON.stringify(body).slice(0, 200)}`)
  const got = await fetch(`${url}/tasks/${body.result.id}`)
  return { id: body.result.id, answer: await got.text() }
}

/** The most bytes the budget ever held, watched on every take. */
function peakOf (app: FastifyInstance): () => number {
  const budget = app.a2aAnswers
  let peak = 0
  for (const name of ['tryTake', 'exchange', 'takeNow'] as const) {
    const original = budget[name].bind(budget) as (...args: unknown[]) => unknown
    ;(budget as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      const taken = original(...args)
      peak = Math.max(peak, budget.bytes)
      return taken
    }
  }
  const take = budget.take.bind(budget)
  budget.take = async (...args) => {
    const taken = await take(...args)
    peak = Math.max(peak, budget.bytes)
    return taken
  }
  return () => peak
}

/** A raw HTTP/1 GET whose answer is never read. */
async function neverReads (t: { teardown (fn: () => unknown): void }, url: string, path: string): Promise<Socket> {
  const { port } = new URL(url)
  const socket = connect(Number(port), '127.0.0.1')
  t.teardown(() => socket.destroy())
  await new Promise(resolve => socket.once('connect', resolve))
  socket.pause()
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
  return socket
}

async function app (t: { teardown (fn: () => unknown): void }, server: Record<string, unknown>, opts: A2AOptions = {}) {
  return await listen(t, { ...opts, config: { ...opts.config, server: { max_request_size: 32 * MiB, ...server } } })
}

t.test('40 concurrent readers of a large task all get it whole, and the bytes in flight stay within the budget and one answer', async t => {
  const { app: server, url } = await app(t, { max_answer_bytes: 6 * MiB, max_answer_bytes_per_connection: 2 * MiB })
  const { id, answer } = await bigTask(url, 1_600_000)
  t.ok(answer.length > 3 * MiB, 'each answer is over 3 MiB')
  const peak = peakOf(server)
  const answers = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
    const res = i % 2 === 0
      ? await fetch(`${url}/tasks/${id}`)
      : await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('tasks/get', { id })) })
    return await res.text()
  }))
  for (const [i, body] of answers.entries()) {
    const task = i % 2 === 0 ? JSON.parse(body) : JSON.parse(body).result
    t.equal(task.id, id, `answer ${i} is the task, whole`)
  }
  t.ok(peak() <= 6 * MiB + answer.length + 1024, `at most the budget and one answer in flight (peak ${peak()})`)
  await until(() => server.a2aAnswers.bytes === 0 && server.a2aAnswers.waiting === 0)
})

t.test('clients that never read their answers hold at most the budget, are reset after server.write_timeout, and a reader is answered meanwhile', async t => {
  const { app: server, url } = await app(t, { max_answer_bytes: 20 * MiB, max_answer_bytes_per_connection: 4 * MiB, write_timeout: 1 })
  // An answer of about 14 MB: more than the kernel's socket buffers take on their own, so its end stays with us.
  const { id, answer } = await bigTask(url, 7 * 1_000_000)
  const peak = peakOf(server)
  const stalled = await Promise.all(Array.from({ length: 8 }, () => neverReads(t, url, `/tasks/${id}`)))
  await until(() => server.a2aAnswers.waiting > 0, 3000)
  t.ok(server.a2aAnswers.bytes <= 20 * MiB + answer.length, 'the stalled answers hold the budget, no more')
  // A client that reads is answered once the stalled ones are closed (each within a second or two of stalling).
  const res = await fetch(`${url}/tasks/${id}`)
  t.equal((await res.json() as { id: string }).id, id)
  // Each stalled answer was cut off (its client, reading again, finds its connection reset), or, once the others
  // were, taken whole by the kernel's buffers.
  await until(() => server.a2aAnswers.bytes === 0 && server.a2aAnswers.waiting === 0 && server.a2aReplies.watching === 0, 3000)
  const ends = await Promise.all(stalled.map(socket => new Promise<string>(resolve => {
    let received = 0
    socket.on('error', () => resolve('reset'))
    socket.on('close', () => resolve('reset'))
    socket.on('data', chunk => {
      received += chunk.length
      if (received >= answer.length) resolve('whole')
    })
    socket.resume()
  })))
  t.ok(ends.filter(end => end === 'reset').length >= 6, `the stalled clients were cut off (${ends.join(', ')})`)
  t.ok(peak() <= 20 * MiB + answer.length + 1024, `peak ${peak()} within the budget and one answer`)
})

t.test('a client that leaves while its answer waits for room takes nothing and holds nothing', async t => {
  const { app: server, url } = await app(t, { max_answer_bytes: 65_536, max_answer_bytes_per_connection: 65_536, write_timeout: 30 })
  const { id } = await bigTask(url, 7 * 1_000_000)
  const first = await neverReads(t, url, `/tasks/${id}`)
  await until(() => server.a2aAnswers.bytes > 0)
  const second = await neverReads(t, url, `/tasks/${id}`)
  await until(() => server.a2aAnswers.waiting === 1)
  second.destroy()
  await until(() => server.a2aAnswers.waiting === 0)
  first.destroy()
  await until(() => server.a2aAnswers.bytes === 0)
  t.pass('the wait ended with its client, and the first answer gave its room back when its socket went')
})

t.test('requests whose clients leave mid-body take no answer room: the budget does not fill with answers nobody can get', async t => {
  // Each left request is answered (an error of about 120 bytes) after its socket has closed; room taken then was
  // never given back, and after some 550 of them the least budget there may be (64 KiB) was full: every later
  // answer waited for good.
  const { app: server, url } = await app(t, { max_answer_bytes: 65_536, max_answer_bytes_per_connection: 65_536 })
  const { port } = new URL(url)
  for (let round = 0; round < 30; round++) {
    await Promise.all(Array.from({ length: 20 }, async () => {
      const socket = connect(Number(port), '127.0.0.1')
      await new Promise(resolve => socket.once('connect', resolve))
      socket.write('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"')
      await until(() => server.a2aRequests.bytes >= 1000)
      socket.destroy()
    }))
    await until(() => server.a2aRequests.bytes === 0)
  }
  t.equal(server.a2aAnswers.bytes, 0, 'no room is held for the clients that left')
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('status')), signal: AbortSignal.timeout(10_000) })
  t.equal(res.status, 200, 'the next client is answered')
  t.equal(server.a2aAnswers.waiting, 0)
})

/** Reads a whole SSE answer of a POST through a client that reads as fast as it can. */
async function streamOf (url: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number, raw: string }> {
  const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return { status: res.status, raw: await res.text() }
}

t.test('a client that reads gets stream events larger than 1 MiB whole, on every binding and version', async t => {
  const { app: server, url } = await app(t, {}, { config: { protocol: { dialect: 'a2a' } } })
  const text = 'y'.repeat(1_100_000)
  const message = userMessage(text)
  // JSON-RPC v0.3 (a2a dialect): the task, its status, the 1.1 MB artifact, the end.
  const v03 = await postStream(url, rpc('message/stream', { message }))
  t.equal(v03.events.at(-1).result.status.state, 'completed')
  t.ok(v03.events.some(e => e.result.kind === 'artifact-update' && e.result.artifact.parts[0].text === text), 'the artifact arrived whole')
  // JSON-RPC v1.0.
  const v1Message = { messageId: 'm-big', role: 'ROLE_USER', parts: [{ text }] }
  const v1 = await postStream(url, rpc('SendStreamingMessage', { message: v1Message }), { 'a2a-version': '1.0' })
  t.equal(v1.events.at(-1).result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
  t.ok(v1.events.some(e => e.result.artifactUpdate?.artifact.parts[0].text === text))
  // REST v1.0 and v0.3.
  const rest = await streamOf(url, '/message:stream', { message: { ...v1Message, messageId: 'm-big-2' } }, { 'a2a-version': '1.0' })
  t.equal(rest.status, 200)
  const restEvents = parseSse(rest.raw).events
  t.equal(restEvents.at(-1).statusUpdate.status.state, 'TASK_STATE_COMPLETED')
  t.ok(restEvents.some(e => e.artifactUpdate?.artifact.parts[0].text === text))
  const rest03 = await streamOf(url, '/v1/message:stream', { message: { messageId: 'm-big-3', role: 'ROLE_USER', content: [{ text }] } })
  t.equal(rest03.status, 200)
  t.ok(parseSse(rest03.raw).events.some(e => e.artifactUpdate?.artifact.parts[0].text === text))
  // A resubscribe of a finished 4 MB task: its snapshot, one event of over 4 MB.
  const { id } = await bigTask(url, 2_000_000, 'z')
  const again = await postStream(url, rpc('tasks/resubscribe', { id }))
  t.equal(again.events.length, 1)
  t.equal(again.events[0].result.artifacts[0].parts[0].text.length, 2_000_000)
  // A resume replays the big event, whole, after the last one seen.
  const resumed = await postStream(url, rpc('tasks/resubscribe', { id: v03.events[0].result.id }), { 'last-event-id': String(v03.ids[0]) })
  t.ok(resumed.events.some(e => e.result.kind === 'artifact-update' && e.result.artifact.parts[0].text === text), 'the resume carries the big artifact')
  t.equal(server.a2aStreams.size, 0)
})

t.test('a client that reads gets a stream whose events are each larger than 16 MiB: a message of almost max_request_size, echoed', async t => {
  const { url } = await app(t, {}, { config: { protocol: { dialect: 'a2a' } } })
  const text = 'v'.repeat(16_700_000)
  const streamed = await postStream(url, rpc('message/stream', { message: userMessage(text) }))
  t.equal(streamed.events.at(-1).result.status.state, 'completed')
  t.ok(streamed.events.some(e => e.result.kind === 'artifact-update' && e.result.artifact.parts[0].text.length === text.length),
    'the artifact arrived whole')
})

t.test('a stream ended with bytes its client has not taken keeps its slot, and is counted open, until they are taken', async t => {
  const { app: server, url } = await app(t, { max_streams: 1 })
  const { port } = new URL(url)
  let response: IncomingMessage | undefined
  const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-type': 'application/json' } }, res => {
    response = res
    res.pause()
  })
  req.on('error', () => {})
  t.teardown(() => req.destroy())
  // About 14 MB of stream: more than the kernel's buffers hold, so its end waits for the client.
  req.end(JSON.stringify(rpc('message/stream', { message: userMessage('w'.repeat(7_000_000)) })))
  await until(() => response !== undefined)
  await until(async () => (await (await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('tasks/list', {}))
  })).json() as { result: { tasks: Array<{ status: { state: string } }> } }).result.tasks[0]?.status.state === 'completed')
  t.equal(server.a2aStreams.size, 1, 'the ended stream still counts as open')
  const refused = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/stream', { message: userMessage('hi') })) })
  t.equal(refused.status, 429, 'its slot is still taken')
  // Its client reads: the last bytes go, the slot comes back.
  const drained = new Promise(resolve => (response as IncomingMessage).on('end', resolve))
  ;(response as IncomingMessage).resume()
  await drained
  await until(() => server.a2aStreams.size === 0)
  const next = await postStream(url, rpc('message/stream', { message: userMessage('hi') }))
  t.equal(next.status, 200)
})
