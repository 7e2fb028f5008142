import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import type { AgentExecutor, AgentTools } from '../services/agent/executor.js'
import type { Principal } from '../services/auth/principal.js'
import { createAgentTools } from '../services/json-rpc/agent-tools.js'
import { postgresService } from '../services/config/postgres-service.js'
import { InvalidPluginOptions } from '../services/kernel/errors.js'
import { startSweeper, sweepIntervalMs, type Sweeper } from '../services/kernel/sweeper.js'
import { MemoryTaskEventBus, type TaskEventBus } from '../services/tasks/event-bus.js'
import type { TaskSince } from '../services/tasks/postgres-store.js'
import { RedisTaskLeases, type TaskLeases } from '../services/tasks/leases.js'
import { MemoryTaskStore } from '../services/tasks/memory-store.js'
import type { TaskStore } from '../services/tasks/store.js'
import { TaskService } from '../services/tasks/task-service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The task service: state machine, executor runs, cancellation, the per-task event bus. */
    a2aTasks: TaskService
  }
}

export interface TasksPluginOptions {
  config: A2AConfig
  executor: AgentExecutor
}

/**
 * Creates the task store and event bus of `tasks.backend` and the task service over them. With kvcache, tasks,
 * events, cancellation and leases live in Redis; with postgres, in PostgreSQL (events and cancels by LISTEN/NOTIFY);
 * either way every instance reaps the tasks of instances that died (CONTRACT.md §10). On close, running tasks get
 * `server.shutdown_timeout` to finish before they are failed (CONTRACT.md §6, shutdown).
 */
