import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import type { PushNotificationConfig } from '../../schemas/push-config.js'
import { PushConfigLimit } from '../kernel/errors.js'
import { storeQuery } from '../postgres/query.js'
import type { Sealing } from './sealing.js'
import type { PushConfigStore, PutOptions, PutResult, StoredPushConfig } from './store.js'

export interface PostgresPushConfigStoreOptions {
  /** Seals each config at rest (`push_notifications.encryption_key`); without it, configs are stored as JSON. */
  sealing?: Sealing
  /** Clock in ms: expiry is counted on it (tests). Default Date.now. */
  now?: () => number
}

const LIVE = '(expires_at IS NULL OR expires_at > $2)'

/**
 * Push configs in PostgreSQL (`push_notifications.backend: postgres`; the table: services/postgres/migrations.ts,
 * version 2). A put is one call of a function that holds the whole upsert rule under a lock of the task's, so
 * concurrent puts on any number of instances never pass the limit. The url is stored in the clear (an id-less put
 * matches on it); the rest of the config, token and credentials with it, is sealed when a key is configured. A
 * task's configs expire `ttlSeconds` after its last put, as on Redis; `deleteExpired` removes them. The pool is
 * borrowed: `close` leaves it to its owner.
 */
export class PostgresPushConfigStore implements PushConfigStore {
  readonly #pool: pg.Pool
  readonly #sealing: Sealing | undefined
  readonly #now: () => number

  constructor (pool: pg.Pool, opts: PostgresPushConfigStoreOptions = {}) {
    this.#pool = pool
    this.#sealing = opts.sealing
    this.#now = opts.now ?? Date.now
  }

  async put (taskId: string, config: PushNotificationConfig, opts: PutOptions): Promise<PutResult> {
    const { id: requested, ...rest } = config
    const json = JSON.stringify(rest)
    const ttl = opts.ttlSeconds
    const now = this.#now()
    const expires = ttl === undefined || !Number.isFinite(ttl) ? null : now + Math.max(1, Math.ceil(ttl * 1000))
    const { rows: [{ outcome }] } = await this.#query('SELECT a2a_put_push_config($1, $2, $3, $4, $5, $6, $7, $8) AS outcome', [
      taskId, requested ?? null, config.url, this.#sealing?.seal(json) ?? json, randomUUID(), opts.maxPerTask, expires, now
    ])
    if (outcome === '!') throw new PushConfigLimit(taskId, opts.maxPerTask)
    return { config: { id: outcome.slice(1), ...JSON.parse(json) }, created: outcome[0] === '+' }
  }

  async get (taskId: string, id: string): Promise<StoredPushConfig | null> {
    const { rows } = await this.#query(`SELECT id, record FROM a2a_push_configs WHERE task_id = $1 AND ${LIVE} AND id = $3`, [taskId, this.#now(), id])
    return rows.length === 0 ? null : this.#parse(rows[0])
  }

  async latest (taskId: string): Promise<StoredPushConfig | null> {
    const { rows } = await this.#query(`SELECT id, record FROM a2a_push_configs WHERE task_id = $1 AND ${LIVE} ORDER BY touched DESC LIMIT 1`, [taskId, this.#now()])
    return rows.length === 0 ? null : this.#parse(rows[0])
  }

  async list (taskId: string): Promise<StoredPushConfig[]> {
    const { rows } = await this.#query(`SELECT id, record FROM a2a_push_configs WHERE task_id = $1 AND ${LIVE} ORDER BY created`, [taskId, this.#now()])
    return rows.map(row => this.#parse(row))
  }

  async remove (taskId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.#query(`DELETE FROM a2a_push_configs WHERE task_id = $1 AND ${LIVE} AND id = $3`, [taskId, this.#now(), id])
    return rowCount === 1
  }

  /** Deletes configs past their expiry, a batch at a time; returns how many went. */
  async deleteExpired (batch = 500): Promise<number> {
    const { rowCount } = await this.#query(`DELETE FROM a2a_push_configs WHERE (task_id, id) IN (
      SELECT task_id, id FROM a2a_push_configs WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, [this.#now(), batch])
    return rowCount as number
  }

  async ping (): Promise<void> {
    await this.#query('SELECT 1', [])
  }

  /** Nothing to release: the pool belongs to whoever passed it in. */
  async close (): Promise<void> {}

  #parse (row: { id: string, record: string }): StoredPushConfig {
    return { id: row.id, ...JSON.parse(this.#sealing?.open(row.record) ?? row.record) }
  }

  async #query (text: string, values: unknown[]): Promise<pg.QueryResult> {
    return await storeQuery(this.#pool, text, values)
  }
}
