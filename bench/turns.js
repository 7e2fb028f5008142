// Two or more apps in this one process taking turns one request at a time (bench/tracing-cost.js,
// bench/dedupe-cost.js): why that way is said at the head of bench/tracing-cost.js. Each send has a messageId of
// its own, so none of them is a duplicate of another (docs/protocol.md, "Idempotent sends").

export const median = values => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]

const round2 = x => Math.round(x * 100) / 100

let seq = 0

/** A `message/send` of the built-in agent to `app` (Fastify's inject), which must answer a completed task. */
export async function send (app) {
  const payload = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"turn-${++seq}","parts":[{"kind":"text","text":"hello"}]}}}`
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload })
  if (res.statusCode !== 200 || res.json().result?.status?.state !== 'completed') throw new Error(`message/send failed: ${res.body}`)
}

/** The clock of a round: the wall clock, or (`cpu`) this process's CPU time, in µs. */
export function clockOf (cpu) {
  return cpu
    ? () => { const { user, system } = process.cpuUsage(); return user + system }
    : () => Number(process.hrtime.bigint()) / 1000
}

/**
 * One round: `n` sends to each app, one to each in turn (who goes first rotating), each timed on its own; each app's
 * median µs per send. Turns of one request share the machine's state (the other core's load, the CPU's clock, a steal
 * by the host) between the apps, where turns of many did not; the median leaves out the sends a collection paused.
 */
async function round (apps, n, clock) {
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

/**
 * A warm-up round (both apps' code optimised before anything counts), then `rounds` rounds of `batch` sends to each
 * of the two apps; the apps are closed after. `{ first, second, ratio, ratios }`: the medians of each app's figures
 * (µs per send) and of the rounds' ratios first / second, to two decimals.
 */
export async function takeTurns ([first, second], { rounds, batch, clock = clockOf(false) }) {
  await round([first, second], batch, clock)
  const results = { first: [], second: [], ratios: [] }
  for (let r = 0; r < rounds; r++) {
    globalThis.gc?.()
    const [a, b] = await round([first, second], batch, clock)
    results.first.push(a)
    results.second.push(b)
    results.ratios.push(a / b)
  }
  for (const app of [first, second]) await app.close()
  return { first: round2(median(results.first)), second: round2(median(results.second)), ratio: round2(median(results.ratios)), ratios: results.ratios.map(round2) }
}
