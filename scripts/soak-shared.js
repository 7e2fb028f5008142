// `npm run soak -- --redis` and `-- --postgres`: the scale-out soak on either shared store (see `scaleOutSoak`), then
// its slow-reader phase (scripts/soak-readers.js).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { startPostgres } from './postgres-server.js'
import { CLI, body, dispatcher, freePort, memoryOf, message, rpc, rssMb } from './soak-common.js'
import { grpcNonReaders } from './soak-grpc.js'
import { slowReaders } from './soak-readers.js'

/** The instances' V8 heap limit, MB (`--max-old-space-size`). */
const HEAP_MB = 160
/**
 * glibc's malloc setting the instances run with, as the Docker image sets it (docs/deploy.md, "Memory"): blocks of 128 KiB
 * and more are mapped and unmapped on their own. With glibc's default (a threshold that rises to the largest block
 * freed), the 4 MB answers' and Redis replies' blocks stayed in the allocator once freed: 90 to 150 MB outside the
 * heap beside the budgets' 48, where it is 38 to 53 MB with the setting (2026-11-27, this phase).
 */
const MMAP_THRESHOLD = process.env.MALLOC_MMAP_THRESHOLD_ ?? '131072'
/** How long a stream read to the end may take: its task ends in 50 ms, a lost end is found within two heartbeats (30 s). */
const STREAM_LIMIT_MS = 60_000
/**
 * The slow-reader phase's bound on RSS, MB: what the server may hold by its configuration. On Redis no task lives in
 * the process, so `tasks.max_bytes` plays no part: the old generation (capped, HEAP_MB), the young one (V8's two
 * semi-spaces, 16 MB each), the bytes of answers in flight outside the heap (`server.max_answer_bytes`, 32 MiB), the
 * bytes of requests in flight (`server.max_request_bytes`, 16 MiB), and 64 MB of Node's own (code, stacks, the
 * allocator's slack: measured 59 MB, a fresh standalone instance's RSS of 119 MB less its 60 MB heap).
 */
const SLOW_BOUND_MB = HEAP_MB + 32 + 32 + 16 + 64

/**
 * The store the instances share: its backend's name in the config, its `services` section, `restart` (the same
 * server again, what was written kept) and `stop`.
 */
async function sharedStore (backend, dir) {
  if (backend === 'postgres') {
    // A throwaway cluster: a restart is its fast shutdown (connections cut, what was committed kept), then a start.
    const cluster = await startPostgres()
    return {
      name: 'PostgreSQL',
      backend: 'postgres',
      services: ['services:', '  postgres:', `    url: "${cluster.url}"`],
      restart: () => cluster.restart(),
      stop: () => cluster.stop()
    }
  }
  const redis = await privateRedis(dir)
  return {
    name: 'Redis',
    backend: 'kvcache',
    services: ['services:', '  cache:', '    type: cache', `    url: ${redis.url}`],
    restart: () => redis.restart(),
    stop: async () => redis.stop()
  }
}

/** A private redis-server on a free port, with an append-only file, so that a restart keeps what was written. */
async function privateRedis (dir) {
  const port = await freePort()
  let child
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes',
      '--appendfsync', 'always', '--dir', dir], { stdio: 'ignore' })
    for (let i = 0; i < 100; i++) {
      const up = await new Promise(resolve => {
        const probe = spawn('redis-cli', ['-p', String(port), 'ping'], { stdio: ['ignore', 'pipe', 'ignore'] })
        let out = ''
        probe.stdout.on('data', d => { out += d })
        probe.on('exit', () => resolve(out.trim() === 'PONG'))
      })
      if (up) return
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    throw new Error('redis-server did not start')
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    /** SIGTERM (Redis writes its file and exits), then the same server again. */
    restart: async () => {
      const old = child
      old.kill('SIGTERM')
      await once(old, 'exit')
      await start()
    },
    stop: () => { if (child.exitCode === null) child.kill('SIGKILL') }
  }
}

/**
 * A receiver that answers 500 to the first attempt of each (task, state) delivery, so every delivery is retried, and
 * acknowledges the next; it records what it acknowledged, by task and state. (Failing every other request instead
 * would let a delivery lose all its attempts by chance, which is the receiver's doing, not a loss.)
 */
