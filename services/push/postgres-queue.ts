import type pg from 'pg'
import type { Logger } from '../kernel/logger.js'
import type { TraceCarrier } from '../kernel/tracing.js'
import { within } from '../kernel/within.js'
import { storeQuery } from '../postgres/query.js'
import type { StoredTask } from '../tasks/store.js'
import type { DeliveryQueue, WebhookNotifier } from './notifier.js'
import type { PushConfigStore, PushOutbox, StoredPushConfig } from './store.js'
import { deliveryJobId } from './webhook-post.js'

/** Most outbox entries or deliveries one claim takes; the next round takes the rest. */
const CLAIM_BATCH = 100
/** An idle worker looks for due deliveries this often (retries come due; other instances queue); a busy one at once. */
const IDLE_POLL_MS = 250
/** After a claim the database refused, the next comes this much later. */
const FAILED_POLL_MS = 1000

export interface PostgresPushOutboxOptions {
  /** How long an entry is left to the instance that wrote it before others may claim it, ms. */
  graceMs: number
  log: Logger
}

/**
 * The push outbox in PostgreSQL (`a2a_push_outbox`, migration 5): PostgresTaskStore records a change of state of a
 * task with push configs in the transaction of the change (`a2a_write_task`); the instance that made it queues its
 * deliveries and deletes the row. A row left (its writer died) is claimed after `graceMs` by any instance's relay,
 * one claimer at a time (`FOR UPDATE SKIP LOCKED`), and queued again: a delivery queued twice is one row, the
 * deliveries being unique by (task, version, config).
 */
export class PostgresPushOutbox implements PushOutbox {
  readonly #pool: pg.Pool
  readonly #opts: PostgresPushOutboxOptions

  constructor (pool: pg.Pool, opts: PostgresPushOutboxOptions) {
    this.#pool = pool
    this.#opts = opts
  }

