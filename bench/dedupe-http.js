// What idempotent sends cost message/send over HTTP (docs/protocol.md, "Idempotent sends"): two servers of the build
// (dist/), one with `tasks.dedupe_window` at its default and one with 0, in memory or (`--store redis`) with tasks in
// one throwaway redis-server (a database each). They take turns: each round sends `--amount` message/send requests
// (autocannon, 50 connections, a messageId of its own per request) to one then the other, the order swapped every
// round, and reads each server's CPU time from /proc. Short rounds taking turns cancel the drift of the machine's other
// load, which moves runs of 10 s by ±30 % on a 2-core machine; the result is the median of the rounds' ratios.
// On Redis, where the scheduler puts the processes decides what a round trip costs a server (BENCHMARKS.md,
// "Idempotent sends"): `--pin same` puts both servers and Redis on CPU 0 and this process (the load) on CPU 1;
// `--pin other` puts Redis on CPU 1 with the load; without it, nothing is pinned.
//   node bench/dedupe-http.js [--store memory|redis] [--rounds N] [--amount N] [--pin same|other]
// prints `{ store, pin, rounds, amount, on, off, ratio, ratios }` (CPU µs per send per round; ratio: median) as JSON.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { sendLoad } from './load.js'
import { cpuSeconds, freePort, start } from './proc.js'
import { startRedis } from './redis.js'

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'memory' },
    rounds: { type: 'string', default: '12' },
    amount: { type: 'string', default: '20000' },
    pin: { type: 'string' }
  }
})
const redisMode = values.store === 'redis'
const rounds = Number(values.rounds)
const amount = Number(values.amount)
const cpus = { same: { servers: '0', redis: '0', load: '1' }, other: { servers: '0', redis: '1', load: '1' } }[values.pin]
if (values.pin !== undefined && cpus === undefined) throw new Error('--pin is same or other')
const pin = (pid, cpu) => {
  const done = spawnSync('taskset', ['-apc', cpu, String(pid)], { stdio: 'ignore' })
  if (done.status !== 0) throw new Error('taskset failed: --pin needs util-linux taskset and at least 2 CPUs')
}

const dir = mkdtempSync(join(os.tmpdir(), 'a2a-dedupe-http-'))
const redis = redisMode ? await startRedis() : undefined
const servers = []
try {
  if (cpus !== undefined) pin(process.pid, cpus.load)
  if (redis !== undefined && cpus !== undefined) pin(redis.pid, cpus.redis)
  for (const [window, db] of [[600, 1], [0, 2]]) {
    const lines = ['agent:', '  name: Bench Agent', 'tasks:', `  dedupe_window: ${window}`]
    if (redis !== undefined) {
      lines.push('  backend: kvcache', 'push_notifications:', '  backend: kvcache',
        'services:', '  cache:', '    type: cache', `    url: ${redis.url}`, `    db: ${db}`)
    }
    const file = join(dir, `dedupe-${window}.yml`)
    writeFileSync(file, lines.join('\n') + '\n')
    const port = await freePort()
    const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url))
    const server = await start([cli, 'serve', '--config', file, '--host', '127.0.0.1', '--port', String(port)], port,
      async url => (await fetch(new URL('./health', url))).ok)
    servers.push(server)
    if (cpus !== undefined) pin(server.child.pid, cpus.servers)
  }
  // Warm-up: the JIT, and the memory store filled towards its bound as the rounds will keep it.
  for (const server of servers) await sendLoad(server.url, { connections: 50, amount: 5_000 })
  const perSend = [[], []]
  for (let round = 0; round < rounds; round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const pid = servers[i].child.pid
      const cpu0 = cpuSeconds(pid)
      const result = await sendLoad(servers[i].url, { connections: 50, amount })
      if (result.errors > 0) throw new Error(`${result.errors} failed sends`)
      perSend[i].push(Math.round(1e6 * (cpuSeconds(pid) - cpu0) / amount))
    }
  }
  const median = values => [...values].sort((a, b) => a - b)[values.length >> 1]
  const ratios = perSend[0].map((on, i) => Math.round(100 * on / perSend[1][i]) / 100)
  process.stdout.write(JSON.stringify({
    store: values.store, pin: values.pin ?? 'none', rounds, amount, on: perSend[0], off: perSend[1], ratio: median(ratios), ratios
  }) + '\n')
} finally {
  for (const server of servers) await server.stop()
  await redis?.stop()
  rmSync(dir, { recursive: true, force: true })
}
