// `npm run bench`: fastify-a2a against bare Fastify (the ceiling of our stack) and @a2a-js/sdk (the peer), in one
// run on this machine, one server at a time, each in its own process on 127.0.0.1. Loads: message/send (autocannon),
// message/stream (undici, every stream read to the end), their A2A v1.0 twins SendMessage and SendStreamingMessage
// (our server, over JSON-RPC, HTTP+JSON and gRPC), push end to end (against a local receiver, next to a bare
// got client), and message/send and message/stream with tasks and push configs in Redis (a throwaway redis-server:
// its command counts per request and its CPU). What tracing costs: message/send with no SDK against a build without
// it (bench/untraced.js, measured in one process by bench/tracing-cost.js), and with OpenTelemetry's SDK registered
// (bench/otel-noop.js). Writes the tables into BENCHMARKS.md (see bench/report.js).
// Everything stops by itself.
// Flags: --quick (a ~20 s smoke run, writes no file unless --out), --seconds S, --runs N, --warmup S,
// --connections N, --tasks N (the memory phase), --idle S (the wait before RSS is read again), --only ids
// (bare,floor,bare-grpc,bare-h2,peer,peer-v1,ours,ours-key,ours-redis,ours-redis-2,ours-postgres,peer-v1-postgres,chunks),
// --node-options='FLAGS' (node and V8 flags for our server only: heap sizes), --redis URL (a Redis for ours-redis
// instead of a throwaway redis-server), --postgres URL (a PostgreSQL server for the postgres targets, each of which
// makes and drops a database of its own, instead of a throwaway cluster), --out FILE, --json FILE.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { freePort, rssMb, start, watch } from './proc.js'
import { gotLoad, grpcLoad, pushLoad, receiver, rpcBody, sendLoad, streamLoad } from './load.js'
import { dropDatabase, freshDatabase, postgresCost, postgresServer } from './postgres.js'
import { commandStats, monitorCommands, netInputBytes, startRedis, statsDelta } from './redis.js'
import { markdown, writeReport } from './report.js'
import { benchTargets } from './targets.js'
import { buildUntraced, tracingCost } from './untraced.js'

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    runs: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string', default: '50' },
    tasks: { type: 'string' },
    idle: { type: 'string' },
    only: { type: 'string', default: 'bare,floor,bare-grpc,bare-h2,peer,peer-v1,ours,ours-key,ours-redis,ours-redis-2,ours-postgres,peer-v1-postgres,chunks' },
    redis: { type: 'string' },
    postgres: { type: 'string' },
    'node-options': { type: 'string', default: '' },
    out: { type: 'string' },
    json: { type: 'string' }
  }
})
const quick = values.quick
const settings = {
  seconds: Number(values.seconds ?? (quick ? 1 : 10)),
  runs: Number(values.runs ?? (quick ? 1 : 3)),
  warmup: Number(values.warmup ?? (quick ? 0.5 : 3)),
  connections: Number(values.connections),
  tasks: Number(values.tasks ?? (quick ? 2_000 : 100_000)),
  idle: Number(values.idle ?? (quick ? 1 : 30)),
  /** message/send requests over which Redis commands and Redis CPU are counted. */
  redisSends: quick ? 200 : 5_000,
  /** The `chunks` case: 1 KB artifact chunks per answer, and answers timed on each store (the median shown). */
  chunks: quick ? 500 : 4_000,
  chunkAnswers: quick ? 1 : 5
}
const out = values.out ?? (quick ? undefined : fileURLToPath(new URL('../BENCHMARKS.md', import.meta.url)))

/** The run's PostgreSQL server (`{ url, pid, stop }`), once a target needs it. */
let postgres
/** The run's build without tracing (`{ index, controlIndex, remove }`, bench/untraced.js), once a target needs it. */
let untraced

const T0 = Date.now()
const log = what => process.stderr.write(`bench ${((Date.now() - T0) / 1000).toFixed(1)} s: ${what}\n`)

