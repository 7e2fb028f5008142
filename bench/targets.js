// The servers `npm run bench` measures (bench/run.js): how each is started, which loads it gets, the twins it is
// compared with, and our server's config files, written into the run's folder.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path => fileURLToPath(new URL(path, import.meta.url))
const API_KEY = 'bench-api-key-0123456789abcdef'

/**
 * The run's targets by id, and the `chunks` case's server. `dir`: the run's folder (config files, the spans file);
 * `nodeFlags`: node and V8 flags for our server only (`--node-options`).
 */
export function benchTargets ({ dir, nodeFlags }) {
  const ourConfig = (secured, redisUrl, replay = true, grpcPort, executor, postgresUrl, dedupe = true) => {
    const file = join(dir, `${executor !== undefined ? 'chunks-' : ''}${postgresUrl !== undefined ? 'postgres' : redisUrl !== undefined ? 'redis' : secured ? 'secured' : replay ? 'open' : 'no-replay'}${grpcPort !== undefined ? `-grpc-${grpcPort}` : ''}${dedupe ? '' : '-no-dedupe'}.yml`)
    const lines = ['agent:', '  name: Bench Agent', 'push_notifications:', '  config:', '    allowed_networks: [127.0.0.1/32]']
    // The agent of the `chunks` case.
    if (executor !== undefined) lines.splice(2, 0, `  executor: ${executor}`)
    // The gRPC binding beside HTTP, for its loads.
    if (grpcPort !== undefined) lines.push('protocol:', '  grpc:', '    enabled: true', `    port: ${grpcPort}`, `    advertised_url: 127.0.0.1:${grpcPort}`)
    // No events kept for streams that resume: what keeping them costs, by comparison.
    if (!replay) lines.push('server:', '  stream_replay:', '    max_events: 0')
    // Tasks, push configs and deliveries in Redis: the scale-out mode (CONTRACT.md §10).
    if (redisUrl !== undefined) {
      lines.push('  backend: kvcache', 'tasks:', '  backend: kvcache', 'services:', '  cache:', '    type: cache', `    url: ${redisUrl}`)
    }
    // Tasks, push configs and deliveries in PostgreSQL, with no Redis: the other scale-out mode.
    if (postgresUrl !== undefined) {
      lines.push('  backend: postgres', 'tasks:', '  backend: postgres', 'services:', '  postgres:', `    url: "${postgresUrl}"`)
    }
    // One principal sends all the load: the limits are raised so that they run on every request without refusing any.
    if (secured) {
      lines.push('security:', '  enabled: true', '  auth_type: api_key', '  auth:', '    api_key:', '      keys:',
        `        - { key: ${API_KEY}, id: bench }`, '  rate_limit:', '    requests_per_minute: 1000000000',
        '    burst: 1000000000', '    max_streams_per_principal: 100000')
    }
    // Sends not deduplicated (`tasks.dedupe_window: 0`): what claiming each messageId costs, by comparison.
    if (!dedupe) {
      const tasks = lines.indexOf('tasks:')
      if (tasks < 0) lines.push('tasks:', '  dedupe_window: 0')
      else lines.splice(tasks + 1, 0, '  dedupe_window: 0')
    }
    writeFileSync(file, lines.join('\n') + '\n')
    return file
  }
  /** Our server's arguments; `cli`: another build's (the one without tracing), `preload`: node flags before it. */
  const ours = (secured, replay, cli = here('../dist/cli.js'), preload = [], dedupe = true) => (port, redisUrl, grpcPort, postgresUrl) =>
    [...nodeFlags, ...preload, cli, 'serve', '--config', ourConfig(secured, redisUrl, replay, grpcPort, undefined, postgresUrl, dedupe), '--host', '127.0.0.1', '--port', String(port)]
  /** Where the server with the SDK registered writes how many spans it ended (bench/otel-noop.js). */
  const SPANS_FILE = join(dir, 'otel-spans.txt')
  /** The `chunks` case's server: the chunky agent, tasks in memory or (`redisUrl`) in Redis. */
  const chunkServer = (port, redisUrl) =>
    [...nodeFlags, here('../dist/cli.js'), 'serve', '--config', ourConfig(false, redisUrl, true, undefined, here('./chunky-agent.js')), '--host', '127.0.0.1', '--port', String(port)]
  const TARGETS = {
    bare: { label: 'bare Fastify (canned Task)', args: port => [here('./bare.js'), String(port)], loads: ['send'] },
    // A reference, not a target: what the least an A2A message/send can do costs on the same stack.
    floor: { label: 'the floor (least message/send)', args: port => [here('./floor.js'), String(port)], loads: ['send'] },
    // A reference too: what grpc-js alone costs a unary SendMessage (a canned Task), next to our gRPC binding's.
    'bare-grpc': { label: 'bare grpc-js (canned Task)', args: (port, _redis, grpcPort) => [here('./bare-grpc.js'), String(port), String(grpcPort)], loads: ['send-grpc'], grpc: true },
    // Below it: Node's own HTTP/2 answering the same call with canned bytes, no gRPC library on the server.
    'bare-h2': { label: 'bare node:http2 (canned gRPC reply)', args: (port, _redis, grpcPort) => [here('./bare-h2.js'), String(port), String(grpcPort)], loads: ['send-grpc'], grpc: true },
    peer: { label: '@a2a-js/sdk 0.3.14 + express', args: port => [here('./peer.js'), String(port)], loads: ['send', 'stream', 'push'] },
    // Today's peer: @a2a-js/sdk 1.3, v1.0 in its three bindings from one handler (JSON-RPC and REST on express, gRPC).
    'peer-v1': {
      label: '@a2a-js/sdk 1.3 + express, grpc-js',
      args: (port, _redis, grpcPort) => [here('./peer-v1.js'), String(port), String(grpcPort)],
      loads: [['send-v1', 'send-rest', 'send-grpc'], ['stream-v1', 'stream-rest', 'stream-grpc']],
      // Without it the SDK takes a request (and a gRPC call) for v0.3, which it no longer serves.
      headers: { 'a2a-version': '1.0' },
      grpc: true,
      ready: 'SendMessage'
    },
    // v1.0 (SendMessage, SendStreamingMessage) beside v0.3, in the same server process: CPU per request compared.
    // And the HTTP+JSON routes (POST /message:send, /message:stream) and gRPC, compared with JSON-RPC v1.0.
    // A group of loads (an array) is measured together, its runs taking turns: see measureTogether.
    // A twin's load goes to a server of its own, alive beside the first so that the two take turns, each with the same
    // config (and a gRPC port of its own) but for what is compared, at the noise of one run:
    // - `stream-no-replay`: `server.stream_replay.max_events: 0`, what keeping events for streams that resume costs;
    // - `send-otel`: OpenTelemetry's SDK registered with a no-op exporter (bench/otel-noop.js), what recording costs;
    // - `send-no-dedupe`: `tasks.dedupe_window: 0`, what claiming each send's messageId costs (idempotent sends).
    ours: {
      label: 'fastify-a2a, security off',
      args: ours(false),
      loads: [['send', 'send-otel', 'send-no-dedupe', 'send-v1', 'send-rest', 'send-grpc'], ['stream', 'stream-no-replay', 'stream-v1', 'stream-rest', 'stream-grpc'], 'push'],
      memory: true,
      grpc: true,
      untraced: true,
      twins: {
        'stream-no-replay': { args: ours(false, false) },
        'send-otel': { args: ours(false, true, undefined, ['--import', here('./otel-noop.js')]), spans: SPANS_FILE },
        'send-no-dedupe': { args: ours(false, true, undefined, [], false) }
      }
    },
    'ours-key': { label: 'fastify-a2a, API key', args: ours(true), loads: ['send', 'stream', 'push'], headers: { 'x-api-key': API_KEY } },
    // Security off, tasks and push configs in Redis: what one instance of the scale-out mode does, and costs Redis.
    // Its twin `send-no-dedupe` on the same Redis: what the claim of each send's messageId costs there (a round trip).
    'ours-redis': {
      label: 'fastify-a2a, Redis (kvcache)',
      args: ours(false),
      loads: [['send', 'send-no-dedupe'], 'stream'],
      redis: true,
      twins: { 'send-no-dedupe': { args: ours(false, true, undefined, [], false) } }
    },
    // Two instances on one Redis, the load's connections shared between them round-robin (no proxy): on 2 cores this
    // cannot show scaling; it measures what two instances cost one Redis. CPU and RSS are the two servers' sums.
    'ours-redis-2': { label: 'fastify-a2a, Redis, two instances', args: ours(false), loads: ['send'], redis: true, instances: 2 },
    // Tasks and push configs in PostgreSQL (a database of its own on the run's server), and the peer on the same server
    // with its own database stores (@a2a-js/sdk 1.3, which speaks v1.0: compared on SendMessage).
    'ours-postgres': { label: 'fastify-a2a, PostgreSQL', args: ours(false), loads: [['send', 'send-v1'], 'stream'], postgres: true },
    'peer-v1-postgres': {
      label: '@a2a-js/sdk 1.3 + express, PostgreSQL (its DatabaseTaskStore)',
      args: (port, _redis, _grpc, postgresUrl) => [here('./peer-v1-postgres.js'), String(port), postgresUrl],
      loads: ['send-v1'],
      // Without it the SDK takes a request for v0.3, which it no longer serves.
      headers: { 'a2a-version': '1.0' },
      postgres: true,
      // Its tables are made by the SDK's own migrations command.
      migrate: url => ['a2a-db', [here('../node_modules/@a2a-js/sdk-v1/dist/cli/a2a_db.js'), 'upgrade', '--url', url]],
      ready: 'SendMessage'
    }
  }
  return { TARGETS, chunkServer }
}
