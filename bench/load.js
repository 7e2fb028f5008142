// The loads of `npm run bench`: message/send through autocannon, message/stream through an undici pool with every
// stream read to the end, SendMessage and SendStreamingMessage over gRPC through node:http2, and push end to end against
// a local receiver. All on 127.0.0.1, bounded in time.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { connect } from 'node:http2'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { Pool } from 'undici'
import { a2aService, grpcFrame } from './canned-grpc.js'

const GOT_CLIENT = fileURLToPath(new URL('./got-client.js', import.meta.url))
/** How long a push worker waits for a task's final delivery before counting it as lost. */
const PUSH_WAIT_MS = 10_000

let seq = 0
/** The v1.0 methods' request bodies: `SendMessage` and `SendStreamingMessage` with one text part (CONTRACT.md §11.3). */
const V10 = new Set(['SendMessage', 'SendStreamingMessage'])

/** A v1.0 SendMessageRequest: the params of SendMessage, and the body of REST `POST /message:send`. */
function v10Params () {
  return { message: { role: 'ROLE_USER', messageId: `bench-${++seq}`, parts: [{ text: 'hello bench' }] } }
}

/** The body of the HTTP+JSON routes `POST /message:send` and `POST /message:stream` (CONTRACT.md §12). */
export function restBody () {
  return JSON.stringify(v10Params())
}

/** A JSON-RPC request body; `message/send` with a push config when `pushUrl` is given. */
export function rpcBody (method, pushUrl) {
  if (V10.has(method)) return JSON.stringify({ jsonrpc: '2.0', id: seq + 1, method, params: v10Params() })
  const params = { message: { kind: 'message', role: 'user', messageId: `bench-${++seq}`, parts: [{ kind: 'text', text: 'hello bench' }] } }
  if (pushUrl !== undefined) params.configuration = { pushNotificationConfig: { url: pushUrl } }
  return JSON.stringify({ jsonrpc: '2.0', id: seq, method, params })
}

function percentile (sorted, p) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

function summary (count, errors, seconds, latencies) {
  latencies.sort((a, b) => a - b)
  return { rps: Math.round(count / seconds), p50: round(percentile(latencies, 0.5)), p99: round(percentile(latencies, 0.99)), errors }
}

const round = ms => Math.round(ms * 100) / 100

/**
 * `message/send`: autocannon, `connections` requests in flight for `seconds` (or `amount` requests). A JSON-RPC error
 * counts as an error.
 */
export async function sendLoad (url, { headers, connections, seconds, amount, method = 'message/send', rest = false }) {
  let rpcErrors = 0
  const result = await autocannon({
    // Several URLs: autocannon shares the connections between them, round-robin.
    url: rest ? new URL('./message:send', url).href : url,
    method: 'POST',
    connections,
    // autocannon stops on whole seconds: a shorter run (a warm-up, a smoke run) is a fixed number of requests.
    ...(amount !== undefined ? { amount } : seconds < 1 ? { amount: Math.max(connections, Math.round(seconds * 1000)) } : { duration: seconds }),
    headers: { 'content-type': 'application/json', ...headers },
    // A messageId of its own per request: the same body sent again would be a duplicate, answered without a run
    // (docs/protocol.md, "Idempotent sends").
    requests: [{ setupRequest: request => ({ ...request, body: rest ? restBody() : rpcBody(method) }) }],
    setupClient (client) {
      client.on('body', buf => { if (buf.includes('"error"')) rpcErrors++ })
    }
  })
  const ok = result['2xx'] - rpcErrors
  return {
    rps: Math.round(ok / result.duration),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts + rpcErrors
  }
}

/** Runs `once` on `connections` loops until `seconds` pass; each call resolves true when it succeeded. */
async function loop (connections, seconds, once) {
  const latencies = []
  let errors = 0
  const t0 = Date.now()
  const deadline = t0 + seconds * 1000
  await Promise.all(Array.from({ length: connections }, async () => {
    while (Date.now() < deadline) {
      const start = process.hrtime.bigint()
      const ok = await once().catch(() => false)
      if (ok) latencies.push(Number(process.hrtime.bigint() - start) / 1e6)
      else errors++
    }
  }))
  return summary(latencies.length, errors, (Date.now() - t0) / 1000, latencies)
}

/** Runs `worker(pool)` on `connections` loops over one undici pool until `seconds` pass. */
async function closedLoop (url, connections, seconds, worker) {
  const pool = new Pool(url, { connections, pipelining: 1 })
  try {
    return await loop(connections, seconds, () => worker(pool))
  } finally {
    await pool.close()
  }
}

/** `message/stream`: `connections` streams in flight, each read to its end, which must be the completed task. */
export function streamLoad (url, { headers, connections, seconds, method = 'message/stream', rest = false }) {
  const path = rest ? '/message:stream' : '/'
  // The last event of a stream: the completed Task (v0.3) or its TASK_STATE_COMPLETED update (v1.0).
  const done = method === 'message/stream' && !rest ? '"completed"' : '"TASK_STATE_COMPLETED"'
  return closedLoop(url, connections, seconds, async pool => {
    // A messageId of its own per stream, as in `sendLoad`.
    const body = rest ? restBody() : rpcBody(method)
    const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers }, body })
    const text = await res.body.text()
    return res.statusCode === 200 && text.includes(done) && !text.includes('"error"')
  })
}

