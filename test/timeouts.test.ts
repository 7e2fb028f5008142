import { connect, type Socket } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { createServer } from '../server.js'
import { validateConfig } from '../services/config/load.js'
import { listen, rpc, until, userMessage } from './helper.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Heap in use after a full collection, MB. */
async function liveHeapMb (): Promise<number> {
  // Two rounds with a turn between: what the first frees may hold the rest through finalizers.
  gc()
  await new Promise(resolve => setImmediate(resolve))
  gc()
  return process.memoryUsage().heapUsed / 1024 / 1024
}

/** A socket that sends the start of a request, then `trickle` forever every 100 ms; it records how it ended. */
function slowClient (port: number, start: string, trickle: string): { socket: Socket, closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1')
  let answer = ''
  socket.setEncoding('utf8')
  socket.on('data', chunk => { answer += chunk })
  socket.on('error', () => {})
  socket.write(start)
  const timer = setInterval(() => socket.write(trickle), 100)
  const closed = new Promise<string>(resolve => socket.on('close', () => {
    clearInterval(timer)
    resolve(answer)
  }))
  return { socket, closed }
}

t.test('50 slowloris sockets neither starve normal requests nor stay open past the header and request timeouts', async t => {
  const app = await createServer(validateConfig({ server: { log_level: 'silent', request_timeout: 2 } }))
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const port = Number(new URL(url).port)
  const headers = Array.from({ length: 40 }, () =>
    slowClient(port, 'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n', 'X-Slow: 1\r\n'))
  const bodies = Array.from({ length: 10 }, () =>
    slowClient(port, 'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":"', 'x'))
  t.teardown(() => { for (const c of [...headers, ...bodies]) c.socket.destroy() })

  // While they trickle, normal callers are served.
  for (let i = 0; i < 20; i++) {
    const res = await fetch(url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('status')) })
    t.equal(res.status, 200)
    t.equal(((await res.json()) as any).result.status, 'ok')
  }
  const answers = await Promise.all([...headers, ...bodies].map(c => c.closed))
  t.ok(answers.every(a => a === '' || a.startsWith('HTTP/1.1 408')), 'the server closed every slow socket, at most with a 408')
  const after = await fetch(url + '/health')
  t.equal(after.status, 200, 'and still serves')
})

t.test('200 streams whose clients vanish free every subscription while their tasks run on and complete', async t => {
  const { app, url } = await listen(t, { config: { agent: { name: 'Slow', delay_ms: 300 } } })
  const before = await liveHeapMb()
  const ids: string[] = []
  await Promise.all(Array.from({ length: 200 }, async (_, i) => {
    const ac = new AbortController()
    const res = await fetch(url, {
      method: 'POST',
      signal: ac.signal,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(rpc('message/stream', { message: userMessage(`abandoned ${i}`) }))
    })
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    ids.push(JSON.parse(first.slice(6)).result.id)
    // The client goes away mid-task without reading the rest.
    ac.abort()
  }))
  await until(() => app.a2aStreams.size === 0)
  await until(() => app.a2aTasks.bus.listenerCount() === 0)
  await until(() => app.a2aTasks.running === 0)
  // What stays is the 200 stored tasks (a few KB each); a stream that leaked its buffers would hold far more.
  const grown = await liveHeapMb() - before
  t.ok(grown < 8, `the live heap grew by ${grown.toFixed(1)} MB (bound: 8 MB)`)
  for (const id of ids) {
    const task = await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/get', { id }) })
    t.equal(task.json().result.status.state, 'completed', `${id} completed without its client`)
  }
})
