// The package loads what a configuration does not use only when it does (docs/architecture.md, "What loads when"):
// the gRPC stack (grpc-js, protobufjs, the protos: 110 modules) only with protocol.grpc.enabled, BullMQ only with
// the Redis task store, the PostgreSQL driver only with a PostgreSQL backend, OpenTelemetry's SDK and @fastify/otel
// only with telemetry.enabled (test/telemetry.test.ts starts them). (YAML, loaded only by the config file loader,
// cannot be checked here: tap itself loads it.)
import { createRequire } from 'node:module'
import t from 'tap'
import { createServer } from '../server.js'
import { validateConfig } from '../services/config/load.js'
import { build, listenGrpc } from './helper.js'

const require = createRequire(import.meta.url)
/** The SDK and what it brings (the exporters, the SDK's trace, metrics and logs parts), and the Fastify instrumentation. */
const TELEMETRY = [
  '@opentelemetry/sdk-node', '@opentelemetry/sdk-trace', '@opentelemetry/sdk-metrics', '@opentelemetry/sdk-logs',
  '@opentelemetry/exporter-trace-otlp-proto', '@opentelemetry/exporter-trace-otlp-http', '@fastify/otel'
]
const LAZY = ['@grpc/grpc-js', 'protobufjs', '@grpc/proto-loader', 'grpc-health-check', 'bullmq', 'pg', ...TELEMETRY]

/** The lazily loaded packages this process has loaded so far. */
const loaded = (names = LAZY): string[] => names.filter(name => Object.keys(require.cache).some(file => file.includes(`/node_modules/${name}/`)))

t.test('the standalone server with the default config loads no OpenTelemetry SDK and no @fastify/otel', async t => {
  const app = await createServer(validateConfig({ server: { log_level: 'silent' } }))
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'hi' }] } } } })
  t.equal(res.json().result.status.state, 'completed')
  t.same(loaded(TELEMETRY), [])
})

t.test('an app without gRPC loads no gRPC module, no BullMQ and no pg; one with gRPC loads the gRPC stack then', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/.well-known/agent-card.json' })
  t.equal(res.statusCode, 200)
  t.same(loaded(), [], 'nothing of the gRPC stack, BullMQ, pg or OpenTelemetry\'s SDK is loaded')
  await listenGrpc(t)
  t.same(loaded(), ['@grpc/grpc-js', 'protobufjs', '@grpc/proto-loader', 'grpc-health-check'], 'the gRPC binding brings its stack')
})