const dir = mkdtempSync(join(os.tmpdir(), 'a2a-bench-'))
// Flags for our server's node process only: what an operator would put in NODE_OPTIONS to trade throughput for memory.
const nodeFlags = values['node-options'].split(/\s+/).filter(flag => flag !== '')
const { TARGETS, chunkServer } = benchTargets({ dir, nodeFlags })

/**
 * Ready when message/send (or `method`, SendMessage) answers a completed task: the check that every server does the
 * same work.
 */
const readyWith = (headers, method = 'message/send') => async url => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: rpcBody(method) })
  const result = (await res.json()).result
  return res.ok && ['completed', 'TASK_STATE_COMPLETED'].includes((result?.task ?? result)?.status?.state)
}

/**
 * A warm-up, then `runs` measured runs; the median run by throughput, with the CPU and peak RSS of process `pid`
 * (null: `fn` measures its own process). `warm`: false skips the warm-up.
 */
async function measure (pid, fn, warm = true) {
  return (await measureTogether(pid, [fn], warm))[0]
}

/**
 * `measure` for loads that are compared with each other (a method in each protocol version and binding): each is
 * warmed up, then their runs take turns (run 1 of each, then run 2 of each, ...), so what drifts over a run (the
 * heap, the store filling, a neighbour on the host) weighs on all of them alike.
 */
async function measureTogether (pid, fns, warm = true, pids = fns.map(() => pid)) {
  if (warm) for (const fn of fns) await fn(settings.warmup)
  const results = fns.map(() => [])
  for (let i = 0; i < settings.runs; i++) {
    for (let j = 0; j < fns.length; j++) {
      const w = pids[j] === null ? null : watch(pids[j])
      const result = await fns[j](settings.seconds)
      results[j].push({ ...w?.stop(), ...result })
    }
  }
  return results.map(runs => runs.sort((a, b) => a.rps - b.rps)[Math.floor((runs.length - 1) / 2)])
}

/**
 * The RSS, MB, of a fresh server on the built-in defaults (`fastify-a2a serve` with no config file: no gRPC binding,
 * no YAML) after its first request, the `message/send` that tells it is ready: the median of three starts. The
 * `ours` target itself reads a config file and serves gRPC beside HTTP, which its loads need.
 */
async function freshDefaults () {
  const rss = []
  for (let i = 0; i < 3; i++) {
    const port = await freePort()
    const server = await start([...nodeFlags, fileURLToPath(new URL('../dist/cli.js', import.meta.url)), 'serve', '--host', '127.0.0.1', '--port', String(port)],
      port, readyWith(), { LOG_LEVEL: 'warn', A2A_CONFIG: '' })
    try {
      rss.push(Math.round(rssMb(server.child.pid)))
    } finally {
      await server.stop()
    }
  }
  return { rss: rss.sort((a, b) => a - b)[1], starts: rss }
}

/** A pause before RSS is read after a load, so what the load left in flight settles (shorter in tiny runs). */
const settle = () => new Promise(resolve => setTimeout(resolve, Math.min(1000, settings.seconds * 500)))

