// What the tracing calls cost message/send when no OpenTelemetry SDK is registered: the build (dist/) against the
// build without tracing (bench/untraced.js), both in this one process, each send made with `app.inject`. Without
// sockets both builds do the same work but for the network, which they would pay alike: the ratio can only come out
// higher than over HTTP, so a pass here is a pass there. The apps take turns one request at a time, each request
// timed on its own; a round's figure is each app's median time per send, and the result the median of the rounds'
// ratios. Why not over HTTP, or with turns of many requests, or with CPU time: on this 2-core machine (2026-11-28)
// runs of one server over HTTP differed by up to ±30% from one to the next, turns of 2,000 sends by ±20% (a collection
// or a steal by the host lands on one turn), and CPU time counts V8's background threads wherever they happen to
// run; request by request, with medians, the rounds' ratios stayed within 0.99 to 1.03. The two builds are two module
// graphs in one process: the code they share (Fastify) sees both alike. The bench runs it a second time with a copy of
// the build itself in place of the one without tracing, the control: how far apart two identical builds come out.
//   node --expose-gc bench/tracing-cost.js <index.js> <other index.js> [rounds] [sends per round]
// prints `{ rounds, batch, traced, untraced, ratio, ratios }` (µs per send, medians) as JSON.
import { pathToFileURL } from 'node:url'

const [tracedIndex, untracedIndex, rounds = '15', batch = '2000'] = process.argv.slice(2)

const median = values => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]

/** A standalone-like app of a build: the plugin at `/`, memory backends, the built-in agent, no logger. */
async function appOf (index) {
  const { default: Fastify } = await import('fastify')
  const { default: a2a } = await import(pathToFileURL(index).href)
  const app = Fastify({ logger: false })
  await app.register(a2a, {})
  await app.ready()
  return app
}

const payload = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'hello' }] } }
})

async function send (app) {
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload })
  if (res.statusCode !== 200 || res.json().result?.status?.state !== 'completed') throw new Error(`message/send failed: ${res.body}`)
}

/**
 * One round: `n` sends to each app, one to each in turn (who goes first rotating), each timed on its own; each app's
 * median µs per send. Turns of one request share the machine's state (the other core's load, the CPU's clock, a steal
 * by the host) between the apps, where turns of many did not; the median leaves out the sends a collection paused.
 */
async function round (apps, n) {
  const times = apps.map(() => new Float64Array(n))
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < apps.length; k++) {
      const j = (i + k) % apps.length
      const start = process.hrtime.bigint()
      await send(apps[j])
      times[j][i] = Number(process.hrtime.bigint() - start) / 1000
    }
  }
  return times.map(median)
}

const apps = [await appOf(tracedIndex), await appOf(untracedIndex)]
const n = Number(batch)
// Warm-up: both apps' code optimised before anything counts.
await round(apps, n)
const results = { traced: [], untraced: [], ratios: [] }
for (let r = 0; r < Number(rounds); r++) {
  globalThis.gc?.()
  const [traced, untraced] = await round(apps, n)
  results.traced.push(traced)
  results.untraced.push(untraced)
  results.ratios.push(traced / untraced)
}
for (const app of apps) await app.close()
const round2 = x => Math.round(x * 100) / 100
process.stdout.write(JSON.stringify({
  rounds: Number(rounds),
  batch: n,
  traced: round2(median(results.traced)),
  untraced: round2(median(results.untraced)),
  ratio: round2(median(results.ratios)),
  ratios: results.ratios.map(round2)
}) + '\n')
