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
import { clockOf, takeTurns } from './turns.js'

const { values } = parseArgs({ options: { redis: { type: 'string' }, rounds: { type: 'string', default: '9' }, batch: { type: 'string', default: '1000' } } })
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

// Two databases of one Redis, so that the apps' keys stay apart.
const apps = [await appOf(600, 1), await appOf(0, 2)]
const { first, second, ratio, ratios } = await takeTurns(apps, { rounds: Number(values.rounds), batch: Number(values.batch), clock: clockOf(redis !== undefined) })
process.stdout.write(JSON.stringify({
  store: redis === undefined ? 'memory' : 'redis', rounds: Number(values.rounds), batch: Number(values.batch), on: first, off: second, ratio, ratios
}) + '\n')
