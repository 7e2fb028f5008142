import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { pushBodies } from '../services/a2a/push-bodies.js'
import { WebhookNotifier, type DeliveryQueue, type NotifierOptions } from '../services/push/notifier.js'
import { RedisPushOutbox } from '../services/push/outbox.js'
import { PushService } from '../services/push/service.js'
import type { PushOutbox } from '../services/push/store.js'
import { createHostLookups } from '../services/push/host-lookups.js'
import { createUrlPolicy, type UrlPolicy } from '../services/push/url-policy.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Delivers task state changes to the task's webhooks. */
    a2aNotifier: WebhookNotifier
    /** The rules of the push config methods over the store. */
    a2aPush: PushService
  }
}

export interface WebhookNotifierOptions {
  config: A2AConfig
  /** For tests: resolves webhook host names (the DNS-rebinding guard sees what it returns). */
  resolve?: (hostname: string) => Promise<Array<{ address: string, family: number }>>
  /** Push URLs exempt from the address and domain rules: the developer console's own sink URLs. */
  exemptUrl?: (url: URL) => boolean
  /** Told how each delivery attempt ended (metrics). */
  onAttempt?: NotifierOptions['onAttempt']
}

/**
 * How long an outbox entry is its writer's before any instance's relay may queue its deliveries: 2 s, or half the
 * lease TTL when that is shorter. A dead writer's entries are then always older than this by the time its lease has
 * lapsed (its last renewal came at most a third of the TTL before it died), so the relay takes them in the same round
 * as the reaper takes the task.
 */
function outboxGraceMs (leaseTtlSeconds: number): number {
  return Math.min(2000, leaseTtlSeconds * 500)
}

/** A claimed delivery on PostgreSQL stays its claimer's for the attempt's timeout and this many seconds more. */
const LOCK_MARGIN_S = 10

/**
 * The webhook notifier (CONTRACT.md §8.3): every state change of a task goes to each of its push configs. With
 * `tasks.backend: kvcache` deliveries go through a BullMQ queue in Redis, with `postgres` through a table of the
 * database; otherwise they are queued in memory. On
 * close it waits for queued deliveries up to `server.shutdown_timeout`, after the task drain.
 */
const webhookNotifier: FastifyPluginAsync<WebhookNotifierOptions> = async (fastify, opts) => {
  const { config } = opts
  const settings = config.push_notifications
  // Webhook names are chosen by clients: their lookups are bounded so they cannot take the resolver (host-lookups.ts),
  // a resolver given in the options too.
  const lookups = createHostLookups({ lookup: opts.resolve })
  const policy: UrlPolicy = createUrlPolicy({
    validateUrls: settings.validate_urls,
    requireHttps: settings.config.require_https,
    allowedDomains: settings.config.allowed_domains,
    allowedNetworks: settings.config.allowed_networks,
    resolve: lookups.resolve,
    exempt: opts.exemptUrl
  })
  const notifier = new WebhookNotifier({
    store: fastify.a2aPushConfigs,
    policy,
    log: fastify.log.child({ component: 'webhook-notifier' }),
    bodies: pushBodies(config.protocol.dialect),
    timeoutSeconds: settings.config.timeout,
    maxRetries: settings.config.max_retries,
    retryDelaySeconds: settings.config.retry_delay,
    defaultHeaders: settings.config.default_headers,
    signingSecret: settings.config.signing_secret,
    maxInFlight: settings.config.max_in_flight,
    onAttempt: opts.onAttempt
  })
  // Instances share tasks, so a delivery must outlive the instance that queued it (CONTRACT.md §10): it waits in the
  // shared store. This plugin is registered only while push is on, and then push configs live with the tasks
  // (validateConfig): the task store records each state change of a task with configs in the outbox, with the write
  // itself; every instance relays what a dead writer left there.
  const outboxLog = fastify.log.child({ component: 'push-outbox' })
  const queueLog = fastify.log.child({ component: 'webhook-queue' })
  let durable: { queue: DeliveryQueue, outbox: PushOutbox } | undefined
  const redis = fastify.a2aRedis
  const pool = fastify.a2aPostgres
  if (config.tasks.backend === 'kvcache' && redis !== null) {
    // BullMQ is loaded only then.
    const { DurableDeliveryQueue } = await import('../services/push/durable-queue.js')
    durable = {
      outbox: new RedisPushOutbox(redis, { taskKeyPrefix: config.tasks.key_prefix, graceMs: outboxGraceMs(config.tasks.lease_ttl), log: outboxLog }),
      queue: new DurableDeliveryQueue({
        client: redis,
        prefix: `${settings.key_prefix}bull`,
        notifier,
        store: fastify.a2aPushConfigs,
        maxRetries: settings.config.max_retries,
        concurrency: settings.config.max_in_flight,
        ttlSeconds: config.tasks.ttl,
        log: queueLog
      })
    }
  } else if (config.tasks.backend === 'postgres' && pool !== null) {
    // The outbox and the deliveries are tables of the tasks' database, the outbox row written in the change's own
    // transaction.
    const { PostgresDeliveryQueue, PostgresPushOutbox } = await import('../services/push/postgres-queue.js')
    durable = {
      outbox: new PostgresPushOutbox(pool, { graceMs: outboxGraceMs(config.tasks.lease_ttl), log: outboxLog }),
      queue: new PostgresDeliveryQueue({
        pool,
        notifier,
        store: fastify.a2aPushConfigs,
        concurrency: settings.config.max_in_flight,
        // An attempt takes at most its timeout (and a bounded name lookup): a claim outlasts it well.
        lockMs: (settings.config.timeout + LOCK_MARGIN_S) * 1000,
        log: queueLog
      })
    }
  }
  if (durable !== undefined) {
    notifier.useQueue(durable.queue, durable.outbox)
    // The relay runs on the reaper's timer, just before it: what a dead instance left unqueued goes out before the
    // failure the reaper then writes for its tasks, and in version order.
    fastify.a2aTasks.beforeReap(() => notifier.relay())
  }
  fastify.decorate('a2aNotifier', notifier)
  fastify.decorate('a2aPush', new PushService({ store: fastify.a2aPushConfigs, policy, ttlSeconds: config.tasks.ttl }))
  fastify.a2aTasks.onStatusChange((record, _previous, pushConfigs) => notifier.notify(record, false, pushConfigs))
  // Memory backends: a task the store evicts or expires takes its push configs with it, so they stay bounded too.
  const configs = fastify.a2aPushConfigs
  fastify.a2aTasks.store.onDelete?.(taskId => configs.forget?.(taskId))
  fastify.addHook('onClose', async () => {
    await notifier.close(config.server.shutdown_timeout * 1000)
    lookups.close()
  })
}

export default fp(webhookNotifier, {
  name: 'a2a-webhook-notifier',
  fastify: '5.x',
  dependencies: ['a2a-redis', 'a2a-postgres', 'a2a-tasks', 'a2a-push-config-store']
})
