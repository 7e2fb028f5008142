// Turns one run's results into the targets of the benchmark (ratios from the same run) and the Markdown that goes
// into BENCHMARKS.md between its markers.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'

export const START = '<!-- bench:start -->'
export const END = '<!-- bench:end -->'

const ratio = (a, b) => (b > 0 ? Math.round((a / b) * 100) / 100 : 0)

/**
 * The targets of the issue, each `{ name, value, goal, pass }`, and figures reported beside them with no goal
 * (`goal` null); a target whose figures are missing is left out.
 */
export /**
 * What an instance costs Redis, and how many instances one Redis can carry, from this run's figures: the Redis CPU
 * per send (measured on a throwaway redis-server) times the sends per second one instance did.
 */
function scale (r) {
  const rows = ['ours-redis', 'ours-redis-2'].map(id => r.targets[id]).filter(t => t?.redis?.redisCpuMsPer1000 != null && t.send !== undefined)
  if (rows.length === 0) return []
  const out = ['#### Instances per Redis', '',
    '| run | req/s (all instances) | req/s per instance | commands/s per instance | Redis CPU ms per 1,000 sends | Redis CPU per instance | instances one Redis core carries |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |']
  for (const t of rows) {
    const n = t.instances ?? 1
    const perInstance = t.send.rps / n
    const share = perInstance * t.redis.redisCpuMsPer1000 / 1e6
    out.push(`| ${t.label} | ${t.send.rps} | ${Math.round(perInstance)} | ${Math.round(perInstance * t.redis.commandsPerSend).toLocaleString('en')} | ` +
      `${t.redis.redisCpuMsPer1000} | ${Math.round(share * 100)} % of a core | ${share > 0 ? (1 / share).toFixed(1) : '–'} |`)
  }
  out.push('', 'An instance at full load costs Redis (req/s per instance × Redis CPU per send) of one core; one Redis (one ' +
    'core for commands) carries the inverse, at the rate this machine gives each instance. On 2 cores the instances, ' +
    'Redis and the load share the cores, so two instances cannot show more throughput than one here.', '')
  return out
}

