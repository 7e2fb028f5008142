import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import { Server } from '@grpc/grpc-js'
import { HealthImplementation, type ServingStatus } from 'grpc-health-check'
import type { A2AConfig } from '../schemas/config.js'
import { buildAgentCard } from '../services/a2a/agent-card.js'
import { GrpcBinding } from '../services/grpc/binding.js'
import { GrpcListener } from '../services/grpc/listener.js'
import { SessionWatch } from '../services/grpc/flow.js'
import { V03_SERVICE, V1_SERVICE, protoCodec } from '../services/grpc/protos.js'
import { hostPort, listenFailure } from '../services/serving/listen-failure.js'
import { readiness, type ReadinessChecks } from '../services/serving/readiness.js'
import { auditCall } from './auth.js'

/** The gRPC binding as the plugin's instance shows it (`app.a2aGrpc`): filled in as the server is made and bound. */
export interface GrpcHandle {
  server?: Server
  binding?: GrpcBinding
  /** The bound port (the configured one, or the one taken for port 0); 0 until the instance is ready. */
  port: number
  /**
   * Stops taking calls (health NOT_SERVING, new calls UNAVAILABLE) while those accepted go on: called as the close
   * begins, before the task drain, at the moment HTTP starts answering 503 (index.ts). Idempotent.
   */
  stopAccepting?: () => void
}

export interface GrpcPluginOptions {
  config: A2AConfig
  /** The plugin prefix, for the public card (v0.3 `GetAgentCard`). */
  cardPrefix: string
  /** What `/ready` asks: the health service says SERVING while every check passes. */
  checks: ReadinessChecks
  /** Where the server, its binding and its port are shown (`app.a2aGrpc`). */
  handle: GrpcHandle
}

/** What shutting down leaves the streams the drain ended to send their last message, past the deadline if need be. */
const FLUSH_MS = 250

/** How often the health service asks the readiness checks. */
const HEALTH_INTERVAL_MS = 5000

/**
 * The gRPC binding's server (docs/protocol.md, "The gRPC binding"): both A2A services and `grpc.health.v1`,
 * on `protocol.grpc.port`. Registered in the JSON-RPC route context, whose authenticator and limits it shares. It
 * listens once the Fastify instance is ready and drains with it: on close it takes no new calls, waits for the task
 * drain, ends open streams with their snapshot, and is shut down within `server.shutdown_timeout`.
 */
const grpcPlugin: FastifyPluginAsync<GrpcPluginOptions> = async (fastify, opts) => {
  const { config } = opts
  const secured = config.security.enabled
  const audit = fastify.a2aAudit
  const metrics = fastify.a2aMetrics
  const card = buildAgentCard(config, { prefix: opts.cardPrefix })
  const log = fastify.log.child({ component: 'grpc' })
  const watch = new SessionWatch(config.server.write_timeout * 1000, log)
  const binding = new GrpcBinding({
    codec: protoCodec(),
    registry: fastify.a2aMethods,
    streams: fastify.a2aStreams,
    identify: fastify.a2aIdentify,
    apiKeyHeader: config.security.auth.api_key.header.toLowerCase(),
    audit: (caller, method, denied) => { if (secured) auditCall(audit, caller, method, denied) },
    log,
    budget: fastify.a2aAnswers,
    requests: fastify.a2aRequests,
    watch,
    publicCard: () => card,
    maxKeys: config.tasks.max_keys,
    idleCheckMs: config.server.heartbeat_interval * 1000,
    observe: metrics === null ? undefined : (method, code, seconds) => metrics.rpc(method, code, seconds)
  })
  const limits = config.protocol.grpc
  const server = new Server({
    // Requests above `server.max_request_size` are refused (RESOURCE_EXHAUSTED), as HTTP bodies are (413).
    'grpc.max_receive_message_length': config.server.max_request_size,
    'grpc.max_send_message_length': -1,
    // What one connection may hold (grpc-js sets no bound of its own: issue 39 row 1).
    'grpc.max_concurrent_streams': limits.max_concurrent_streams,
    'grpc-node.max_session_memory': limits.max_session_memory,
    'grpc.max_connection_idle_ms': limits.idle_timeout * 1000,
    'grpc.keepalive_time_ms': limits.keepalive_time * 1000,
    'grpc.keepalive_timeout_ms': limits.keepalive_timeout * 1000
  })
  // The port's sockets are this listener's: at most max_connections, each handed to grpc-js once its preface is in.
  const listener = new GrpcListener(server, { maxConnections: limits.max_connections, handshakeTimeoutMs: limits.handshake_timeout * 1000 })
  for (const [definition, handlers] of binding.services()) server.addService(definition, handlers)
  const health = new HealthImplementation({ '': 'NOT_SERVING', [V1_SERVICE]: 'NOT_SERVING', [V03_SERVICE]: 'NOT_SERVING' })
  health.addToServer(server)
  /** Set once the close has begun: from then on the health service says NOT_SERVING, whatever a check in flight finds. */
  let stopped = false
  const setHealth = (status: ServingStatus): void => {
    for (const name of ['', V1_SERVICE, V03_SERVICE]) health.setStatus(name, stopped ? 'NOT_SERVING' : status)
  }

  const { handle } = opts
  handle.server = server
  handle.binding = binding
  let timer: NodeJS.Timeout | undefined
  /** The readiness check in flight, if any: the close waits for it (whatever it finds, health stays NOT_SERVING). */
  let checking: Promise<void> | undefined

  /** SERVING while every readiness check passes (what `/ready` answers 200 for). */
  async function serving (): Promise<ServingStatus> {
    return (await readiness(opts.checks)).ok ? 'SERVING' : 'NOT_SERVING'
  }

  fastify.addHook('onReady', async () => {
    const { host } = config.server
    const address = hostPort(host, config.protocol.grpc.port)
    // A port in use and the like: the one line a failed start prints (services/serving/listen-failure.ts).
    handle.port = await listener.listen(host, config.protocol.grpc.port).catch(err => {
      throw listenFailure(err, { binding: 'gRPC', address, portHint: 'set protocol.grpc.port' })
    })
    setHealth(await serving())
    timer = setInterval(() => { checking = serving().then(setHealth) }, HEALTH_INTERVAL_MS).unref()
    fastify.log.info({ address, port: handle.port }, 'gRPC binding listening')
  })

  const stopAccepting = (): void => {
    stopped = true
    clearInterval(timer)
    setHealth('NOT_SERVING')
    binding.refuse()
  }
  handle.stopAccepting = stopAccepting

  fastify.addHook('preClose', async () => {
    // Everything below ends within server.shutdown_timeout: calls still running then are cut off.
    const deadline = Date.now() + config.server.shutdown_timeout * 1000
    stopAccepting()
    await checking
    // No new connections from here on; calls in flight finish as their tasks do. (A server never bound closes at once.)
    listener.close()
    const shutdown = new Promise<void>(resolve => server.tryShutdown(() => resolve())).then(() => listener.closed())
    await fastify.a2aTasks.drain(config.server.shutdown_timeout * 1000)
    binding.endAll()
    let late: NodeJS.Timeout | undefined
    // (A drain that took the whole time still leaves the streams it ended a moment to send their last message.)
    const expired = new Promise<boolean>(resolve => { late = setTimeout(() => resolve(true), Math.max(FLUSH_MS, deadline - Date.now())) })
    if (await Promise.race([shutdown.then(() => false), expired])) server.forceShutdown()
    clearTimeout(late)
    watch.close()
  })
}

export default fp(grpcPlugin, { name: 'a2a-grpc', fastify: '5.x' })