async function runTarget (id, hook) {
  const target = TARGETS[id]
  const redis = target.redis !== true ? undefined : values.redis !== undefined ? { url: values.redis, stop: async () => {} } : await startRedis()
  const servers = []
  const grpcPort = target.grpc === true ? await freePort() : undefined
  // A database of the target's own, on the run's PostgreSQL server.
  const database = `bench_${id.replaceAll('-', '_')}`
  let postgresUrl
  try {
    if (target.postgres === true) {
      postgresUrl = await freshDatabase(postgres.url, database)
      if (target.migrate !== undefined) {
        const [name, args] = target.migrate(postgresUrl)
        const migrated = spawnSync(process.execPath, args, { encoding: 'utf8' })
        if (migrated.status !== 0) throw new Error(`${name} failed: ${migrated.stderr.trim()}`)
      }
    }
    for (let i = 0; i < (target.instances ?? 1); i++) {
      const port = await freePort()
      servers.push(await start(target.args(port, redis?.url, grpcPort, postgresUrl), port, readyWith(target.headers, target.ready), { LOG_LEVEL: 'warn', A2A_CONFIG: '' }))
    }
  } catch (err) {
    for (const one of servers) await one.stop()
    await redis?.stop()
    throw err
  }
  // The twins, by load, when the target compares with them.
  const twins = {}
  try {
    for (const [load, twin] of Object.entries(target.twins ?? {})) {
      const port = await freePort()
      const env = { LOG_LEVEL: 'warn', A2A_CONFIG: '' }
      if (twin.spans !== undefined) {
        rmSync(twin.spans, { force: true })
        env.A2A_BENCH_SPANS = twin.spans
      }
      twins[load] = await start(twin.args(port, redis?.url, grpcPort === undefined ? undefined : await freePort()), port, readyWith(target.headers), env)
    }
  } catch (err) {
    for (const one of [...servers, ...Object.values(twins)]) await one.stop()
    await redis?.stop()
    throw err
  }
  // One server, or several behind the load's own round-robin: their pids and URLs as lists.
  const server = servers.length === 1 ? servers[0] : { url: servers.map(one => one.url), stop: async () => { for (const one of servers) await one.stop() } }
  const pid = servers.length === 1 ? servers[0].child.pid : servers.map(one => one.child.pid)
  const opts = { headers: target.headers ?? {}, connections: settings.connections }
  const row = { label: target.label, instances: servers.length, rssStart: Math.round(rssMb(pid)) }
  try {
    const loads = {
      send: seconds => sendLoad(server.url, { ...opts, seconds }),
      'send-v1': seconds => sendLoad(server.url, { ...opts, seconds, method: 'SendMessage' }),
      'send-rest': seconds => sendLoad(server.url, { ...opts, seconds, rest: true }),
      stream: seconds => streamLoad(server.url, { ...opts, seconds }),
      'stream-v1': seconds => streamLoad(server.url, { ...opts, seconds, method: 'SendStreamingMessage' }),
      'stream-rest': seconds => streamLoad(server.url, { ...opts, seconds, method: 'SendStreamingMessage', rest: true }),
      'stream-no-replay': seconds => streamLoad(twins['stream-no-replay'].url, { ...opts, seconds }),
      'send-otel': seconds => sendLoad(twins['send-otel'].url, { ...opts, seconds }),
      'send-no-dedupe': seconds => sendLoad(twins['send-no-dedupe'].url, { ...opts, seconds }),
      'send-grpc': seconds => grpcLoad(`127.0.0.1:${grpcPort}`, { ...opts, seconds }),
      'stream-grpc': seconds => grpcLoad(`127.0.0.1:${grpcPort}`, { ...opts, seconds, stream: true }),
      push: seconds => pushLoad(server.url, hook, { ...opts, seconds })
    }
    for (const entry of target.loads) {
      const group = Array.isArray(entry) ? entry : [entry]
      log(`${id} ${group.join(', ')}`)
      const measured = await measureTogether(pid, group.map(load => loads[load]), true, group.map(load => twins[load]?.child.pid ?? pid))
      group.forEach((load, i) => { row[load] = measured[i] })
    }
    if (redis !== undefined) {
      log(`${id} Redis commands over ${settings.redisSends} sends`)
      row.redis = await redisCost(server.url, redis, opts)
    }
    if (postgresUrl !== undefined) {
      log(`${id} PostgreSQL transactions and CPU over ${settings.redisSends} sends`)
      const method = target.ready ?? 'message/send'
      row.postgres = await postgresCost(postgresUrl, postgres.pid, settings.redisSends, amount => sendLoad(server.url, { ...opts, amount, method }))
    }
    await settle()
    row.rssAfter = Math.round(rssMb(pid))
    // The same server left idle: what it keeps once the garbage collector has given back what it grew under load.
    await new Promise(resolve => setTimeout(resolve, settings.idle * 1000))
    row.rssIdle = Math.round(rssMb(pid))
    let memory
    if (target.memory === true && settings.tasks > 0) {
      log(`${id} ${settings.tasks} tasks`)
      const t0 = Date.now()
      const sent = await sendLoad(server.url, { ...opts, amount: settings.tasks })
      const rps = Math.round(settings.tasks / ((Date.now() - t0) / 1000))
      await settle()
      memory = { tasks: settings.tasks, rps, errors: sent.errors, rss: Math.round(rssMb(pid)) }
    }
    // The SDK's twin made its spans (counted when it exits), else its figures say nothing of what tracing costs.
    for (const [load, twin] of Object.entries(target.twins ?? {})) {
      if (twin.spans === undefined) continue
      await twins[load].stop()
      const spans = existsSync(twin.spans) ? Number(readFileSync(twin.spans, 'utf8')) : 0
      if (!(spans > 0)) throw new Error(`${id} ${load}: the server with the SDK registered ended no span (bench/otel-noop.js)`)
      row.spans = { ...row.spans, [load]: spans }
    }
    return { row, memory }
  } finally {
    await server.stop()
    for (const twin of Object.values(twins)) await twin.stop()
    await redis?.stop()
    if (postgresUrl !== undefined) await dropDatabase(postgres.url, database)
  }
}