/** The last message of a gRPC body, undefined when it has none. */
function lastMessage (body) {
  let last
  for (let at = 0; at + 5 <= body.length;) {
    const length = body.readUInt32BE(at + 1)
    last = body.subarray(at + 5, at + 5 + length)
    at += 5 + length
  }
  return last
}

/**
 * gRPC `SendMessage`, or with `stream` `SendStreamingMessage` read to its end: `connections` calls in flight on one
 * HTTP/2 connection, for `seconds`. A call counts when it ends with grpc-status 0 and the completed task. The calls
 * are made with node:http2 and the proto's own serializers, not a grpc-js client: a grpc-js client costs more per call
 * than the servers measured, so on two cores it saturated first (2026-11-28: our server did 2,371 calls/s at 55 % of
 * a core under it, the SDK 1.3 1,411/s at 46 %; with this load 3,849/s at 71 % and 2,210/s at 83 %, the load's
 * process at 40 to 57 %, and the rate the same from 50 to 200 calls in flight and from 1 to 10 connections).
 * `headers` go as call metadata: the SDK's server refuses a call without `a2a-version: 1.0`.
 */
export async function grpcLoad (target, { connections, seconds, stream = false, headers = {} }) {
  const method = a2aService[stream ? 'SendStreamingMessage' : 'SendMessage']
  const session = connect(`http://${target}`)
  session.on('error', () => {})
  const head = { ':method': 'POST', ':path': method.path, 'content-type': 'application/grpc', te: 'trailers', ...headers }
  const one = () => new Promise(resolve => {
    const call = session.request(head)
    const chunks = []
    let status
    // A call that fails at once answers in its headers alone (trailers-only); else the status comes in the trailers.
    call.on('response', received => { status = received['grpc-status'] })
    call.on('trailers', trailers => { status = trailers['grpc-status'] })
    call.on('data', chunk => chunks.push(chunk))
    call.on('error', () => resolve(false))
    call.on('close', () => {
      const last = status === '0' ? lastMessage(Buffer.concat(chunks)) : undefined
      if (last === undefined) return resolve(false)
      const answer = method.responseDeserialize(last)
      resolve((stream ? answer.statusUpdate : answer.task)?.status?.state === 'TASK_STATE_COMPLETED')
    })
    call.end(grpcFrame(method.requestSerialize(v10Params())))
  })
  try {
    return await loop(connections, seconds, one)
  } finally {
    session.close()
  }
}

/**
 * The webhook receiver: answers 204 to every POST and counts them; `completed(taskId)` resolves when a delivery of
 * that task in state `completed` arrives (the task id is read from the body, a Task or a JSON-RPC envelope).
 */
export async function receiver () {
  const done = new Set()
  const waiters = new Map()
  let count = 0
  const server = createServer((req, res) => {
    const chunks = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      count++
      res.statusCode = 204
      res.end()
      const body = safeParse(Buffer.concat(chunks).toString())
      const task = body?.result ?? body
      if (task?.status?.state !== 'completed') return
      const id = task.id ?? task.taskId
      const waiter = waiters.get(id)
      if (waiter === undefined) done.add(id)
      else waiter()
    })
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    count: () => count,
    completed (id) {
      if (done.delete(id)) return Promise.resolve(true)
      return new Promise(resolve => {
        const timer = setTimeout(() => { waiters.delete(id); resolve(false) }, PUSH_WAIT_MS)
        waiters.set(id, () => { clearTimeout(timer); waiters.delete(id); resolve(true) })
      })
    },
    close: () => new Promise(resolve => { server.closeAllConnections(); server.close(resolve) })
  }
}

function safeParse (text) {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/**
 * Push end to end: each loop sends `message/send` with a push config, then waits until the receiver has the task's
 * `completed` delivery. Reports deliveries per second at the receiver (every state change is one delivery) and the
 * latency from send to the final delivery.
 */
export async function pushLoad (url, hook, { headers, connections, seconds }) {
  const before = hook.count()
  const t0 = Date.now()
  const result = await closedLoop(url, connections, seconds, async pool => {
    const res = await pool.request({ path: '/', method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: rpcBody('message/send', hook.url) })
    const reply = await res.body.json()
    return reply.result?.id !== undefined && await hook.completed(reply.result.id)
  })
  const deliveries = hook.count() - before
  return { ...result, deliveries: Math.round(deliveries / ((Date.now() - t0) / 1000)) }
}

/**
 * The push baseline: got 14 in its own process posting a Task to the receiver, `connections` in flight. `watch`
 * samples the client process while it runs.
 */
export async function gotLoad (hook, { connections, seconds }, watch) {
  const child = spawn(process.execPath, [GOT_CLIENT, hook.url, String(connections), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  const [line] = await once(child.stdout, 'data')
  const w = watch(child.pid)
  const [done] = await once(child.stdout, 'data')
  const usage = w.stop()
  await exited
  const ready = JSON.parse(line)
  const { ok, failed, seconds: elapsed } = JSON.parse(done)
  if (!ready.ready) throw new Error('the got client did not start')
  return { deliveries: Math.round(ok / elapsed), errors: failed, ...usage }
}
