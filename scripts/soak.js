// `npm run soak`: a longer run of mixed and hostile traffic against the built server, watching its memory.
// Everything talks to 127.0.0.1 only and stops by itself. Flags: --duration S (default 60), --tasks N (the bounded-store
// phase, default 100000), --max-rss MB (the bound the run must stay within, default 256).
// --redis, --postgres: the scale-out run instead (see `scaleOutSoak`): two instances on a private redis-server or
// PostgreSQL cluster, one killed with SIGKILL and the store restarted in the middle, then the invariants checked.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { request } from 'undici'
import { CLI, body, dispatcher, freePort, message, rpc, rssMb } from './soak-common.js'
import { scaleOutSoak } from './soak-shared.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    tasks: { type: 'string', default: '100000' },
    'max-rss': { type: 'string', default: '256' },
    redis: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false }
  }
})
const DURATION_MS = Number(values.duration) * 1000
const TASKS = Number(values.tasks)
const MAX_RSS_MB = Number(values['max-rss'])

/** A webhook receiver that fails half the deliveries, so retries run all the time. */
async function receiver () {
  let count = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      count++
      res.statusCode = count % 2 === 0 ? 500 : 204
      res.end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, url: `http://127.0.0.1:${server.address().port}/hook`, count: () => count }
}

/** The traffic mix: each worker loops until the deadline. Returns counts by kind. */
async function traffic (url, hookUrl, deadline) {
  const counts = { send: 0, stream: 0, abandoned: 0, stalled: 0, cancel: 0, bad: 0, push: 0 }
  const kinds = [
    async () => { await rpc(url, 'message/send', { message: message('soak') }); counts.send++ },
    async () => {
      await rpc(url, 'message/send', { message: message('with push'), configuration: { pushNotificationConfig: { url: hookUrl } } })
      counts.push++
    },
    async () => {
      const res = await request(url, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: body('message/stream', { message: message('stream') }) })
      await res.body.text()
      counts.stream++
    },
    async () => {
      // A client that goes away after the first event.
      const ac = new AbortController()
      const res = await request(url, { method: 'POST', dispatcher, signal: ac.signal, headers: { 'content-type': 'application/json' }, body: body('message/stream', { message: message('long one') }) })
      await once(res.body, 'data')
      ac.abort()
      counts.abandoned++
    },
    async () => {
      // A long task, canceled.
      const sent = await rpc(url, 'message/send', { message: message('cancel me'), configuration: { blocking: false } })
      await rpc(url, 'tasks/cancel', { id: sent.result.id })
      counts.cancel++
    },
    async () => {
      // Garbage: bad JSON, bad params, unknown methods.
      await request(url, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0",' }).then(r => r.body.text())
      await rpc(url, 'tasks/get', { id: 42 })
      await rpc(url, 'no/such/method', {})
      counts.bad++
    }
  ]
  const workers = Array.from({ length: 24 }, async (_, w) => {
    for (let i = w; Date.now() < deadline; i++) await kinds[i % kinds.length]()
  })
  await Promise.all(workers)
  return counts
}

async function main () {
  const dir = mkdtempSync(join(tmpdir(), 'a2a-soak-'))
  const hook = await receiver()
  const port = await freePort()
  const url = `http://127.0.0.1:${port}/`
  const config = join(dir, 'agent.yml')
  writeFileSync(config, [
    'agent:', '  name: Soak', '  delay_ms: 50',
    'push_notifications:', '  config:', '    allowed_networks: [127.0.0.0/8]', '    retry_delay: 0.2', '    max_retries: 2'
  ].join('\n') + '\n')
  const child = spawn(process.execPath, [CLI, 'serve', '--config', config, '--host', '127.0.0.1', '--port', String(port)], {
    env: { ...process.env, LOG_LEVEL: 'error', A2A_CONFIG: '' },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  const stop = () => { if (child.exitCode === null) child.kill('SIGKILL') }
  process.on('exit', stop)
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130))
  try {
    for (let i = 0; i < 200 && !(await fetch(`${url}health`).then(r => r.ok, () => false)); i++) await new Promise(resolve => setTimeout(resolve, 50))
    const samples = [{ at: 0, rss: rssMb(child.pid) }]
    const start = Date.now()
    const sampler = setInterval(() => samples.push({ at: Math.round((Date.now() - start) / 1000), rss: rssMb(child.pid) }), 2000)
    const counts = await traffic(url, hook.url, start + DURATION_MS)
    clearInterval(sampler)
    await new Promise(resolve => setTimeout(resolve, 2000))
    const afterMix = rssMb(child.pid)

    // The bounded store: far more tasks than tasks.max_tasks (10,000) go through it.
    const tasksStart = Date.now()
    let done = 0
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (done < TASKS) {
        done++
        await rpc(url, 'message/send', { message: message('bounded') })
      }
    }))
    const afterTasks = rssMb(child.pid)
    const health = await fetch(`${url}health`).then(r => r.status)

    const peak = Math.max(...samples.map(s => s.rss), afterMix, afterTasks)
    console.log('\nRSS samples (s: MB):', samples.map(s => `${s.at}: ${s.rss.toFixed(0)}`).join(', '))
    console.log('traffic:', JSON.stringify(counts), `webhook deliveries received: ${hook.count()}`)
    console.log(`RSS after the mix: ${afterMix.toFixed(0)} MB; after ${done} more tasks (${((Date.now() - tasksStart) / 1000).toFixed(0)} s): ${afterTasks.toFixed(0)} MB; peak ${peak.toFixed(0)} MB`)
    console.log(`/health after the run: ${health}`)
    const ok = peak <= MAX_RSS_MB && health === 200
    console.log(ok ? `PASS: RSS stayed within ${MAX_RSS_MB} MB and the server still serves` : `FAIL: peak ${peak.toFixed(0)} MB (bound ${MAX_RSS_MB}), /health ${health}`)
    child.kill('SIGTERM')
    const [code] = await once(child, 'exit')
    console.log(`server exited with ${code} after SIGTERM`)
    process.exitCode = ok && code === 0 ? 0 : 1
  } finally {
    stop()
    hook.server.close()
    await dispatcher.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const shared = values.postgres ? 'postgres' : values.redis ? 'redis' : undefined
;(shared !== undefined ? scaleOutSoak({ durationMs: DURATION_MS, maxRssMb: MAX_RSS_MB, backend: shared }) : main()).catch(err => {
  console.error(err)
  process.exitCode = 1
})
