// The package loads what a configuration does not use only when it does (docs/architecture.md, "What loads when"):
// the gRPC stack (grpc-js, protobufjs, the protos: 110 modules) only with protocol.grpc.enabled, BullMQ only with
// the Redis task store, the PostgreSQL driver only with a PostgreSQL backend. (YAML, loaded only by the config file loader, cannot be checked here: tap itself loads it.)
import { createRequire } from 'node:module'
import t from 'tap'
import { build, listenGrpc } from './helper.js'

const require = createRequire(import.meta.url)
const LAZY = ['@grpc/grpc-js', 'protobufjs', '@grpc/proto-loader', 'grpc-health-check', 'bullmq', 'pg']

/** The lazily loaded packages this process has loaded so far. */
const loaded = (): string[] => LAZY.filter(name => Object.keys(require.cache).some(file => file.includes(`/node_modules/${name}/`)))

t.test('an app without gRPC loads no gRPC module, no BullMQ and no pg; one with gRPC loads the gRPC stack then', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/.well-known/agent-card.json' })
  t.equal(res.statusCode, 200)
  t.same(loaded(), [], 'nothing of the gRPC stack, BullMQ or pg is loaded')
  await listenGrpc(t)
  t.same(loaded(), ['@grpc/grpc-js', 'protobufjs', '@grpc/proto-loader', 'grpc-health-check'], 'the gRPC binding brings its stack')
})
