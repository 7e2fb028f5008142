// The soak's slow-reader phase (scripts/soak.js): clients that ask for large answers and never read them, over every
// binding, while others read as usual. The server must keep its memory within the answer budget, answer the readers,
// and reset the non-readers once server.write_timeout has passed with nothing taken.
import { once } from 'node:events'
import { connect } from 'node:net'
import { request } from 'undici'

const rpcBody = (id, method, params) => JSON.stringify({ jsonrpc: '2.0', id, method, params })
let seq = 0
const message = text => ({ kind: 'message', role: 'user', messageId: `slow-${++seq}`, parts: [{ kind: 'text', text }] })

/** A raw HTTP/1 request on its own socket, whose answer is never read; resolves with the socket once sent. */
async function neverReads (url, head, body = '') {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  socket.on('error', () => {})
  await once(socket, 'connect')
  socket.pause()
  socket.write(head + (body === '' ? '\r\n' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`))
  return socket
}

/**
 * What became of a non-reader, reading it now, within `ms`: `reset` (the server let go of it: reset or closed),
 * `whole` (its answer was all there, taken by the kernel's buffers before the server could find it stalled), or
 * `held` (the server still holds it). `statuses` counts the HTTP statuses of the answers that had begun.
 */
async function fate (socket, ms, statuses) {
  return await new Promise(resolve => {
    let tail = ''
    let whole = Infinity
    let received = 0
    const timer = setTimeout(() => resolve('held'), ms)
    const done = what => {
      clearTimeout(timer)
      resolve(what)
    }
    socket.once('close', () => done('reset'))
    socket.on('data', chunk => {
      received += chunk.length
      if (received === chunk.length) {
        // The head is in the first chunk: a whole answer is as long as it says, with the head.
        const text = chunk.toString('latin1')
        const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 'none'
        statuses[status] = (statuses[status] ?? 0) + 1
        const length = /content-length: (\d+)/i.exec(text)
        if (length !== null) whole = Number(length[1]) + text.indexOf('\r\n\r\n') + 4
      }
      tail = (tail + chunk.toString('latin1')).slice(-16)
      // Or, chunked (a stream), its last chunk.
      if (received >= whole || tail.endsWith('\r\n0\r\n\r\n')) done('whole')
    })
    socket.resume()
  })
}

/**
 * Runs the phase against each of `urls` (the instances' base URLs, ending in /): for each, a task of about 4 MB, then
 * `perKind` clients of each kind that never read (REST and JSON-RPC reads of the task, SSE resubscribes to it) while
 * readers keep reading the same task. `extra` (gRPC non-readers, say) runs beside it. After `holdMs` the non-readers
 * read again: each must find its connection let go (reset, or its answer there whole).
 */
export async function slowReaders ({ urls, dispatcher, perKind = 20, holdMs, extra = async () => ({}) }) {
  const counts = { nonReaders: 0, reset: 0, whole: 0, held: 0, statuses: {}, read: 0, refused: 0, readFailures: 0, failures: {} }
  const failed = reason => {
    counts.readFailures++
    counts.failures[reason] = (counts.failures[reason] ?? 0) + 1
  }
  const sockets = []
  const tasks = []
  for (const url of urls) {
    const res = await request(url, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json' }, body: rpcBody(1, 'message/send', { message: message('x'.repeat(2_000_000)) }) })
    const { result } = await res.body.json()
    tasks.push({ url, id: result.id })
  }
  for (const { url, id } of tasks) {
    const path = new URL(url).pathname
    for (let i = 0; i < perKind; i++) {
      sockets.push(await neverReads(url, `GET ${path}tasks/${id} HTTP/1.1\r\nHost: x\r\n`))
      sockets.push(await neverReads(url, `POST ${path} HTTP/1.1\r\nHost: x\r\n`, rpcBody(i, 'tasks/get', { id })))
      sockets.push(await neverReads(url, `POST ${path} HTTP/1.1\r\nHost: x\r\n`, rpcBody(i, 'tasks/resubscribe', { id })))
    }
  }
  counts.nonReaders = sockets.length
  // Readers, meanwhile: each read of the large task must come back whole.
  const deadline = Date.now() + holdMs
  const readers = Array.from({ length: 4 }, async (_, w) => {
    while (Date.now() < deadline) {
      const { url, id } = tasks[w % tasks.length]
      try {
        const res = await request(`${url}tasks/${id}`, { dispatcher })
        const text = await res.body.text()
        if (res.statusCode === 503 && res.headers['retry-after'] !== undefined) {
          // Storage busy (Redis answering 4 MB reads to every client at once): a client retries after Retry-After.
          counts.refused++
          await new Promise(resolve => setTimeout(resolve, 1000 * Number(res.headers['retry-after'])))
        } else if (res.statusCode !== 200) failed(`HTTP ${res.statusCode} ${text.slice(0, 120)}`)
        else if (JSON.parse(text).id === id) counts.read++
        else failed('another task')
      } catch (err) {
        failed(err.code ?? err.message)
      }
    }
  })
  const [more] = await Promise.all([extra(tasks, holdMs), ...readers])
  for (const what of await Promise.all(sockets.map(socket => fate(socket, 10_000, counts.statuses)))) counts[what]++
  for (const socket of sockets) socket.destroy()
  return { ...counts, ...more }
}
