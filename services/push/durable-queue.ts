import { DelayedError, Queue, Worker, type Job } from 'bullmq'
import type { Redis } from 'ioredis'
import type { Logger } from '../kernel/logger.js'
import type { TraceCarrier } from '../kernel/tracing.js'
import { within } from '../kernel/within.js'
import { quitWithin } from '../redis/client.js'
import { logUnlessConnectionError } from '../redis/outage.js'
import type { DeliveryQueue, WebhookNotifier } from './notifier.js'
import { deliveryJobId } from './webhook-post.js'
import type { PushConfigStore, StoredPushConfig } from './store.js'

export interface DurableDeliveryQueueOptions {
  /** Borrowed: the queue adds jobs through it; the worker opens its own connections from it (and closes them). */
  client: Redis
  /** Prefix of BullMQ's keys, e.g. `a2a:push:bull`. */
  prefix: string
  /** Makes each attempt: the same headers, signing, URL checks, logging and 410 rule as in-process delivery. */
  notifier: WebhookNotifier
  store: PushConfigStore
  /** Retries after the first attempt (`push_notifications.config.max_retries`). */
  maxRetries: number
  /** Attempts in flight at once in this instance (`push_notifications.config.max_in_flight`). */
  concurrency: number
  /** How long the ordering links are kept: a task's lifetime (`tasks.ttl`), seconds. */
  ttlSeconds: number
  log: Logger
}

interface DeliveryJob {
  taskId: string
  configId: string
  state: string
  body: string
  /** `webhook-id`: the same for every attempt of this delivery. */
  webhookId: string
  /** Job id of the previous delivery to the same (task, config): this one waits until it has settled. */
  prev: string | null
  /** The trace context of the change, when a span recorded it (absent from the jobs of earlier releases). */
  trace?: TraceCarrier
}

const QUEUE_NAME = 'webhooks'
const BACKOFF = 'a2a'
/** How long a delivery waits before looking again at the previous one of its (task, config). */
const ORDER_WAIT_MS = 100
/** States of a job that has not settled yet. */
const PENDING = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children'])
/** Settled jobs are kept this long, so that a late duplicate add of the same id is still recognised. */
const KEEP_COMPLETED_S = 3600
const KEEP_FAILED_S = 86_400
/** BullMQ's lock on an active delivery; the worker renews it every half of it while the attempt runs. */
const LOCK_MS = 10_000
/**
 * At close, past the wait for the attempts in flight: how long each forced step (the worker's close, the queue's,
 * QUIT on the worker's connection) may take. Each is local work, or one round trip to a Redis that answers
 * (milliseconds); with Redis stalled only the QUIT waits this long.
 */
const FORCE_STEP_MS = 500

/**
 * Webhook deliveries as BullMQ jobs in Redis (CONTRACT.md §10): they survive the death of the instance that queued
 * them, and any instance's worker makes them.
 * - At least once per (task, state, config), and once while BullMQ remembers the job: the job id is derived from the
 *   three (the task's version after the change names the state), so the instance whose write made the change and a
 *   relay re-queueing it from the push outbox (services/push/outbox.ts) add one job between them.
 * - The retry schedule of §8.3 is BullMQ's custom backoff: `retry_delay` × 2^n ± 20%, or a sane `Retry-After`.
 * - In order per (task, config): each job names the one queued before it for the same pair, and waits (without
 *   spending an attempt) until that one has settled.
 */
export class DurableDeliveryQueue implements DeliveryQueue {
  readonly #opts: DurableDeliveryQueueOptions
  readonly #queue: Queue<DeliveryJob>
  readonly #worker: Worker<DeliveryJob>
  readonly #workerClient: Redis
  readonly #linkPrefix: string
  /** Attempts in flight in this instance's worker. */
  readonly #attempts = new Set<Promise<void>>()