async function recordingReceiver () {
  let count = 0
  const seen = new Set()
  const acknowledged = new Map()
  const server = createServer((req, res) => {
    let raw = ''
    req.on('data', chunk => { raw += chunk })
    req.on('end', () => {
      count++
      let task
      try {
        task = JSON.parse(raw)
      } catch {
        res.statusCode = 400
        return res.end()
      }
      const key = `${task.id} ${task.status.state}`
      if (!seen.has(key)) {
        seen.add(key)
        res.statusCode = 500
        return res.end()
      }
      const states = acknowledged.get(task.id) ?? new Set()
      states.add(task.status.state)
      acknowledged.set(task.id, states)
      res.statusCode = 204
      res.end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, url: `http://127.0.0.1:${server.address().port}/hook`, count: () => count, acknowledged }
}

/**
 * One `serve` process of the scale-out run, its heap capped as an operator caps it to fit a container: V8 then
 * collects before it grows, so the RSS read is what the server holds, and a server that needed more would die here.
 */
function instance (config, port) {
  const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, CLI, 'serve', '--config', config, '--host', '127.0.0.1', '--port', String(port)], {
    env: { ...process.env, LOG_LEVEL: 'error', A2A_CONFIG: '', MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  return { child, url: `http://127.0.0.1:${port}/` }
}

/** Waits for the instance's /health, for up to a minute (a loaded machine starts node slowly). */
async function healthy (url) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    if (await fetch(`${url}health`).then(r => r.ok, () => false)) return
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error(`${url} did not come up`)
}

/**
 * The scale-out soak: two instances sharing a private Redis (`backend: 'redis'`) or PostgreSQL (`'postgres'`) take
 * sends (blocking and not), streams read to the end and abandoned, and cancels, every task with a push config to a
 * receiver that fails each delivery's first attempt. A third of the way in, instance A is killed with SIGKILL and
 * started again; two thirds in, the store is restarted. Then, once the tasks have had time to settle: every task must
 * be terminal, every task's final state (and `in_progress` for a completed one) must have been delivered at least
 * once, no instance may hold a stream, and no RSS sample may pass --max-rss.
 */
export async function scaleOutSoak ({ durationMs, maxRssMb, backend }) {
  const dir = mkdtempSync(join(tmpdir(), `a2a-soak-${backend}-`))
  const store = await sharedStore(backend, dir)
  const hook = await recordingReceiver()
  const grpcPorts = [await freePort(), await freePort()]
  // One config an instance: the same but for its gRPC port.
  const configs = grpcPorts.map((grpcPort, i) => {
    const config = join(dir, `agent-${i}.yml`)
    writeFileSync(config, [
      'agent:', '  name: Soak', '  delay_ms: 50',
      // write_timeout: the slow-reader phase's non-readers are let go within seconds.
      'server:', '  shutdown_timeout: 2', '  write_timeout: 5', '  max_request_size: 8388608',
      'metrics:', '  enabled: true',
      'tasks:', `  backend: ${store.backend}`, '  lease_ttl: 2',
      'push_notifications:', `  backend: ${store.backend}`, '  config:', '    allowed_networks: [127.0.0.0/8]', '    retry_delay: 0.2', '    max_retries: 6',
      ...store.services,
      'protocol:', '  grpc:', '    enabled: true', `    port: ${grpcPort}`
    ].join('\n') + '\n')
    return config
  })
  const ports = [await freePort(), await freePort()]
  const servers = ports.map((port, i) => instance(configs[i], port))
  const stopAll = () => { for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL') }
  process.on('exit', stopAll)
  // Stopped by a signal (Ctrl-C, a CI timeout): the instances go with the run, by the exit handler above, and the
  // store before it.
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => { store.stop().finally(() => process.exit(130)) })
  const ids = new Set()
  const peaks = [0, 0]
  const faults = []
  try {
    await Promise.all(servers.map(s => healthy(s.url)))
    const start = Date.now()
    const deadline = start + durationMs
    const sampler = setInterval(() => {
      servers.forEach((s, i) => { if (s.child.exitCode === null) peaks[i] = Math.max(peaks[i], rssMb(s.child.pid)) })
    }, 1000)
    const push = { pushNotificationConfig: { url: hook.url } }
    const counts = { send: 0, async: 0, stream: 0, abandoned: 0, cancel: 0, refused: 0, stuck: 0 }
    const kinds = [
      async url => { const r = await rpc(url, 'message/send', { message: message('soak'), configuration: push }); ids.add(r.result.id); counts.send++ },
      async url => { const r = await rpc(url, 'message/send', { message: message('async'), configuration: { ...push, blocking: false } }); ids.add(r.result.id); counts.async++ },
      async url => {
        // A stream that does not end within a minute (its task's end never reaching it) is counted, not waited for.
        const signal = AbortSignal.timeout(STREAM_LIMIT_MS)
        const res = await request(url, { method: 'POST', dispatcher, signal, headers: { 'content-type': 'application/json' }, body: body('message/stream', { message: message('stream'), configuration: push }) })
        const text = await res.body.text().catch(err => {
          if (!signal.aborted) throw err
          counts.stuck++
          return ''
        })
        const first = /"result":\{[^]*?"id":"([^"]+)"/.exec(text)
        if (first !== null) ids.add(first[1])
        counts.stream++
      },
      async url => {
        const ac = new AbortController()
        const res = await request(url, { method: 'POST', dispatcher, signal: ac.signal, headers: { 'content-type': 'application/json' }, body: body('message/stream', { message: message('abandoned'), configuration: push }) })
        const [chunk] = await once(res.body, 'data')
        const first = /"id":"([0-9a-f-]{36})"/.exec(String(chunk))
        if (first !== null) ids.add(first[1])
        ac.abort()
        counts.abandoned++
      },
      async url => {
        const r = await rpc(url, 'message/send', { message: message('cancel me'), configuration: { ...push, blocking: false } })
        ids.add(r.result.id)
        await rpc(url, 'tasks/cancel', { id: r.result.id })
        counts.cancel++
      }
    ]
    const workers = Array.from({ length: 16 }, async (_, w) => {
      for (let i = w; Date.now() < deadline; i++) {
        const server = servers[i % 2]
        try {
          await kinds[i % kinds.length](server.url)
        } catch {
          // Refused while an instance or the store is down (connection refused, 503): the client would retry.
          counts.refused++
          await new Promise(resolve => setTimeout(resolve, 100))
        }
      }
    })
    const chaos = (async () => {
      await new Promise(resolve => setTimeout(resolve, durationMs / 3))
      servers[0].child.kill('SIGKILL')
      faults.push(`instance A killed at ${((Date.now() - start) / 1000).toFixed(1)} s`)
      await once(servers[0].child, 'exit')
      await new Promise(resolve => setTimeout(resolve, 1000))
      servers[0] = instance(configs[0], ports[0])
      await healthy(servers[0].url)
      faults.push(`instance A back at ${((Date.now() - start) / 1000).toFixed(1)} s`)
      await new Promise(resolve => setTimeout(resolve, Math.max(0, start + (2 * durationMs) / 3 - Date.now())))
      await store.restart()
      faults.push(`${store.name} restarted at ${((Date.now() - start) / 1000).toFixed(1)} s`)
    })()
    await Promise.all([...workers, chaos])
    clearInterval(sampler)

    // Leases lapse (2 s), reapers and relays run, retries finish: give the system time to settle, then check.
    const get = async id => (await rpc(servers[1].url, 'tasks/get', { id })).result
    const terminal = new Set(['completed', 'canceled', 'failed', 'rejected'])
    let pending = [...ids]
    const settleBy = Date.now() + 90_000
    while (Date.now() < settleBy) {
      const tasks = await Promise.all(pending.map(get))
      pending = tasks.filter(task => task === undefined || !terminal.has(task.status.state) ||
        !hook.acknowledged.get(task.id)?.has(task.status.state) ||
        (task.status.state === 'completed' && !hook.acknowledged.get(task.id)?.has('in_progress'))).map(task => task?.id).filter(Boolean)
      if (pending.length === 0) break
      await new Promise(resolve => setTimeout(resolve, 1000))
    }

    // Slow readers: large answers and streams nobody reads, over every binding, beside clients that read.
    const slowPeaks = [0, 0]
    const slowSampler = setInterval(() => {
      servers.forEach((s, i) => { if (s.child.exitCode === null) slowPeaks[i] = Math.max(slowPeaks[i], rssMb(s.child.pid)) })
    }, 250)
    // What the memory is made of, at each instance's highest reading of its own metrics.
    const breakdowns = [undefined, undefined]
    const sampling = { on: true }
    const breakdownSampler = (async () => {
      while (sampling.on) {
        const readings = await Promise.all(servers.map(s => memoryOf(s.url)))
        readings.forEach((m, i) => { if (m !== undefined && !(m.rss <= breakdowns[i]?.rss)) breakdowns[i] = m })
        await new Promise(resolve => setTimeout(resolve, 500))
      }
    })()
    const slow = await slowReaders({
      urls: servers.map(s => s.url),
      dispatcher,
      perKind: 5,
      holdMs: 20_000,
      extra: (tasks, holdMs) => grpcNonReaders(tasks.map(({ id }, i) => ({ id, grpc: `http://127.0.0.1:${grpcPorts[i]}` })), holdMs)
    })
    clearInterval(slowSampler)
    sampling.on = false
    await breakdownSampler
    // Every stream the phase opened is let go (cut off, or ended and flushed).
    await new Promise(resolve => setTimeout(resolve, 3000))

    const streams = await Promise.all(servers.map(async s => {
      const text = await fetch(`${s.url}metrics`).then(r => r.text())
      return Number(/^a2a_open_streams (\d+)/m.exec(text)?.[1] ?? NaN)
    }))
    console.log('\nfaults:', faults.join('; '))
    console.log('traffic:', JSON.stringify(counts), `tasks: ${ids.size}, webhook requests received: ${hook.count()}`)
    console.log(`peak RSS: A ${peaks[0].toFixed(0)} MB, B ${peaks[1].toFixed(0)} MB; open streams after: ${streams.join(', ')}`)
    console.log(`slow readers: ${JSON.stringify(slow)}; peak RSS meanwhile: A ${slowPeaks[0].toFixed(0)} MB, B ${slowPeaks[1].toFixed(0)} MB (bound ${SLOW_BOUND_MB} MB, MALLOC_MMAP_THRESHOLD_=${MMAP_THRESHOLD})`)
    const mb = n => n.toFixed(0)
    breakdowns.forEach((m, i) => {
      if (m !== undefined) console.log(`  ${'AB'[i]} at its highest /metrics reading: RSS ${mb(m.rss)} MB = heap ${mb(m.heapTotal)} (used ${mb(m.heapUsed)}) + external ${mb(m.external)} (answers in flight ${mb(m.answers)}, requests ${mb(m.requests)}) + the rest ${mb(m.rss - m.heapTotal - m.external)}`)
    })
    console.log(`tasks not terminal or missing a delivery after the settling time: ${pending.length}`)
    for (const id of pending.slice(0, 10)) {
      const task = await get(id)
      console.log(`  ${id}: ${task?.status.state ?? 'gone'}, delivered: ${[...(hook.acknowledged.get(id) ?? [])].join(' ') || 'nothing'}`)
    }
    const slowOk = slow.held === 0 && slow.grpcHeld === 0 && slow.read > 0 && slow.readFailures === 0 && Math.max(...slowPeaks) <= SLOW_BOUND_MB
    const ok = pending.length === 0 && counts.stuck === 0 && streams.every(n => n === 0) && Math.max(...peaks) <= maxRssMb && slowOk
    console.log(ok ? 'PASS: every task terminal, every final state delivered, no stream held, RSS bounded, slow readers let go' : 'FAIL')
    for (const s of servers) s.child.kill('SIGTERM')
    const codes = await Promise.all(servers.map(async s => s.child.exitCode ?? (await once(s.child, 'exit'))[0]))
    console.log(`instances exited with ${codes.join(', ')} after SIGTERM`)
    process.exitCode = ok && codes.every(c => c === 0) ? 0 : 1
  } finally {
    stopAll()
    await store.stop()
    hook.server.close()
    await dispatcher.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
