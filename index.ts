import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { A2AConfig, A2AConfigInput } from './schemas/config.js'
import type { AgentExecutor } from './services/agent/executor.js'
import { loadExecutor } from './services/agent/load.js'
import { withOwnAgentSkill } from './services/a2a/agent-card.js'
import { withPluginExtensions, type ExtensionDefinition } from './services/a2a/extensions.js'
import { validateConfig } from './services/config/validate.js'
import {
  MemoryFailureWindows, MemoryTokenBuckets, RedisFailureWindows, RedisTokenBuckets, type FailureWindows, type TokenBuckets
} from './services/auth/limits.js'
import { MemoryStreamSlots, RedisStreamSlots, type StreamSlots } from './services/auth/stream-slots.js'
import { InvalidPluginOptions } from './services/kernel/errors.js'
import type { Redis } from 'ioredis'
import methodsPlugin from './plugins/methods.js'
import pushConfigStore from './plugins/push-config-store.js'
import postgresPlugin from './plugins/postgres.js'
import redisPlugin from './plugins/redis.js'
import webhookNotifier from './plugins/webhook-notifier.js'
import ssePlugin from './plugins/sse.js'
import answersPlugin from './plugins/answers.js'
import requestsPlugin from './plugins/requests.js'
import tasksPlugin from './plugins/tasks.js'
import metricsPlugin from './plugins/metrics.js'
import jsonRpcRoutes from './routes/json-rpc.js'
import wellKnownRoutes from './routes/well-known.js'
import metricsRoutes from './routes/metrics.js'
import consoleRoutes from './routes/console.js'
import rootRoutes from './routes/root.js'
import type { GrpcHandle } from './plugins/grpc.js'
import { ConsoleSinks, consoleEnabled } from './services/console/sinks.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The validated configuration this agent runs with. */
    a2aConfig: A2AConfig
    /** The gRPC binding when `protocol.grpc.enabled` (its server, and its port once ready); null otherwise. */
    a2aGrpc: GrpcHandle | null
  }
}

/** Redis keys of the shared rate-limit state. */
const RATE_PREFIX = 'a2a:rate:'

export interface A2AOptions {
  /** Where the agent's routes live in the host app. Default `/`. */
  prefix?: string
  /** The configuration (CONTRACT.md §2): any part of it; the rest takes its defaults. Validated at register time. */
  config?: A2AConfigInput
  /** The agent. Default: `agent.executor` from the config (the built-in agent). */
  executor?: AgentExecutor
  /** Directory that relative paths in the config are resolved against (`agent.executor`). Default `process.cwd()`. */
  cwd?: string
  /** A Redis client for the kvcache backends, borrowed (never closed by the plugin) instead of one from `services`. */
  redis?: Redis
  /**
   * Resolves webhook host names instead of DNS (tests, custom resolvers). What it returns still passes the
   * private-address check at connect time.
   */
  resolveWebhookHost?: (hostname: string) => Promise<Array<{ address: string, family: number }>>
  /**
   * Extensions of the app's own (A2A v1.0 §4.6): each declared on the card after `agent.extensions`, with hooks run
   * around a method when a request activates it (docs/embedding.md, "Extensions of your own"); a URI declared twice is refused.
   */
  extensions?: ExtensionDefinition[]
}

/**
 * The A2A agent as a Fastify plugin: `app.register(a2a, { prefix: '/agent', config, executor })`. Everything it
 * adds lives under the prefix; the host's routes, hooks and error handler are left alone.
 */