function checks (r) {
  const t = r.targets
  const out = []
  const add = (name, value, goal, pass) => out.push({ name, value, goal, pass })
  const cpuEach = m => m.cpu / m.rps
  const rps = (id, load) => t[id]?.[load]?.rps
  if (rps('ours', 'send') !== undefined && rps('bare', 'send') !== undefined) {
    const v = ratio(rps('ours', 'send'), rps('bare', 'send'))
    add('message/send vs bare Fastify', `${v}×`, '≥ 0.6×', v >= 0.6)
  }
  if (rps('ours', 'send') !== undefined && rps('peer', 'send') !== undefined) {
    const v = ratio(rps('ours', 'send'), rps('peer', 'send'))
    add('message/send vs the peer', `${v}×`, '≥ 3×', v >= 3)
    add('message/send p99 vs the peer', `${t.ours.send.p99} ms vs ${t.peer.send.p99} ms`, '≤', t.ours.send.p99 <= t.peer.send.p99)
  }
  if (rps('ours', 'stream') !== undefined && rps('peer', 'stream') !== undefined) {
    const v = ratio(rps('ours', 'stream'), rps('peer', 'stream'))
    add('message/stream vs the peer', `${v}×`, '≥ 4×', v >= 4)
    add('message/stream p99 vs the peer', `${t.ours.stream.p99} ms vs ${t.peer.stream.p99} ms`, '≤', t.ours.stream.p99 <= t.peer.stream.p99)
  }
  // Today's peer, @a2a-js/sdk 1.3 (v1.0 only), in each binding, doing the same work.
  const today = [
    ['send-v1', 'SendMessage', 10],
    ['send-rest', 'REST POST /message:send', 10],
    ['stream-v1', 'SendStreamingMessage', 8],
    ['send-grpc', 'gRPC SendMessage', 3]
  ]
  for (const [load, name, goal] of today) {
    if (rps('ours', load) === undefined || rps('peer-v1', load) === undefined) continue
    const v = ratio(rps('ours', load), rps('peer-v1', load))
    add(`${name} vs @a2a-js/sdk 1.3`, `${v}×`, `≥ ${goal}×`, v >= goal)
  }
  if (r.fresh !== undefined) add('RSS of a fresh server after one request (the defaults; median of 3 starts)', `${r.fresh.rss} MB`, '≤ 65 MB', r.fresh.rss <= 65)
  if (t.ours?.rssAfter !== undefined && t['peer-v1']?.rssAfter !== undefined) {
    add('RSS after the runs vs @a2a-js/sdk 1.3', `${t.ours.rssAfter} MB vs ${t['peer-v1'].rssAfter} MB`, '≤', t.ours.rssAfter <= t['peer-v1'].rssAfter)
  }
  if (rps('ours-key', 'send') !== undefined && rps('ours', 'send') !== undefined) {
    const v = ratio(rps('ours-key', 'send'), rps('ours', 'send'))
    add('message/send with an API key vs without security', `${v}×`, '≥ 0.9×', v >= 0.9)
  }
  if (r.chunks !== undefined) {
    const v = ratio(r.chunks.redis.ms, r.chunks.memory.ms)
    add(`${r.chunks.chunks.toLocaleString('en')} streamed chunks on Redis vs memory`, `${v}×`, '≤ 3×', v <= 3)
  }
  // Server CPU µs per request of one load against another, same process, same run: A2A v1.0 against v0.3 (CONTRACT.md
  // §11), HTTP+JSON against JSON-RPC v1.0 (§12), gRPC against JSON-RPC v1.0 (§13).
  const versus = [
    ['send-v1', 'send', 'v1.0 SendMessage CPU per request vs v0.3', 1.1],
    ['stream-v1', 'stream', 'v1.0 SendStreamingMessage CPU per request vs v0.3', 1.1],
    ['send-rest', 'send-v1', 'REST POST /message:send CPU per request vs JSON-RPC v1.0', 1.1],
    ['stream-rest', 'stream-v1', 'REST POST /message:stream CPU per request vs JSON-RPC v1.0', 1.1],
    ['send-grpc', 'send-v1', 'gRPC SendMessage CPU per request vs JSON-RPC v1.0', 1.2],
    ['stream-grpc', 'stream-v1', 'gRPC SendStreamingMessage CPU per request vs JSON-RPC v1.0', 1.2]
  ]
  for (const [load, base, name, goal] of versus) {
    const a = t.ours?.[load]
    const b = t.ours?.[base]
    if (a === undefined || b === undefined) continue
    const v = ratio(a.cpu / a.rps, b.cpu / b.rps)
    add(name, `${v}×`, `≤ ${goal}×`, v <= goal)
  }
  // Keeping each event for streams that resume costs little: CPU per stream with replay on vs off.
  if (t.ours?.stream !== undefined && t.ours['stream-no-replay'] !== undefined) {
    const on = t.ours.stream
    const off = t.ours['stream-no-replay']
    const v = ratio(on.cpu / on.rps, off.cpu / off.rps)
    add('message/stream CPU per stream, events kept vs not', `${v}×`, '≤ 1.1×', v <= 1.1)
  }
  // Idempotent sends: message/send with each messageId claimed vs not (`tasks.dedupe_window: 0`), CPU per request, in
  // memory and on Redis (where the claim is a round trip).
  for (const id of ['ours', 'ours-redis']) {
    const on = t[id]?.send
    const off = t[id]?.['send-no-dedupe']
    if (on === undefined || off === undefined) continue
    const v = ratio(on.cpu / on.rps, off.cpu / off.rps)
    add(`message/send CPU per request, deduplicated vs not (${id === 'ours' ? 'memory' : 'Redis'})`, `${v}×`, '≤ 1.1×', v <= 1.1)
  }
  // What tracing costs message/send: with no SDK registered against a build whose tracing calls do nothing, measured
  // in one process request by request (bench/tracing-cost.js: over HTTP the runs of one server differ by more than
  // the 3% to tell apart), beside the control (the build against a copy of itself); and with the SDK and a no-op
  // exporter against no SDK, CPU per request over HTTP, reported with no goal (it is the SDK's cost).
  if (r.tracing !== undefined) {
    const { ratio: v, control } = r.tracing
    add('message/send with no SDK vs a build without tracing (in one process; the control: the build vs a copy of itself)',
      `${v}× (control ${control}×)`, '≤ 1.03×', v <= 1.03)
  }
  if (t.ours?.send !== undefined && t.ours['send-otel'] !== undefined) {
    const otel = t.ours['send-otel']
    add('message/send with the SDK and a no-op exporter vs no SDK (CPU per request; req/s)',
      `${ratio(cpuEach(otel), cpuEach(t.ours.send))}×; ${ratio(otel.rps, t.ours.send.rps)}×`, null, true)
  }
  if (t.ours?.push !== undefined && r.got !== undefined) {
    const v = ratio(t.ours.push.deliveries, r.got.deliveries)
    add('push deliveries/s vs bare got', `${v}×`, '≥ 0.9×', v >= 0.9)
  }
  // The scale-out mode (tasks and push configs in Redis) against the peer and our memory mode.
  if (rps('ours-redis', 'send') !== undefined && rps('peer', 'send') !== undefined) {
    const v = ratio(rps('ours-redis', 'send'), rps('peer', 'send'))
    add('message/send on Redis vs the peer', `${v}×`, '≥ 3×', v >= 3)
    add('message/send p99 on Redis vs the peer', `${t['ours-redis'].send.p99} ms vs ${t.peer.send.p99} ms`, '≤', t['ours-redis'].send.p99 <= t.peer.send.p99)
  }
  if (rps('ours-redis', 'send') !== undefined && rps('ours', 'send') !== undefined) {
    const v = ratio(rps('ours-redis', 'send'), rps('ours', 'send'))
    add('message/send on Redis vs in memory', `${v}×`, '≥ 0.45×', v >= 0.45)
  }
  if (rps('ours-redis', 'stream') !== undefined && rps('peer', 'stream') !== undefined) {
    const v = ratio(rps('ours-redis', 'stream'), rps('peer', 'stream'))
    add('message/stream on Redis vs the peer', `${v}×`, '≥ 2×', v >= 2)
  }
  const redis = t['ours-redis']?.redis
  if (redis !== undefined) {
    if (redis.roundTripsPerSend !== undefined) {
      add('Redis round trips per message/send', String(redis.roundTripsPerSend), '≤ 6', redis.roundTripsPerSend <= 6)
    }
    const evals = redis.perSend.eval ?? 0
    add('EVAL per message/send (scripts sent in full)', String(evals), '0', evals === 0)
  }
  // The other scale-out mode: PostgreSQL alone, against the SDK 1.3 on its own PostgreSQL stores (v1.0 SendMessage)
  // and against our Redis mode (message/send).
  if (rps('ours-postgres', 'send-v1') !== undefined && rps('peer-v1-postgres', 'send-v1') !== undefined) {
    const ours = t['ours-postgres']['send-v1']
    const peer = t['peer-v1-postgres']['send-v1']
    const v = ratio(ours.rps, peer.rps)
    add('SendMessage on PostgreSQL vs @a2a-js/sdk 1.3 on PostgreSQL', `${v}×`, '≥ 3×', v >= 3)
    add('SendMessage p99 on PostgreSQL vs @a2a-js/sdk 1.3 on PostgreSQL', `${ours.p99} ms vs ${peer.p99} ms`, '≤', ours.p99 <= peer.p99)
  }
  if (rps('ours-postgres', 'send') !== undefined && rps('ours-redis', 'send') !== undefined) {
    const v = ratio(rps('ours-postgres', 'send'), rps('ours-redis', 'send'))
    add('message/send on PostgreSQL vs on Redis', `${v}×`, '≥ 0.5×', v >= 0.5)
  }
  const statements = t['ours-postgres']?.postgres?.statementsPerSend
  if (statements != null) add('PostgreSQL statements (round trips) per message/send', String(statements), '≤ 1.1', statements <= 1.1)
  if (t.ours?.rssAfter !== undefined) add('RSS after the runs', `${t.ours.rssAfter} MB`, '≤ 150 MB', t.ours.rssAfter <= 150)
  if (r.memory !== undefined) {
    add(`RSS after ${r.memory.tasks.toLocaleString('en')} more tasks`, `${r.memory.rss} MB`, '≤ 200 MB', r.memory.rss <= 200)
  }
  return out
}

