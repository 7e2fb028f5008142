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
import { takeTurns } from './turns.js'

const [tracedIndex, untracedIndex, rounds = '15', batch = '2000'] = process.argv.slice(2)

/** A standalone-like app of a build: the plugin at `/`, memory backends, the built-in agent, no logger. */
async function appOf (index) {
  const { default: Fastify } = await import('fastify')
  const { default: a2a } = await import(pathToFileURL(index).href)
  const app = Fastify({ logger: false })
  await app.register(a2a, {})
  await app.ready()
  return app
}

const apps = [await appOf(tracedIndex), await appOf(untracedIndex)]
const { first, second, ratio, ratios } = await takeTurns(apps, { rounds: Number(rounds), batch: Number(batch) })
process.stdout.write(JSON.stringify({ rounds: Number(rounds), batch: Number(batch), traced: first, untraced: second, ratio, ratios }) + '\n')