/**
 * What message/send costs Redis: the commands per request (from INFO commandstats, everything the server sent while
 * the sends ran, its timers included, the scripts' own calls too), the round trips per request (from MONITOR: what
 * came over a connection) and, for a throwaway redis-server, its CPU per 1,000 sends.
 */
async function redisCost (url, redis, opts) {
  const sends = settings.redisSends
  const before = await commandStats(redis.url)
  const w = redis.pid === undefined ? null : watch(redis.pid)
  const t0 = Date.now()
  const sent = await sendLoad(url, { ...opts, amount: sends })
  const seconds = (Date.now() - t0) / 1000
  const cpu = w?.stop()
  const delta = statsDelta(before, await commandStats(redis.url))
  const total = Object.values(delta).reduce((a, b) => a + b, 0)
  // Round trips apart from the scripts' own calls, over a smaller window of its own: MONITOR slows Redis down.
  const watched = Math.min(sends, 200)
  const monitor = await monitorCommands(redis.url)
  const seen = await sendLoad(url, { ...opts, amount: watched })
  const trips = await monitor.stop()
  const perSend = Object.fromEntries(Object.entries(delta).sort((a, b) => b[1] - a[1]).map(([name, n]) => [name, Math.round(n / sends * 100) / 100]))
  return {
    sends,
    errors: sent.errors,
    commandsPerSend: Math.round(total / sends * 100) / 100,
    perSend,
    roundTripsPerSend: Math.round(trips.roundTrips / watched * 100) / 100,
    roundTrips: Object.fromEntries(Object.entries(trips.byCommand).sort((a, b) => b[1] - a[1]).map(([name, n]) => [name, Math.round(n / watched * 100) / 100])),
    watched: { sends: watched, errors: seen.errors },
    // CPU % of one core over the window → CPU ms per 1,000 sends.
    redisCpuMsPer1000: cpu === null ? null : Math.round(cpu.cpu / 100 * seconds * 1e6 / sends * 10) / 10
  }
}

/**
 * The `chunks` case (issue 39 row 7): one message/send answered with `settings.chunks` artifact chunks of 1 KB
 * (bench/chunky-agent.js), timed from the request to the answer, on the memory store and on Redis (a throwaway
 * redis-server unless --redis), one server at a time: the median of `chunkAnswers` answers after one warm-up, and
 * for Redis the bytes it received per answer (INFO stats `total_net_input_bytes`).
 */