const a2a: FastifyPluginAsync<A2AOptions> = async (fastify, opts) => {
  if (fastify.hasDecorator('a2aTasks')) {
    throw new InvalidPluginOptions('fastify-a2a is already registered in this context; register each agent in its own encapsulated context')
  }
  const validated = withPluginExtensions(validateConfig(opts.config ?? {}), opts.extensions)
  const own = withOwnAgentSkill(validated, opts.executor !== undefined)
  if (own !== validated) {
    fastify.log.warn({ skill: own.agent.skills[0].name },
      'the agent has an executor of its own and no agent.skills: the card lists one skill named after it; describe the agent in agent.skills')
  }
  const pluginTimeout = fastify.initialConfig.pluginTimeout as number
  const config = withinCloseBudget(own, pluginTimeout)
  // (Cut by the margin alone, as Fastify's and this plugin's defaults are, it goes unsaid.)
  if (config !== own && own.server.shutdown_timeout * 1000 > pluginTimeout) {
    fastify.log.warn({ shutdown_timeout: own.server.shutdown_timeout, pluginTimeout, used: config.server.shutdown_timeout },
      'server.shutdown_timeout is cut short: Fastify gives each close hook pluginTimeout ms; raise the host\'s pluginTimeout above it')
  }
  const prefix = normalizePrefix(opts.prefix ?? '/')
  const executor = opts.executor ?? await loadExecutor(config.agent.executor, {
    cwd: opts.cwd ?? process.cwd(),
    delayMs: config.agent.delay_ms,
    llm: config.agent.llm
  })
  if (typeof executor !== 'function') throw new InvalidPluginOptions('executor: must be a function')

  fastify.decorate('a2aConfig', config)
  // The developer console's webhook sink, whose own URLs the push URL policy lets through (CONTRACT.md §3).
  const sinks = consoleEnabled(config) ? new ConsoleSinks({ prefix, addresses: () => fastify.addresses() }) : undefined
  const grpc: GrpcHandle | null = config.protocol.grpc.enabled ? { port: 0 } : null
  fastify.decorate('a2aGrpc', grpc)
  // Every binding stops taking new work at the moment the close begins (HTTP answers 503 from then on), before the
  // task drain the tasks and SSE plugins' preClose hooks await: added before theirs, this hook runs first.
  if (grpc !== null) fastify.addHook('preClose', async () => { grpc.stopAccepting?.() })
  // First: a start that cannot use its PostgreSQL fails before anything else is opened.
  await fastify.register(postgresPlugin, { config })
  await fastify.register(redisPlugin, { config, redis: opts.redis })
  await fastify.register(tasksPlugin, { config, executor })
  await fastify.register(metricsPlugin, { config })
  const metrics = fastify.a2aMetrics
  const push = config.push_notifications.enabled
  if (push) {
    await fastify.register(pushConfigStore, { config })
    await fastify.register(webhookNotifier, { config, resolve: opts.resolveWebhookHost, exemptUrl: sinks?.owns, onAttempt: metrics?.webhookAttempt })
  }
  await fastify.register(methodsPlugin, { config, prefix, startedAt: Date.now(), push: push ? fastify.a2aPush : undefined, extensions: opts.extensions })
  await fastify.register(answersPlugin, { config })
  await fastify.register(requestsPlugin, { config })
  await fastify.register(ssePlugin, {
    maxStreams: config.server.max_streams,
    slots: streamSlotsOf(config, fastify),
    heartbeatMs: config.server.heartbeat_interval * 1000,
    // Streams wait for the task drain at shutdown, so they see their tasks finish.
    beforeShutdown: () => fastify.a2aTasks.drain(config.server.shutdown_timeout * 1000)
  })

  const routePrefix = prefix === '/' ? '' : prefix
  // fp drops `prefix` on this outer plugin, so the encapsulated route plugins get it.
  await fastify.register(jsonRpcRoutes, {
    prefix: routePrefix,
    bodyLimit: config.server.max_request_size,
    auth: { config, ...limitsOf(config, fastify.a2aRedis), onIntrospectionCache: metrics?.introspectionCache },
    rest: config.protocol.rest,
    cardPrefix: prefix,
    grpc: grpc === null ? undefined : { checks: readinessChecks(fastify), handle: grpc }
  })
  if (metrics !== null) await fastify.register(metricsRoutes, { prefix: routePrefix, metrics })
  await fastify.register(wellKnownRoutes, {
    prefix: routePrefix,
    config,
    cardPrefix: prefix,
    checks: readinessChecks(fastify)
  })
  if (sinks !== undefined) await fastify.register(consoleRoutes, { prefix: routePrefix, sinks })
  // GET / (POST / is JSON-RPC's): public, outside the JSON-RPC context and its authentication.
  await fastify.register(rootRoutes, { prefix: routePrefix, config, base: routePrefix })
}

/**
 * The rate-limit state of CONTRACT.md §9: failed authentications per IP, and request buckets per principal when
 * rate limiting is on. In Redis when one is configured, so every instance shares them.
 */
function limitsOf (config: A2AConfig, redis: Redis | null): { buckets?: TokenBuckets, failures: FailureWindows } {
  const limits = config.security.rate_limit
  const bucketOptions = { perMinute: limits.requests_per_minute, burst: limits.burst }
  const failures = redis === null
    ? new MemoryFailureWindows({ perMinute: limits.failed_auth_per_minute })
    : new RedisFailureWindows(redis, { perMinute: limits.failed_auth_per_minute, keyPrefix: `${RATE_PREFIX}fail:` })
  if (!config.security.enabled || !limits.enabled) return { failures }
  const buckets = redis === null
    ? new MemoryTokenBuckets(bucketOptions)
    : new RedisTokenBuckets(redis, { ...bucketOptions, keyPrefix: `${RATE_PREFIX}bucket:` })
  return { buckets, failures }
}