  constructor (opts: DurableDeliveryQueueOptions) {
    this.#opts = opts
    this.#linkPrefix = `${opts.prefix}:last:`
    this.#queue = new Queue<DeliveryJob>(QUEUE_NAME, { connection: opts.client, prefix: opts.prefix })
    // Redis being unreachable is reported once per interval by the client's owner (services/redis/outage.ts), not
    // here once per attempt of each of the queue's connections.
    this.#queue.on('error', logUnlessConnectionError(opts.log, 'webhook queue error'))
    // Workers block on Redis: BullMQ needs a connection that retries forever and has no command timeout.
    this.#workerClient = opts.client.duplicate({ maxRetriesPerRequest: null, commandTimeout: undefined, enableOfflineQueue: true })
    this.#workerClient.on('error', () => {})
    this.#worker = new Worker<DeliveryJob>(QUEUE_NAME, (job, token) => this.#track(this.#process(job, token)), {
      connection: this.#workerClient,
      prefix: opts.prefix,
      concurrency: opts.concurrency,
      // An attempt caught by a dying instance is taken over once its lock lapses unrenewed: within about 15 s.
      lockDuration: LOCK_MS,
      stalledInterval: LOCK_MS / 2,
      settings: {
        backoffStrategy: (attemptsMade, _type, err) =>
          opts.notifier.retryDelay(attemptsMade, (err as { retryAfter?: number } | undefined)?.retryAfter)
      }
    })
    this.#worker.on('error', logUnlessConnectionError(opts.log, 'webhook worker error'))
  }

  async add (taskId: string, version: number, state: string, bodyOf: (config: StoredPushConfig) => string, configs: StoredPushConfig[], trace?: TraceCarrier): Promise<void> {
    const client = this.#opts.client
    const ttlMs = this.#opts.ttlSeconds * 1000
    const jobs = []
    for (const config of configs) {
      const jobId = deliveryJobId(taskId, version, config.id)
      // SET … GET: this job becomes the last of its (task, config), and learns the one before it, in one step.
      const prev = await client.call('SET', `${this.#linkPrefix}${taskId}:${config.id}`, jobId, 'PX', ttlMs, 'GET') as string | null
      jobs.push({
        name: state,
        data: { taskId, configId: config.id, state, body: bodyOf(config), webhookId: `msg_${jobId}`, prev: prev === jobId ? null : prev, trace },
        opts: {
          jobId,
          attempts: this.#opts.maxRetries + 1,
          backoff: { type: BACKOFF },
          removeOnComplete: { age: KEEP_COMPLETED_S },
          removeOnFail: { age: KEEP_FAILED_S }
        }
      })
    }
    await this.#queue.addBulk(jobs)
  }

  /** Jobs not yet settled, all instances together (tests, metrics). */
  async pending (): Promise<number> {
    const counts = await this.#queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized')
    return Object.values(counts).reduce((a, b) => a + b, 0)
  }

  /**
   * Stops taking jobs, lets the attempts in flight finish for up to `timeoutMs` (their locks still renewed), then
   * stops: what is still queued stays in Redis, for the other instances or the next start, and an attempt still
   * running is taken over by another worker once its lock lapses. Bounded even when Redis is down or stalled: BullMQ's
   * graceful close waits for its blocking connection to end, which ioredis never reports while it waits to reconnect
   * (SIGTERM with Redis stopped hung until the force exit), so the worker is closed with `force`, and each step past
   * the wait gets FORCE_STEP_MS.
   */
  async close (timeoutMs: number): Promise<void> {
    const log = this.#opts.log
    const paused = this.#worker.pause(true).catch((err: unknown) => log.warn({ err }, 'webhook worker did not pause'))
    if (!await within(Promise.allSettled([paused, ...this.#attempts]), timeoutMs)) {
      log.warn({ inFlight: this.#attempts.size }, 'webhook deliveries still in flight at close: left to another worker')
    }
    await within(this.#worker.close(true).catch((err: unknown) => log.warn({ err }, 'webhook worker did not close cleanly')), FORCE_STEP_MS)
    await within(this.#queue.close().catch((err: unknown) => log.warn({ err }, 'webhook queue did not close cleanly')), FORCE_STEP_MS)
    // QUIT comes after the results the attempts wrote meanwhile; a Redis that does not answer gets its socket dropped.
    await quitWithin(this.#workerClient, FORCE_STEP_MS, log)
  }

  #track (attempt: Promise<void>): Promise<void> {
    this.#attempts.add(attempt)
    attempt.finally(() => this.#attempts.delete(attempt)).catch(() => {})
    return attempt
  }

  async #process (job: Job<DeliveryJob>, token: string | undefined): Promise<void> {
    const { data } = job
    if (data.prev !== null && PENDING.has(await this.#queue.getJobState(data.prev))) {
      await job.moveToDelayed(Date.now() + ORDER_WAIT_MS, token)
      throw new DelayedError()
    }
    const config = await this.#opts.store.get(data.taskId, data.configId)
    if (config === null) {
      this.#opts.log.debug({ taskId: data.taskId, configId: data.configId }, 'push config gone: delivery dropped')
      return
    }
    const delivery = { taskId: data.taskId, config, body: data.body, state: data.state, id: data.webhookId, trace: data.trace }
    const report = await this.#opts.notifier.attemptOnce(delivery, job.attemptsMade + 1)
    // A throw is BullMQ's signal to retry on the custom backoff; `attemptOnce` only says retry while one is left.
    if (report.outcome === 'retry') throw Object.assign(new Error('webhook delivery will be retried'), { retryAfter: report.retryAfter })
  }
}

export { deliveryJobId }