const LOADS = [
  ['send', 'message/send', 'req/s'],
  ['send-otel', 'message/send with the OpenTelemetry SDK registered, a no-op exporter (bench/otel-noop.js)', 'req/s'],
  ['send-no-dedupe', 'message/send with tasks.dedupe_window: 0 (sends not deduplicated)', 'req/s'],
  ['send-v1', 'SendMessage (A2A v1.0)', 'req/s'],
  ['send-rest', 'POST /message:send (A2A v1.0, HTTP+JSON)', 'req/s'],
  ['stream', 'message/stream', 'streams/s'],
  ['stream-v1', 'SendStreamingMessage (A2A v1.0)', 'streams/s'],
  ['stream-rest', 'POST /message:stream (A2A v1.0, HTTP+JSON)', 'streams/s'],
  ['send-grpc', 'SendMessage over gRPC (A2A v1.0, lf.a2a.v1.A2AService)', 'req/s'],
  ['stream-grpc', 'SendStreamingMessage over gRPC (A2A v1.0)', 'streams/s'],
  ['stream-no-replay', 'message/stream with server.stream_replay.max_events: 0 (no events kept)', 'streams/s'],
  ['push', 'push end to end', 'tasks/s']
]

/** Server CPU time per request (per task for push, per delivery for got), in µs. */
const perItem = (cpu, rate) => (rate > 0 ? Math.round(cpu * 1e4 / rate) : '–')

