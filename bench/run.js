// `npm run bench`: message/send and message/stream throughput of the built server, on 127.0.0.1 only.
// Each target runs in its own process; load comes from this process with a fixed number of requests in flight.
// Flags: --quick (short runs), --duration S (seconds per run), --connections N.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    connections: { type: 'string', default: '50' }
  }
})
const DURATION_S = Number(values.duration ?? (values.quick ? 3 : 10))
const CONNECTIONS = Number(values.connections)
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))

const sendBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', role: 'user', messageId: 'bench', parts: [{ kind: 'text', text: 'hello bench' }] } }
})
const streamBody = sendBody.replace('message/send', 'message/stream')

async function freePort () {
  const srv = createServer().listen(0, '127.0.0.1')
  await once(srv, 'listening')
  const { port } = srv.address()
  srv.close()
  await once(srv, 'close')
  return port
}

async function startServer () {
  const port = await freePort()
  const child = spawn(process.execPath, [CLI, 'serve', '--host', '127.0.0.1', '--port', String(port)], {
    env: { ...process.env, LOG_LEVEL: 'warn', A2A_CONFIG: '' },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(url + '/health').then(r => r.ok, () => false)
    if (ok) return { child, url }
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  child.kill()
  throw new Error('the server did not start')
}

function percentile (sorted, p) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

async function load (url, body, readAll) {
  const dispatcher = new Agent({ connections: CONNECTIONS, pipelining: 1 })
  const latencies = []
  let errors = 0
  const deadline = Date.now() + DURATION_S * 1000
  async function worker () {
    while (Date.now() < deadline) {
      const start = process.hrtime.bigint()
      try {
        const res = await request(url, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json' }, body })
        const text = await res.body.text()
        if (res.statusCode !== 200 || (readAll && !text.includes('"completed"'))) errors++
        else latencies.push(Number(process.hrtime.bigint() - start) / 1e6)
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: CONNECTIONS }, worker))
  await dispatcher.close()
  latencies.sort((a, b) => a - b)
  return {
    rps: Math.round(latencies.length / DURATION_S),
    p50: percentile(latencies, 0.5).toFixed(2),
    p99: percentile(latencies, 0.99).toFixed(2),
    errors
  }
}

async function rssOf (pid) {
  const { readFile } = await import('node:fs/promises')
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  const kb = /VmRSS:\s+(\d+)/.exec(status)
  return kb === null ? 'n/a' : `${Math.round(Number(kb[1]) / 1024)} MB`
}

const rows = []
const server = await startServer()
try {
  await load(server.url, sendBody, false) // warm-up
  rows.push({ target: 'fastify-a2a', method: 'message/send', ...await load(server.url, sendBody, false) })
  rows.push({ target: 'fastify-a2a', method: 'message/stream', ...await load(server.url, streamBody, true) })
  rows.push({ target: 'fastify-a2a', method: 'RSS after the runs', rps: await rssOf(server.child.pid) })
} finally {
  server.child.kill('SIGTERM')
  await once(server.child, 'exit')
}
console.log(`node ${process.version}, ${CONNECTIONS} connections, ${DURATION_S} s per run`)
console.table(rows)