async function chunksCase () {
  const out = { chunks: settings.chunks, chunkBytes: 1024, answers: settings.chunkAnswers }
  const env = { LOG_LEVEL: 'warn', A2A_CONFIG: '', A2A_BENCH_CHUNKS: String(settings.chunks) }
  const body = rpcBody('message/send')
  const answer = async url => {
    const t0 = process.hrtime.bigint()
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const state = (await res.json()).result?.status?.state
    if (state !== 'completed') throw new Error(`chunks: the answer ended ${state}`)
    return Number(process.hrtime.bigint() - t0) / 1e6
  }
  for (const store of ['memory', 'redis']) {
    log(`chunks ${store}: ${settings.chunkAnswers} answers of ${settings.chunks} chunks`)
    const redis = store === 'memory' ? undefined : values.redis !== undefined ? { url: values.redis, stop: async () => {} } : await startRedis()
    const port = await freePort()
    let server
    try {
      server = await start(chunkServer(port, redis?.url), port, readyWith({}), env)
      const inBefore = redis === undefined ? 0 : await netInputBytes(redis.url)
      await answer(server.url)
      const ms = []
      for (let i = 0; i < settings.chunkAnswers; i++) ms.push(await answer(server.url))
      ms.sort((a, b) => a - b)
      out[store] = { ms: Math.round(ms[Math.floor((ms.length - 1) / 2)]) }
      if (redis !== undefined) {
        // The warm-up's answer and the timed ones (the ready check's came before): each sends Redis the same.
        out[store].bytesPerAnswer = Math.round((await netInputBytes(redis.url) - inBefore) / (settings.chunkAnswers + 1))
      }
    } finally {
      await server?.stop()
      await redis?.stop()
    }
  }
  return out
}

async function main () {
  const started = Date.now()
  const hook = await receiver()
  const results = {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    node: process.version,
    machine: { cpu: os.cpus()[0]?.model.trim() ?? 'unknown CPU', cores: os.cpus().length, memoryGb: Math.round(os.totalmem() / 2 ** 30), os: `${os.type()} ${os.release()}` },
    command: `npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}`,
    settings,
    targets: {}
  }
  const ids = values.only.split(',')
  try {
    // The PostgreSQL server of the targets that need one: a throwaway cluster unless --postgres names one.
    if (ids.some(id => TARGETS[id]?.postgres === true)) {
      log('PostgreSQL')
      postgres = await postgresServer(values.postgres)
    }
    if (ids.some(id => TARGETS[id]?.untraced === true)) {
      log('a build without tracing')
      untraced = await buildUntraced()
    }
    for (const id of ids) {
      if (id === 'chunks') {
        results.chunks = await chunksCase()
        continue
      }
      if (TARGETS[id] === undefined) throw new Error(`unknown target ${id}; known: ${Object.keys(TARGETS).join(', ')}, chunks`)
      const { row, memory } = await runTarget(id, hook)
      results.targets[id] = row
      if (memory !== undefined) results.memory = memory
      if (id === 'ours') {
        log('a fresh server on the defaults')
        results.fresh = await freshDefaults()
        log('tracing cost, in one process')
        results.tracing = tracingCost(untraced, quick ? { rounds: 3, batch: 300 } : { rounds: 15, batch: 2000 })
        log('got baseline')
        // No warm-up: each run is a fresh client process, which warms itself before it counts.
        results.got = await measure(null, seconds => gotLoad(hook, { connections: settings.connections, seconds }, watch), false)
      }
    }
  } finally {
    await hook.close()
    await postgres?.stop()
    untraced?.remove()
    rmSync(dir, { recursive: true, force: true })
  }
  results.seconds = Math.round((Date.now() - started) / 1000)
  const md = markdown(results)
  process.stdout.write(md)
  process.stdout.write(`\n(${results.seconds} s)\n`)
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(results, null, 2) + '\n')
  if (out !== undefined) writeReport(out, md)
}

main().catch(err => {
  console.error(err)
  process.exitCode = 1
})
