import type pg from 'pg'
import { storeQuery } from '../postgres/query.js'
import type { Logger } from '../kernel/logger.js'
import { CLAIM_BATCH, RenewedLeases } from './leases.js'

export interface PostgresTaskLeasesOptions {
  /** `tasks.lease_ttl` in ms: how long a lease lasts unrenewed. It is renewed every third of that. */
  ttlMs: number
  /** How long an expired lease is left to its owner once a claim round has found it expired. Default `ttlMs`. */
  graceMs?: number
  log: Logger
}

/**
 * Leases in the table `a2a_task_leases` (migration 3), expiring by the database's clock: the same rules as the Redis
 * leases (services/tasks/leases.ts), each call one statement. Renewal is one UPDATE for all the tasks held here, and
 * never takes back a lease that is gone; a claim round is one call of `a2a_claim_leases`, whose `FOR UPDATE SKIP
 * LOCKED` gives each expired lease to one claimer at a time. The pool is borrowed.
 */
export class PostgresTaskLeases extends RenewedLeases {
  readonly #pool: pg.Pool

  constructor (pool: pg.Pool, opts: PostgresTaskLeasesOptions) {
    super(opts)
    this.#pool = pool
  }

  protected async take (taskId: string): Promise<void> {
    await this.#query(`INSERT INTO a2a_task_leases (task_id, expires_at) VALUES ($1, a2a_now_ms() + $2)
      ON CONFLICT (task_id) DO UPDATE SET expires_at = EXCLUDED.expires_at, doubted_at = NULL`, [taskId, this.ttlMs])
  }

  protected async renewAll (taskIds: string[]): Promise<void> {
    await this.#query('UPDATE a2a_task_leases SET expires_at = a2a_now_ms() + $2, doubted_at = NULL WHERE task_id = ANY($1)', [taskIds, this.ttlMs])
  }

  protected async drop (taskId: string): Promise<void> {
    await this.#query('DELETE FROM a2a_task_leases WHERE task_id = $1', [taskId])
  }

  async claimExpired (): Promise<string[]> {
    const { rows } = await this.#query('SELECT a2a_claim_leases($1, $2, $3) AS id', [CLAIM_BATCH, this.ttlMs, this.graceMs])
    return rows.map(row => row.id)
  }

  async #query (text: string, values: unknown[]): Promise<pg.QueryResult> {
    return await storeQuery(this.#pool, text, values)
  }
}