function loadTable (r, [key, title, unit]) {
  const rows = Object.values(r.targets).filter(t => t[key] !== undefined)
  if (rows.length === 0) return []
  const push = key === 'push'
  const lines = [`### ${title}`, '',
    `| server | ${unit} |${push ? ' deliveries/s |' : ''} p50 ms | p99 ms | errors | server CPU % | CPU µs each | RSS peak MB |`,
    `| --- | ---: |${push ? ' ---: |' : ''} ---: | ---: | ---: | ---: | ---: | ---: |`]
  for (const t of rows) {
    const m = t[key]
    lines.push(`| ${t.label} | ${m.rps} |${push ? ` ${m.deliveries} |` : ''} ${m.p50} | ${m.p99} | ${m.errors} | ${m.cpu} | ${perItem(m.cpu, m.rps)} | ${m.rssPeak} |`)
  }
  if (push && r.got !== undefined) {
    lines.push(`| bare got 14 client (its own process) | – | ${r.got.deliveries} | – | – | ${r.got.errors} | ${r.got.cpu} | ${perItem(r.got.cpu, r.got.deliveries)} | ${r.got.rssPeak} |`)
  }
  return [...lines, '']
}

/** The Markdown of one run: machine, settings, one table per load, memory, and the targets with pass or fail. */
export function markdown (r) {
  const s = r.settings
  const lines = [
    `Run of ${r.date} on ${r.machine.cpu} (${r.machine.cores} cores), ${r.machine.memoryGb} GB, ${r.machine.os}, Node ${r.node}.`,
    `Command: \`${r.command}\`. ${s.connections} connections or requests in flight; each load: ${s.warmup} s warm-up, then ` +
    `${s.runs} × ${s.seconds} s, the median run (by throughput) shown. Server CPU is the server process's user + system ` +
    'time over the run, as a share of one core (100 = one full core); CPU µs each is that time per request (per task ' +
    'for push; per delivery for got).',
    ''
  ]
  for (const load of LOADS) lines.push(...loadTable(r, load))
  const floor = r.targets.floor?.send?.rps
  const bare = r.targets.bare?.send?.rps
  if (floor !== undefined && bare !== undefined) {
    const ours = r.targets.ours?.send?.rps
    lines.push('The floor (`bench/floor.js`: the least an A2A `message/send` can do on Fastify, no target of its own) ' +
      `reached ${ratio(floor, bare)}× bare Fastify${ours === undefined ? '' : `; fastify-a2a reached ${ratio(ours, floor)}× the floor`}.`, '')
  }
  const spans = r.targets.ours?.spans?.['send-otel']
  if (spans !== undefined) {
    lines.push('The server with the OpenTelemetry SDK (`bench/otel-noop.js`: `NodeTracerProvider`, `BatchSpanProcessor`, ' +
      `an exporter that answers success at once) ended ${spans.toLocaleString('en')} spans over its warm-up and runs.`, '')
  }
  if (r.tracing !== undefined) {
    const c = r.tracing
    lines.push(`Tracing with no SDK (\`bench/tracing-cost.js\`, in one process, ${c.rounds} rounds of ${c.batch} sends to each ` +
      `build taking turns request by request): ${c.traced} µs per \`message/send\` against ${c.untraced} µs for the build ` +
      `whose tracing calls do nothing, the median ratio of the rounds ${c.ratio}× (from ${Math.min(...c.ratios)}× to ` +
      `${Math.max(...c.ratios)}×); the build against a copy of itself, ${c.control}×.`, '')
  }
  const grpcFloor = r.targets['bare-grpc']?.['send-grpc']
  const grpcOurs = r.targets.ours?.['send-grpc']
  const rpcOurs = r.targets.ours?.['send-v1']
  if (grpcFloor !== undefined && grpcOurs !== undefined && rpcOurs !== undefined) {
    const each = m => m.cpu * 1e4 / m.rps
    lines.push('bare grpc-js (`bench/bare-grpc.js`: a canned Task, no target of its own) cost ' +
      `${Math.round(each(grpcFloor))} µs of server CPU per SendMessage, ${ratio(each(grpcFloor), each(rpcOurs))}× what fastify-a2a's whole ` +
      `JSON-RPC v1.0 SendMessage cost; fastify-a2a's gRPC SendMessage cost ${ratio(each(grpcOurs), each(grpcFloor))}× bare grpc-js.`, '')
    const h2 = r.targets['bare-h2']?.['send-grpc']
    if (h2 !== undefined) {
      lines.push('bare node:http2 (`bench/bare-h2.js`: canned bytes for the same call, no gRPC library on the server) cost ' +
        `${Math.round(each(h2))} µs per SendMessage, ${ratio(each(h2), each(rpcOurs))}× fastify-a2a's whole JSON-RPC v1.0 ` +
        `SendMessage; grpc-js cost ${ratio(each(grpcFloor), each(h2))}× it.`, '')
    }
  }
  const redis = r.targets['ours-redis']?.redis
  if (redis !== undefined) {
    const rate = r.targets['ours-redis'].send?.rps
    lines.push('### Redis (kvcache): what message/send costs Redis', '',
      `Over ${redis.sends.toLocaleString('en')} message/send requests (${redis.errors} errors): **${redis.commandsPerSend} commands per request**` +
      (rate === undefined ? '' : `, about ${Math.round(redis.commandsPerSend * rate).toLocaleString('en')} commands/s at the ${rate} req/s above`) +
      (redis.redisCpuMsPer1000 === null ? '' : `; Redis CPU **${redis.redisCpuMsPer1000} ms per 1,000 sends**`) + '.', '',
      '| command | per message/send |', '| --- | ---: |')
    // What rounds to 0 per send (the server's timers: lease renewal, the reaper, the outbox relay) is left out.
    for (const [name, n] of Object.entries(redis.perSend)) if (n > 0) lines.push(`| ${name} | ${n} |`)
    lines.push('', 'Commands below 0.01 per send (the timers: lease renewal, the reaper, the outbox relay) are left out. ' +
      'INFO commandstats counts the calls a script makes as commands of their own.', '')
    if (redis.roundTripsPerSend !== undefined) {
      lines.push(`Round trips (commands that came over a connection, from MONITOR over ${redis.watched.sends} more sends): ` +
        `**${redis.roundTripsPerSend} per message/send**: ` +
        Object.entries(redis.roundTrips).filter(([, n]) => n > 0).map(([name, n]) => `${name} ${n}`).join(', ') + '.', '')
    }
    lines.push(...scale(r))
  }
  const onPostgres = ['ours-postgres', 'peer-v1-postgres'].filter(id => r.targets[id]?.postgres !== undefined)
  if (onPostgres.length > 0) {
    lines.push('### PostgreSQL: what a send costs the database', '',
      `Over ${r.targets[onPostgres[0]].postgres.sends.toLocaleString('en')} sends to each server (ours message/send, the ` +
      "SDK's SendMessage), each on a database of its own on the run's server: the statements it ran (pg_stat_statements; " +
      'each one a round trip, BEGIN and COMMIT included) and the CPU of its processes.', '',
      '| server | statements per send | the most called (per send) | PostgreSQL CPU ms per 1,000 sends |', '| --- | ---: | --- | ---: |')
    for (const id of onPostgres) {
      const pg = r.targets[id].postgres
      const top = (pg.topStatements ?? []).filter(s => s.perSend > 0).map(s => `\`${s.query.replace(/\|/g, '\\|')}…\` ${s.perSend}`).join('; ')
      lines.push(`| ${r.targets[id].label} | ${pg.statementsPerSend ?? '–'} | ${top || '–'} | ${pg.postgresCpuMsPer1000 ?? '–'} |`)
    }
    lines.push('')
  }
  const c = r.chunks
  if (c !== undefined) {
    lines.push('### Streamed chunks: one message/send answered with ' +
      `${c.chunks.toLocaleString('en')} artifact chunks of ${c.chunkBytes} B`, '',
      `The median of ${c.answers} answers after one warm-up (\`bench/chunky-agent.js\`, a blocking message/send, from the ` +
      'request to the whole answer); Redis: bytes it received per answer (INFO stats `total_net_input_bytes`).', '',
      '| tasks in | ms per answer | vs memory | bytes to Redis per answer |', '| --- | ---: | ---: | ---: |',
      `| memory | ${c.memory.ms} | 1× | – |`,
      `| Redis (kvcache) | ${c.redis.ms} | ${ratio(c.redis.ms, c.memory.ms)}× | ${(c.redis.bytesPerAnswer / 2 ** 20).toFixed(1)} MiB ` +
      `(${ratio(c.redis.bytesPerAnswer, c.chunks * c.chunkBytes)}× the chunks) |`, '')
  }
  // (A run of the `chunks` case alone has no server of its own to show.)
  if (Object.keys(r.targets).length > 0) {
    lines.push('### Memory', '', `| server | RSS after start MB | RSS after the runs MB | RSS ${r.settings.idle} s later MB |`, '| --- | ---: | ---: | ---: |')
    for (const t of Object.values(r.targets)) lines.push(`| ${t.label} | ${t.rssStart} | ${t.rssAfter} | ${t.rssIdle} |`)
  }
  if (r.memory !== undefined) {
    lines.push('', `fastify-a2a, security off, after ${r.memory.tasks.toLocaleString('en')} more tasks through message/send ` +
      `(${r.memory.rps} tasks/s): **${r.memory.rss} MB** RSS (\`tasks.max_tasks\` 10,000 bounds the memory store).`)
  }
  lines.push('', '### Targets (ratios from this run)', '', '| target | this run | goal | |', '| --- | --- | --- | --- |')
  // A figure with no goal is marked as reported: it never fails, and is not counted with the targets.
  for (const c of checks(r)) lines.push(`| ${c.name} | ${c.value} | ${c.goal ?? '–'} | ${c.goal === null ? 'reported' : c.pass ? 'pass' : '**FAIL**'} |`)
  return lines.join('\n') + '\n'
}

/** Replaces what is between the markers of `file` with `body`, keeping the rest; creates the file when missing. */
export function writeReport (file, body) {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : `# Benchmarks\n\n${START}\n${END}\n`
  const a = text.indexOf(START)
  const b = text.indexOf(END)
  const next = a < 0 || b < a
    ? `${text.trimEnd()}\n\n${START}\n${body}${END}\n`
    : `${text.slice(0, a + START.length)}\n${body}${text.slice(b)}`
  writeFileSync(file, next)
}
