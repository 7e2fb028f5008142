// What idempotent sends cost message/send (docs/protocol.md, "Idempotent sends"): two apps of the build (dist/) in
// this one process, one with `tasks.dedupe_window` at its default and one with 0, each send made with `app.inject`
// and a messageId of its own, in memory or (`--redis URL`) with tasks in Redis. As bench/tracing-cost.js does, the apps
// take turns one request at a time and a round's figure is each app's median per send; the result is the median of
// the rounds' ratios, which the machine's other load moves far less than runs over HTTP. In memory a send is timed on
// the clock (it does no I/O); on Redis by this process's CPU time (its wall time would count Redis' own latency).
// On a machine of few cores, where the scheduler puts Redis decides what a round trip costs this process, and so the
// Redis figure: on a 2-core machine, with Redis on this process's core 43 to 46 µs of its CPU, with Redis on the
// other core 114 to 142 µs (BENCHMARKS.md, "Idempotent sends"). The placement can change within a run; pin both with
// `taskset` (Redis on this process's core, then on the other) and give both figures.
//   node --expose-gc bench/dedupe-cost.js [--redis URL] [--rounds N] [--batch N]
// prints `{ store, rounds, batch, on, off, ratio, ratios }` (µs per send, medians) as JSON.
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'

const { values } = parseArgs({ options: { redis: { type: 'string' }, rounds: { type: 'string', default: '9' }, batch: { type: 'string', default: '1000' } } })
const median = list => [...list].sort((a, b) => a - b)[Math.floor((list.length - 1) / 2)]
const redis = values.redis

async function appOf (dedupeWindow, db) {
  const { default: Fastify } = await import('fastify')
  const { default: a2a } = await import(fileURLToPath(new URL('../dist/index.js', import.meta.url)))
  const app = Fastify({ logger: false })
  const tasks = { dedupe_window: dedupeWindow }
  const config = redis === undefined
    ? { tasks }
    : { tasks: { ...tasks, backend: 'kvcache' }, push_notifications: { backend: 'kvcache' }, services: { cache: { type: 'cache', url: redis, db } } }
  await app.register(a2a, { config })
  await app.ready()
  return app
}

let seq = 0
async function send (app) {
  const payload = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"cost-${++seq}","parts":[{"kind":"text","text":"hello"}]}}}`
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload })
  if (res.statusCode !== 200 || res.json().result?.status?.state !== 'completed') throw new Error(`message/send failed: ${res.body}`)
}

const clock = redis === undefined
  ? () => Number(process.hrtime.bigint()) / 1000
  : () => { const { user, system } = process.cpuUsage(); return user + system }

async function round (apps, n) {
  const times = apps.map(() => new Float64Array(n))
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < apps.length; k++) {
      const j = (i + k) % apps.length
      const start = clock()
      await send(apps[j])
      times[j][i] = clock() - start
    }
  }
  return times.map(median)
}

// Two databases of one Redis, so that the apps' keys stay apart.
const apps = [await appOf(600, 1), await appOf(0, 2)]
const n = Number(values.batch)
await round(apps, n)
const results = { on: [], off: [], ratios: [] }
for (let r = 0; r < Number(values.rounds); r++) {
  globalThis.gc?.()
  const [on, off] = await round(apps, n)
  results.on.push(on)
  results.off.push(off)
  results.ratios.push(on / off)
}
for (const app of apps) await app.close()
const round2 = x => Math.round(x * 100) / 100
process.stdout.write(JSON.stringify({
  store: redis === undefined ? 'memory' : 'redis',
  rounds: Number(values.rounds),
  batch: n,
  on: round2(median(results.on)),
  off: round2(median(results.off)),
  ratio: round2(median(results.ratios)),
  ratios: results.ratios.map(round2)
}) + '\n')