const tasksPlugin: FastifyPluginAsync<TasksPluginOptions> = async (fastify, opts) => {
  const { config } = opts
  const settings = config.tasks
  const log = fastify.log.child({ component: 'tasks' })
  let store: TaskStore
  let bus: TaskEventBus
  let leases: TaskLeases | undefined
  let sweeper: Sweeper | undefined
  if (settings.backend === 'kvcache') {
    const client = fastify.a2aRedis
    /* c8 ignore next -- validateConfig refuses kvcache without a cache service; a guard for direct use */
    if (client === null) throw new InvalidPluginOptions('tasks.backend: kvcache needs a services entry with type: cache')
    const push = config.push_notifications
    // Loaded only when used: the store, its scripts and its event bus are 50 KB of code the memory mode never runs.
    const [{ RedisTaskEventBus }, { RedisTaskStore }] = await Promise.all([
      import('../services/tasks/redis-event-bus.js'),
      import('../services/tasks/redis-store.js')
    ])
    // A chunk announced by another instance without its task is added to the task as read from the store when this
    // instance has not seen the version before it.
    const events = new RedisTaskEventBus(client, { keyPrefix: settings.key_prefix, log, load: async id => await store.get(id) })
    store = new RedisTaskStore(client, {
      keyPrefix: settings.key_prefix,
      ttlSeconds: settings.ttl,
      leaseTtlMs: settings.lease_ttl * 1000,
      maxLivePerOwner: settings.max_live_per_principal,
      // A context index outlives every task of its context: a task is kept `ttl` after its last write, and an
      // interrupted one is canceled (a write) `interrupted_ttl` after its last.
      indexTtlMs: (settings.ttl + settings.interrupted_ttl) * 1000,
      // Push configs in Redis too (validateConfig requires it while push is on): a state change and the record that
      // its webhooks are due land in one script.
      pushKeyPrefix: push.enabled ? push.key_prefix : undefined,
      // A write publishes its event from its own script.
      announcer: events,
      // Each write keeps its event in Redis as the memory store keeps it in memory: as many, as long.
      replay: { maxEvents: config.server.stream_replay.max_events, ttlSeconds: config.server.stream_replay.ttl }
    })
    bus = events
    leases = new RedisTaskLeases(client, { keyPrefix: settings.key_prefix, ttlMs: settings.lease_ttl * 1000, log })
  } else if (settings.backend === 'postgres') {
    const pool = fastify.a2aPostgres
    /* c8 ignore next -- validateConfig refuses postgres without services.postgres; a guard for direct use */
    if (pool === null) throw new InvalidPluginOptions('tasks.backend: postgres needs services.postgres')
    // Loaded only when used, with the driver (plugins/postgres.ts).
    const [{ PostgresTaskStore }, { PostgresTaskEventBus, EVENTS_CHANNEL }, { PostgresTaskLeases }, { connectOnce }, { storeQuery }] = await Promise.all([
      import('../services/tasks/postgres-store.js'),
      import('../services/tasks/postgres-event-bus.js'),
      import('../services/tasks/postgres-leases.js'),
      import('../services/postgres/connect.js'),
      import('../services/postgres/query.js')
    ])
    const url = (postgresService(config) as { url: string }).url
    // Events and cancellations cross instances by LISTEN/NOTIFY: each write notifies from its own function call.
    const events = new PostgresTaskEventBus({
      connect: async () => await connectOnce(url, 5000, true),
      notify: async payload => await storeQuery(pool, 'SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, payload]),
      since: async (id, after): Promise<TaskSince | null> => await pgStore.since(id, after),
      log
    })
    const pgStore = new PostgresTaskStore(pool, {
      ttlSeconds: settings.ttl,
      maxLivePerOwner: settings.max_live_per_principal,
      replay: { maxEvents: config.server.stream_replay.max_events, ttlSeconds: config.server.stream_replay.ttl },
      leaseTtlMs: settings.lease_ttl * 1000,
      announcer: events,
      // Push configs are in this database while push is on (validateConfig): its changes go to the outbox with them.
      pushOutbox: config.push_notifications.enabled
    })
    store = pgStore
    bus = events
    leases = new PostgresTaskLeases(pool, { ttlMs: settings.lease_ttl * 1000, log })
    // The app serves once the bus has tried to listen: a bus that could not goes on trying, and streams are refused
    // with 503 until it listens.
    await events.start()
    // Terminal tasks past `tasks.ttl` are no longer read; their rows are deleted, with their events.
    sweeper = startSweeper(() => pgStore.deleteExpired(), { intervalMs: sweepIntervalMs(settings.ttl), log, failure: 'expired tasks not deleted' })
  } else {
    store = new MemoryTaskStore({
      maxTasks: settings.max_tasks,
      maxBytes: settings.max_bytes,
      maxLivePerOwner: settings.max_live_per_principal,
      ttlSeconds: settings.ttl,
      replay: { maxEvents: config.server.stream_replay.max_events, ttlSeconds: config.server.stream_replay.ttl }
    })
    bus = new MemoryTaskEventBus()
  }
  // One tools object per principal, made when its first task runs: a principal (the anonymous one, one per API key
  // or token, one per cached introspection) outlives its tasks, and the tools are the same for each of them.
  const tools = new WeakMap<Principal, AgentTools>()
  const service = new TaskService({
    store,
    bus,
    leases,
    executor: opts.executor,
    // A run keeps retrying a write its storage refused for as long as its lease would last unrenewed.
    storeRetryMs: settings.lease_ttl * 1000,
    interruptedTtlMs: settings.interrupted_ttl * 1000,
    // Idempotent sends (docs/protocol.md, "Idempotent sends").
    dedupeWindowMs: settings.dedupe_window * 1000,
    log,
    // The registry is decorated after this plugin; it is only read when a task runs.
    toolsFor: (principal, extensions) => {
      // A message whose request activated extensions gets tools of its own, which carry them (few do).
      if (extensions.length > 0) return createAgentTools(fastify.a2aMethods, principal, log, extensions)
      let found = tools.get(principal)
      if (found === undefined) tools.set(principal, (found = createAgentTools(fastify.a2aMethods, principal, log)))
      return found
    }
  })

  let reaper: NodeJS.Timeout | undefined
  if (leases !== undefined) {
    reaper = setInterval(() => {
      service.reapOrphans().catch((err: unknown) => log.warn({ err }, 'orphaned tasks not reaped'))
    }, Math.max(100, settings.lease_ttl * 500)).unref()
  }

  // Interrupted tasks are looked for four times per `tasks.interrupted_ttl`, at least every 100 ms, at most a minute.
  const expiry = setInterval(() => {
    service.expireInterrupted().catch((err: unknown) => log.warn({ err }, 'interrupted tasks not expired'))
  }, Math.min(60_000, Math.max(100, settings.interrupted_ttl * 250))).unref()

  fastify.decorate('a2aTasks', service)
  fastify.addHook('preClose', async () => {
    clearInterval(reaper)
    clearInterval(expiry)
    await sweeper?.stop()
    await service.drain(config.server.shutdown_timeout * 1000)
  })
  fastify.addHook('onClose', async () => {
    await leases?.close()
    await bus.close()
    await store.close()
  })
}

export default fp(tasksPlugin, { name: 'a2a-tasks', fastify: '5.x', dependencies: ['a2a-redis', 'a2a-postgres'] })
