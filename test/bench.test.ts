import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { runChild } from './processes.js'

// A smoke run of `npm run bench` at its smallest: every server starts, answers every load, and the run writes a
// well-formed results file and report. Speed is never asserted: this machine's timings say nothing here.
const RUN = fileURLToPath(new URL('../bench/run.js', import.meta.url))
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))

t.ok(existsSync(CLI), 'dist/cli.js exists (run `npm run build` first)')

// The quickest run of every target starts 20 servers (ours and its four twins, Redis' twin among them): 60 s on an
// idle 2-core machine before the dedupe twins came, 134 s beside one other benchmark, past 160 s inside the whole
// suite; far more than tap's 120 s per file leaves for the three tests. Its own bound is 300 s.
t.setTimeout(480_000)

t.test('the quickest bench run writes a results file and a report with every figure and target', async t => {
  const dir = t.testdir({ 'BENCHMARKS.md': '# Benchmarks\n\nKept text.\n\n<!-- bench:start -->\nold figures\n<!-- bench:end -->\n\nKept too.\n' })
  const args = [RUN, '--quick', '--seconds', '0.3', '--warmup', '0.1', '--runs', '1', '--connections', '4', '--tasks', '50', '--idle', '0.2',
    '--json', `${dir}/results.json`, '--out', `${dir}/BENCHMARKS.md`]
  // The servers record no coverage: which branches a load reaches depends on timing (the in-process tests cover them).
  const env = { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' }
  const { status: code, stdout } = await runChild(t, process.execPath, [RUN, ...args.slice(1)], { env, timeoutMs: 300_000 })
  t.equal(code, 0, stdout)

  const results = JSON.parse(readFileSync(`${dir}/results.json`, 'utf8'))
  t.same(Object.keys(results.targets), ['bare', 'floor', 'bare-grpc', 'bare-h2', 'peer', 'peer-v1', 'ours', 'ours-key', 'ours-redis', 'ours-redis-2', 'ours-postgres', 'peer-v1-postgres'])
  t.match(results, { node: process.version, settings: { seconds: 0.3, runs: 1, connections: 4, tasks: 50, idle: 0.2 } })
  // A fresh server on the defaults, started three times: its RSS after the first request, and the median.
  t.match(results.fresh, { rss: Number, starts: [Number, Number, Number] })
  t.ok(results.fresh.starts.includes(results.fresh.rss) && results.fresh.rss > 20, `the median of three starts (${results.fresh.starts})`)
  // The chunks case: one answer of 500 chunks of 1 KB on each store, and what it sent Redis.
  t.match(results.chunks, { chunks: 500, chunkBytes: 1024, answers: 1, memory: { ms: Number }, redis: { ms: Number, bytesPerAnswer: Number } })
  const figures = { rps: Number, p50: Number, p99: Number, errors: Number, cpu: Number, rssPeak: Number }
  t.match(results.targets['bare-grpc'], { 'send-grpc': figures }, 'bare grpc-js')
  t.equal(results.targets['bare-grpc']['send-grpc'].errors, 0, 'bare grpc-js errors')
  t.match(results.targets['bare-h2'], { 'send-grpc': figures }, 'bare node:http2')
  t.equal(results.targets['bare-h2']['send-grpc'].errors, 0, 'bare node:http2 errors')
  for (const id of ['bare', 'floor']) {
    t.match(results.targets[id], { send: figures, rssStart: Number, rssAfter: Number, rssIdle: Number }, id)
    t.equal(results.targets[id].send.errors, 0, `${id} send errors`)
  }
  for (const id of ['peer', 'ours', 'ours-key']) {
    t.match(results.targets[id], { send: figures, stream: figures, push: { ...figures, deliveries: Number } }, id)
    // Every request of the smoke run succeeded: the loads did the work they claim to measure.
    for (const load of ['send', 'stream', 'push']) t.equal(results.targets[id][load].errors, 0, `${id} ${load} errors`)
    t.ok(results.targets[id].push.deliveries > 0, `${id} push deliveries arrived`)
  }
  for (const load of ['send-v1', 'send-rest', 'send-grpc', 'stream-v1', 'stream-rest', 'stream-grpc', 'stream-no-replay', 'send-otel', 'send-no-dedupe']) {
    t.match(results.targets.ours[load], figures, `ours ${load}`)
    t.equal(results.targets.ours[load].errors, 0, `ours ${load} errors`)
  }
  // Today's peer, in its three bindings.
  for (const load of ['send-v1', 'send-rest', 'send-grpc', 'stream-v1', 'stream-rest', 'stream-grpc']) {
    t.match(results.targets['peer-v1'][load], figures, `peer-v1 ${load}`)
    t.equal(results.targets['peer-v1'][load].errors, 0, `peer-v1 ${load} errors`)
  }
  // The twin with the SDK registered recorded the spans it was there for.
  t.ok(results.targets.ours.spans?.['send-otel'] > 0, 'the server with the SDK ended spans')
  // What tracing costs with no SDK, in one process: both builds answered every send (the tool throws otherwise), and
  // the control ran.
  t.match(results.tracing, { rounds: 3, batch: 300, traced: Number, untraced: Number, ratio: Number, control: Number })
  t.equal(results.tracing.ratios.length, 3)
  // The Redis target: its loads, and what its sends cost a throwaway redis-server.
  for (const load of ['send', 'send-no-dedupe', 'stream']) {
    t.match(results.targets['ours-redis'][load], figures, `ours-redis ${load}`)
    t.equal(results.targets['ours-redis'][load].errors, 0, `ours-redis ${load} errors`)
  }
  // Two instances on one Redis behind the load's round-robin: both served, and what they cost Redis.
  const two = results.targets['ours-redis-2']
  t.match(two, { instances: 2, send: figures, redis: { sends: 200, errors: 0, redisCpuMsPer1000: Number } })
  t.equal(two.send.errors, 0, 'ours-redis-2 send errors')
  const redis = results.targets['ours-redis'].redis
  t.match(redis, { sends: 200, errors: 0, commandsPerSend: Number, redisCpuMsPer1000: Number })
  t.ok(redis.commandsPerSend > 0, 'the sends reached Redis')
  t.ok(Object.keys(redis.perSend).length > 0, 'command by command')
  t.match(redis, { roundTripsPerSend: Number, watched: { sends: 200, errors: 0 } })
  t.ok(redis.roundTripsPerSend > 0 && redis.roundTrips.evalsha > 0, 'the round trips were seen, scripts among them')
  // PostgreSQL: ours and the SDK 1.3 on their own stores, each on a database of the run's throwaway cluster, and what
  // their sends cost it.
  for (const load of ['send', 'send-v1', 'stream']) {
    t.match(results.targets['ours-postgres'][load], figures, `ours-postgres ${load}`)
    t.equal(results.targets['ours-postgres'][load].errors, 0, `ours-postgres ${load} errors`)
  }
  t.match(results.targets['peer-v1-postgres']['send-v1'], figures, 'the SDK 1.3 on PostgreSQL')
  t.equal(results.targets['peer-v1-postgres']['send-v1'].errors, 0, 'the SDK 1.3 on PostgreSQL, errors')
  for (const id of ['ours-postgres', 'peer-v1-postgres']) {
    t.match(results.targets[id].postgres, { sends: 200, errors: 0, statementsPerSend: Number, postgresCpuMsPer1000: Number, topStatements: Array }, `${id}: what it cost PostgreSQL`)
  }
  t.ok(results.targets['ours-postgres'].postgres.statementsPerSend >= 1, 'every send reached the database')
  t.match(results.got, { deliveries: Number, errors: 0 })
  t.match(results.memory, { tasks: 50, rss: Number, errors: 0 })

  const report = readFileSync(`${dir}/BENCHMARKS.md`, 'utf8')
  t.match(report, /^# Benchmarks\n\nKept text\.\n\n<!-- bench:start -->\n/)
  t.match(report, /<!-- bench:end -->\n\nKept too\.\n$/)
  t.notMatch(report, /old figures/)
  for (const title of ['### message/send', '### message/send with the OpenTelemetry SDK registered', '### message/send with tasks.dedupe_window: 0', '### SendMessage (A2A v1.0)', '### message/stream', '### SendStreamingMessage (A2A v1.0)', '### POST /message:send (A2A v1.0, HTTP+JSON)', '### POST /message:stream (A2A v1.0, HTTP+JSON)', '### SendMessage over gRPC (A2A v1.0, lf.a2a.v1.A2AService)', '### SendStreamingMessage over gRPC (A2A v1.0)', '### push end to end', '### Redis (kvcache)', '#### Instances per Redis', '### PostgreSQL: what a send costs the database', '### Streamed chunks', '### Memory', '### Targets']) {
    t.ok(report.includes(title), title)
  }
  t.match(report, /^The floor \(`bench\/floor\.js`.*\) reached [\d.]+× bare Fastify; fastify-a2a reached [\d.]+× the floor\.$/m)
  t.match(report, /^bare grpc-js \(`bench\/bare-grpc\.js`.*\) cost \d+ µs of server CPU per SendMessage, [\d.]+× .*; fastify-a2a's gRPC SendMessage cost [\d.]+× bare grpc-js\.$/m)
  t.match(report, /^bare node:http2 \(`bench\/bare-h2\.js`.*\) cost \d+ µs per SendMessage, [\d.]+× fastify-a2a's whole JSON-RPC v1\.0 SendMessage; grpc-js cost [\d.]+× it\.$/m)
  t.match(report, /\| message\/stream CPU per stream, events kept vs not \| [\d.]+× \| ≤ 1\.1× \|/)
  t.match(report, /\| gRPC SendMessage CPU per request vs JSON-RPC v1\.0 \| [\d.]+× \| ≤ 1\.2× \|/)
  t.match(report, /\| gRPC SendStreamingMessage CPU per request vs JSON-RPC v1\.0 \| [\d.]+× \| ≤ 1\.2× \|/)
  t.match(report, /\| 500 streamed chunks on Redis vs memory \| [\d.]+× \| ≤ 3× \|/)
  t.match(report, /\| SendMessage on PostgreSQL vs @a2a-js\/sdk 1\.3 on PostgreSQL \| [\d.]+× \| ≥ 3× \|/)
  t.match(report, /\| message\/send on PostgreSQL vs on Redis \| [\d.]+× \| ≥ 0\.5× \|/)
  t.match(report, /\| message\/send with no SDK vs a build without tracing \(in one process; the control: the build vs a copy of itself\) \| [\d.]+× \(control [\d.]+×\) \| ≤ 1\.03× \|/)
  t.match(report, /^Tracing with no SDK \(`bench\/tracing-cost\.js`, in one process, 3 rounds of 300 sends .*; the build against a copy of itself, [\d.]+×\.$/m)
  t.match(report, /^The server with the OpenTelemetry SDK \(`bench\/otel-noop\.js`.*\) ended [\d,]+ spans over its warm-up and runs\.$/m)
  t.match(report, /\| message\/send CPU per request, deduplicated vs not \(memory\) \| [\d.]+× \| ≤ 1\.1× \|/)
  t.match(report, /\| message\/send CPU per request, deduplicated vs not \(Redis\) \| [\d.]+× \| ≤ 1\.1× \|/)
  const today: Array<[string, number]> = [['SendMessage', 10], ['REST POST /message:send', 10], ['SendStreamingMessage', 8], ['gRPC SendMessage', 3]]
  for (const [name, goal] of today) {
    t.match(report, new RegExp(`^\\| ${name.replace('/', '\\/')} vs @a2a-js\\/sdk 1\\.3 \\| [\\d.]+× \\| ≥ ${goal}× \\|`, 'm'), `${name} vs the SDK 1.3`)
  }
  t.match(report, /\| RSS of a fresh server after one request \(the defaults; median of 3 starts\) \| \d+ MB \| ≤ 65 MB \|/)
  t.match(report, /\| RSS after the runs vs @a2a-js\/sdk 1\.3 \| \d+ MB vs \d+ MB \| ≤ \|/)
  t.match(report, /\| message\/stream vs the peer \| [\d.]+× \| ≥ 4× \|/)
  // Thirty-six targets, each with a verdict, and one figure reported with no goal.
  t.equal(report.match(/\| (pass|\*\*FAIL\*\*) \|$/gm)?.length, 36)
  t.match(report, /^\| message\/send with the SDK and a no-op exporter vs no SDK \(CPU per request; req\/s\) \| [\d.]+×; [\d.]+× \| – \| reported \|$/m)
  t.equal(report.match(/\| reported \|$/gm)?.length, 1)
})

t.test('--node-options reaches our server and no other', async t => {
  const dir = t.testdir({})
  const marker = `${dir}/started`
  // A module given to --import records the script of every process it is loaded into.
  const hook = `--import=data:text/javascript,import{appendFileSync}from'node:fs';appendFileSync(${JSON.stringify(marker)},process.argv[1]+'\\n')`
  const args = ['--quick', '--seconds', '0.3', '--warmup', '0.1', '--runs', '1', '--connections', '2', '--tasks', '0', '--idle', '0.1',
    '--only', 'bare,ours', `--node-options=--max-semi-space-size=8 ${hook}`, '--json', `${dir}/results.json`]
  const env = { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' }
  const { status: code, stdout } = await runChild(t, process.execPath, [RUN, ...args], { env, timeoutMs: 100_000 })
  t.equal(code, 0, stdout)
  // Our server, its twins (no stream replay, the SDK registered, no deduplication) and the three fresh starts on the
  // defaults: no other process got them.
  const started = readFileSync(marker, 'utf8').trim().split('\n')
  t.same(started, Array(7).fill(CLI), 'seven servers ran with the flags, each dist/cli.js')
  const results = JSON.parse(readFileSync(`${dir}/results.json`, 'utf8'))
  t.equal(results.targets.ours.send.errors, 0, 'our server answered with the flags on')
  t.match(results.command, /--node-options/)
})

t.test('a flag node refuses stops the run with node\'s message and a non-zero exit', async t => {
  const args = ['--quick', '--only', 'ours', '--node-options=--no-such-node-flag']
  const env = { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' }
  const { status: code, stderr } = await runChild(t, process.execPath, [RUN, ...args], { env, timeoutMs: 60_000 })
  t.not(code, 0)
  t.match(stderr, /bad option: --no-such-node-flag/)
  t.match(stderr, /exited with 9/)
})