/**
 * Open streams per principal (CONTRACT.md §9), with security on only: counted in Redis when one is configured, so
 * the limit holds across instances (CONTRACT.md §10).
 */
function streamSlotsOf (config: A2AConfig, fastify: FastifyInstance): StreamSlots | undefined {
  if (!config.security.enabled) return undefined
  const max = config.security.rate_limit.max_streams_per_principal
  const redis = fastify.a2aRedis
  return redis === null
    ? new MemoryStreamSlots(max)
    : new RedisStreamSlots(redis, { max, keyPrefix: `${RATE_PREFIX}streams:`, log: fastify.log.child({ component: 'stream-slots' }) })
}

/** What `/ready` asks: every backend in use (CONTRACT.md §3). */
function readinessChecks (fastify: FastifyInstance): Record<string, () => Promise<void>> {
  const checks: Record<string, () => Promise<void>> = { tasks: () => fastify.a2aTasks.store.ping() }
  const redis = fastify.a2aRedis
  if (redis !== null) checks.redis = async () => { await redis.ping() }
  const postgres = fastify.a2aPostgres
  if (postgres !== null) checks.postgres = async () => { await postgres.query('SELECT 1') }
  return checks
}

/** What a close hook keeps of Fastify's bound on it, after the drain, for what follows the drain. */
const CLOSE_MARGIN_MS = 500

/**
 * The configuration with `server.shutdown_timeout` cut to what the host allows: Fastify fails a close hook that
 * runs longer than its `pluginTimeout` (0: no bound), and a drain cut off there would end no stream with its
 * task's last state. The standalone server raises `pluginTimeout` to fit the drain; a host app may too.
 */
export function withinCloseBudget (config: A2AConfig, pluginTimeoutMs: number): A2AConfig {
  if (pluginTimeoutMs <= 0) return config
  const budget = Math.max(0, pluginTimeoutMs - CLOSE_MARGIN_MS) / 1000
  if (config.server.shutdown_timeout <= budget) return config
  return { ...config, server: { ...config.server, shutdown_timeout: budget } }
}

/** `/agent/` and `agent` become `/agent`; empty and `/` stay `/`. */
function normalizePrefix (prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, '')
  if (trimmed === '') return '/'
  return trimmed.startsWith('/') ? trimmed : '/' + trimmed
}

export default fp(a2a, { name: 'fastify-a2a', fastify: '5.x' })

// The decorators the plugin adds (app.a2aMethods, app.a2aTasks, ...) are declared next to the plugins that add
// them; these re-exports bring each declaration into the package's entry point, so a host app gets their types.
export type { MethodsPluginOptions } from './plugins/methods.js'
export type { TasksPluginOptions } from './plugins/tasks.js'
export type { SsePluginOptions } from './plugins/sse.js'
export type { AnswersPluginOptions } from './plugins/answers.js'
export type { PushConfigStoreOptions } from './plugins/push-config-store.js'
export type { RedisPluginOptions } from './plugins/redis.js'
export type { WebhookNotifierOptions } from './plugins/webhook-notifier.js'
export type { AuthPluginOptions } from './plugins/auth.js'
export type { MetricsPluginOptions } from './plugins/metrics.js'
export type { GrpcPluginOptions, GrpcHandle } from './plugins/grpc.js'
export type { MethodRegistry, MethodDefinition, MethodContext } from './services/json-rpc/registry.js'
export type { TaskService } from './services/tasks/task-service.js'
/** TypeBox, the schema builder of `app.a2aMethods.add({ params })`: the same copy the plugin compiles with. */
export { Type, type Static, type TSchema } from '@sinclair/typebox'
export type { A2AConfig, A2AConfigInput } from './schemas/config.js'
export type { AgentExecutor, ExecutionContext, ExecutorEvent, ExecutorResult, AgentTools } from './services/agent/executor.js'
export type { Task, Message, Part, Artifact, TaskState } from './schemas/task.js'
export type { Principal } from './services/auth/principal.js'
export { traceLogFields } from './services/kernel/tracing.js'
export type { AgentCard } from './services/a2a/agent-card.js'
export { IDEMPOTENT_SEND_EXTENSION } from './services/a2a/extensions.js'
/** An A2A error a method or an extension's hook throws to refuse a call: the client gets its code, message and data. */
export { JsonRpcError, RpcCode } from './services/kernel/errors.js'
export type { ExtensionDefinition, ExtensionHooks, ExtensionCall } from './services/a2a/extensions.js'
export { validateConfig } from './services/config/validate.js'
export { buildAgentCard } from './services/a2a/agent-card.js'