  async claim (): Promise<StoredTask[]> {
    const { rows } = await storeQuery(this.#pool, 'SELECT record FROM a2a_claim_outbox($1, $2)', [this.#opts.graceMs, CLAIM_BATCH])
    // A task's changes in the order they were made: the notifier queues them in that order.
    return rows.map(row => JSON.parse(row.record) as StoredTask).sort((a, b) => a.version - b.version)
  }

  async ack (taskId: string, version: number): Promise<void> {
    try {
      await storeQuery(this.#pool, 'DELETE FROM a2a_push_outbox WHERE task_id = $1 AND version = $2', [taskId, version])
    } catch (err) {
      this.#opts.log.warn({ err, taskId }, 'outbox entry not acknowledged')
    }
  }
}

export interface PostgresDeliveryQueueOptions {
  /** Borrowed: never ended here. */
  pool: pg.Pool
  /** Makes each attempt: the same headers, signing, URL checks, logging and 410 rule as in-process delivery. */
  notifier: WebhookNotifier
  store: PushConfigStore
  /** Attempts in flight at once in this instance (`push_notifications.config.max_in_flight`). */
  concurrency: number
  /** How long a claimed delivery is its claimer's, ms: longer than an attempt can take. */
  lockMs: number
  log: Logger
}

/** A delivery as claimed (`a2a_claim_deliveries`). */
interface Claimed {
  id: string
  task_id: string
  config_id: string
  state: string
  body: string
  webhook_id: string
  /** This attempt's number: 1 for the first. */
  attempts: number
  /** The change's trace context (migration 7), when a span recorded it. */
  trace: TraceCarrier | null
}

/**
 * Webhook deliveries as rows of `a2a_push_deliveries` (migration 5): they outlive the instance that queued them, and
 * any instance's worker makes them, as the BullMQ queue does on Redis (services/push/durable-queue.ts).
 * - At least once per (task, state, config): a row per (task, version, config), kept until its delivery succeeded or
 *   failed for good; a claim holds it for `lockMs`, past which a row whose claimer died is claimed again.
 * - In order per (task, config): a delivery is not claimed while an earlier one of its pair is still there.
 * - The retry schedule of the notifier (`retryDelay`): a retry is the row given a later due time.
 * The worker claims what is due, as many as it has room for, again at once while it finds some, else every 250 ms;
 * an `add` here wakes it at once.
 */
export class PostgresDeliveryQueue implements DeliveryQueue {
  readonly #opts: PostgresDeliveryQueueOptions
  readonly #attempts = new Set<Promise<void>>()
  #timer: NodeJS.Timeout | undefined
  /** A claim is under way; `#again`: a wake-up came meanwhile. */
  #claiming = false
  #again = false
  /** The last claim failed (logged once until one succeeds). */
  #failing = false
  #closed = false

  constructor (opts: PostgresDeliveryQueueOptions) {
    this.#opts = opts
    this.#wake()
  }

  async add (taskId: string, version: number, state: string, bodyOf: (config: StoredPushConfig) => string, configs: StoredPushConfig[], trace?: TraceCarrier): Promise<void> {
    await storeQuery(this.#opts.pool, `INSERT INTO a2a_push_deliveries (task_id, version, config_id, state, body, webhook_id, due_at, trace)
      SELECT $1, $2, c.config_id, $3, c.body, c.webhook_id, a2a_now_ms(), $7::jsonb FROM unnest($4::text[], $5::text[], $6::text[]) AS c (config_id, body, webhook_id)
      ON CONFLICT (task_id, version, config_id) DO NOTHING`, [
      taskId, version, state, configs.map(config => config.id), configs.map(bodyOf),
      configs.map(config => `msg_${deliveryJobId(taskId, version, config.id)}`), trace === undefined ? null : JSON.stringify(trace)
    ])
    this.#wake()
  }

  /** Deliveries not yet settled, all instances together (tests, metrics). */
  async pending (): Promise<number> {
    const { rows } = await storeQuery(this.#opts.pool, 'SELECT count(*)::integer AS n FROM a2a_push_deliveries', [])
    return rows[0].n
  }

  /**
   * Stops claiming, and lets the attempts in flight finish for up to `timeoutMs`: what is left stays in the table, for
   * the other instances or the next start, and an attempt still running is claimed again once its lock lapses.
   */
  async close (timeoutMs: number): Promise<void> {
    this.#closed = true
    clearTimeout(this.#timer)
    if (!await within(Promise.allSettled(this.#attempts), timeoutMs)) this.#opts.log.warn({ inFlight: this.#attempts.size }, 'webhook deliveries still in flight at close: left to another worker')
  }

  /** Claims what is due now, unless a claim is under way (which then claims once more). */
  #wake (): void {
    if (this.#claiming) {
      this.#again = true
      return
    }
    clearTimeout(this.#timer)
    this.#claim()
  }

  #claim (): void {
    const room = this.#opts.concurrency - this.#attempts.size
    // With no room, the attempt that ends next wakes the worker.
    if (this.#closed || room <= 0) return
    this.#claiming = true
    this.#again = false
    storeQuery(this.#opts.pool, 'SELECT * FROM a2a_claim_traced_deliveries($1, $2)', [Math.min(room, CLAIM_BATCH), this.#opts.lockMs]).then(({ rows }) => {
      this.#claiming = false
      if (this.#failing) this.#opts.log.info('webhook deliveries claimed again')
      this.#failing = false
      // Claimed by a queue closed meanwhile: left for their locks to lapse, and another instance to make.
      if (this.#closed) return
      for (const row of rows as Claimed[]) this.#track(this.#attempt(row))
      this.#later(rows.length > 0 || this.#again ? 0 : IDLE_POLL_MS)
    }, (err: unknown) => {
      this.#claiming = false
      if (!this.#failing) this.#opts.log.warn({ err }, 'webhook deliveries not claimed')
      this.#failing = true
      this.#later(FAILED_POLL_MS)
    })
  }

  #later (ms: number): void {
    this.#timer = setTimeout(() => { this.#claim() }, ms).unref()
  }

  #track (attempt: Promise<void>): void {
    this.#attempts.add(attempt)
    attempt.finally(() => {
      this.#attempts.delete(attempt)
      this.#wake()
    }).catch(() => {})
  }

  /** One attempt of a claimed delivery, then its row settled: gone, or due again for a retry. */
  async #attempt (row: Claimed): Promise<void> {
    const { pool, store, notifier, log } = this.#opts
    const taskId = row.task_id
    try {
      const config = await store.get(taskId, row.config_id)
      const report = config === null
        ? undefined
        : await notifier.attemptOnce({ taskId, config, body: row.body, state: row.state, id: row.webhook_id, trace: row.trace ?? undefined }, row.attempts)
      if (config === null) log.debug({ taskId, configId: row.config_id }, 'push config gone: delivery dropped')
      if (report?.outcome === 'retry') {
        await storeQuery(pool, 'UPDATE a2a_push_deliveries SET due_at = a2a_now_ms() + $2, locked_until = NULL WHERE id = $1',
          [row.id, notifier.retryDelay(row.attempts, report.retryAfter)])
      } else {
        await storeQuery(pool, 'DELETE FROM a2a_push_deliveries WHERE id = $1', [row.id])
      }
    } catch (err) {
      // The row stays claimed: once its lock lapses it is attempted again, by whichever instance claims it.
      log.warn({ err, taskId, configId: row.config_id }, 'webhook delivery not settled')
    }
  }
}
