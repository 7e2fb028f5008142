import type pg from 'pg'
import { LiveTaskLimit, TaskConflict } from '../kernel/errors.js'
import { storeQuery } from '../postgres/query.js'
import { decodePageToken, encodePageToken } from './page-token.js'
import { isTerminal } from './states.js'
import { parseClaim } from './send-claims.js'
import { keptBody, type InsertOptions, type KeptEvent, type ReplaceOutcome, type SendClaim, type StoredTask, type TaskListPage, type TaskListQuery, type TaskStore } from './store.js'
import type { TaskEvent } from './event-bus.js'

export interface PostgresTaskStoreOptions {
  /** `tasks.ttl` in seconds: how long a terminal task is kept after its last update. */
  ttlSeconds: number
  /** `tasks.max_live_per_principal`: unfinished tasks one owner may hold; `insert` refuses one more. */
  maxLivePerOwner?: number
  /** `server.stream_replay`: events kept per task, and how long after it ends. Default 1000 events, 300 s. */
  replay?: { maxEvents: number, ttlSeconds: number }
  /** Clock in ms: expiry is counted on it (tests). Default Date.now. */
  now?: () => number
  /** How many rows one `list` query reads at most when `where` filters them; small values are for tests. Default 100. */
  listBatchSize?: number
  /**
   * `tasks.lease_ttl` in ms, with the leases in the same database (PostgresTaskLeases): an insert takes the new
   * unfinished task's lease, and the write that makes a task terminal drops it (`TaskStore.leasesOnInsert`).
   */
  leaseTtlMs?: number
  /**
   * The notice a write sends the other instances (PostgresTaskEventBus): with it, `replace(next, event)` keeps the
   * event and sends the notice on the channel `a2a_events` in the one round trip (`TaskStore.announces`), and each
   * task keeps at least its newest BUS_EVENTS events, which the other instances read.
   */
  announcer?: { notice: (taskId: string, version: number) => string }
  /**
   * Push configs in the same database, with the push outbox (`TaskStore.recordsPush`): a write that changes the
   * state of a task with push configs records the change in `a2a_push_outbox` in its own transaction.
   */
  pushOutbox?: boolean
}

/** A task whose writes are announced keeps at least this many events: what listeners a few writes behind read. */
export const BUS_EVENTS = 100

/** What a listener reads of a task (`since`): the task as stored, and the events kept after the version asked for. */
export interface TaskSince {
  readonly record: StoredTask
  /** The version of the task's last event, kept or not. */
  readonly lastEvent: number
  readonly kept: KeptEvent[]
}

/**
 * One page of an owner's tasks, newest first, after the seq `$4`, of context `$2` and in state `$3` when given. Each
 * query is planned with its values (node-postgres sends unnamed statements), so the filters left out fold away and
 * the index of the one given serves the page (test/services/tasks/postgres-store-plans.test.ts shows the plans).
 */
export const LIST_SQL = `SELECT seq, record FROM a2a_tasks
  WHERE owner = $1 AND ($2::text IS NULL OR context_id = $2) AND ($3::text IS NULL OR state = $3)
    AND ($4::bigint IS NULL OR seq < $4) AND (expires_at IS NULL OR expires_at > $5)
  ORDER BY seq DESC LIMIT $6`

/** Most interrupted tasks one claim hands out; the next round takes the rest. */
const CLAIM_BATCH = 100
/** A claimed interrupted task that is still interrupted this much later is handed out again. */
const INTERRUPTED_RECLAIM_MS = 60_000
const INTERRUPTED = ['input_required', 'auth_required']

/**
 * Tasks in PostgreSQL (docs/stores.md, "PostgreSQL"; the schema: services/postgres/migrations.ts). Every write is one
 * round trip: an insert and a compare-and-set are each one call of a function the migrations made. The record is
 * kept as the JSON text it was written as. A terminal task is kept `ttlSeconds` after its last write, counted on
 * this store's clock: reads skip it after that, and `deleteExpired` removes it. The pool is borrowed: `close` leaves
 * it to its owner.
 */
export class PostgresTaskStore implements TaskStore {
  readonly #pool: pg.Pool
  readonly #ttlMs: number
  readonly #maxLive: number | null
  /** Events kept per task: `server.stream_replay.max_events`, or BUS_EVENTS when more. */
  readonly #maxEvents: number
  /** `server.stream_replay.max_events`: what a resumed stream is served, though more may be kept. */
  readonly #replayEvents: number
  readonly #replayTtlMs: number
  readonly #now: () => number
  readonly #batch: number
  readonly #leaseTtlMs: number | null
  readonly #announcer: PostgresTaskStoreOptions['announcer']
  readonly leasesOnInsert: boolean
  readonly announces: boolean
  readonly recordsPush: boolean
  /** The `keep` of each task still under way, so that a task's events are kept in their order. */
  readonly #keeping = new Map<string, Promise<void>>()

  constructor (pool: pg.Pool, opts: PostgresTaskStoreOptions) {
    this.#pool = pool
    this.#ttlMs = Math.max(1, Math.ceil(opts.ttlSeconds * 1000))
    this.#maxLive = opts.maxLivePerOwner ?? null
    this.#announcer = opts.announcer
    this.announces = opts.announcer !== undefined
    this.#replayEvents = opts.replay?.maxEvents ?? 1000
    this.#maxEvents = Math.max(this.#replayEvents, this.announces ? BUS_EVENTS : 0)
    this.#leaseTtlMs = opts.leaseTtlMs ?? null
    this.leasesOnInsert = this.#leaseTtlMs !== null
    this.recordsPush = opts.pushOutbox === true
    this.#replayTtlMs = (opts.replay?.ttlSeconds ?? 300) * 1000
    this.#now = opts.now ?? Date.now
    this.#batch = opts.listBatchSize ?? 100
  }

  async insert (record: StoredTask, opts?: InsertOptions): Promise<void> {
    const { task, owner } = record
    const events = opts?.events ?? []
    const values = [
      task.id, owner, task.contextId, task.status.state, record.version, record.createdAt, record.updatedAt,
      this.#expiry(record), JSON.stringify(record), this.#maxLive, events.map(e => e.version),
      events.map(e => JSON.stringify(keptBody(e))), this.#maxEvents
    ]
    // With leases, the 14-argument insert (migration 4) takes the task's lease with it.
    const { rows: [{ outcome }] } = this.#leaseTtlMs === null
      ? await this.#query('SELECT a2a_insert_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) AS outcome', values, 'a2a_insert_13')
      : await this.#query('SELECT a2a_insert_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) AS outcome',
        [...values, opts?.lease === false ? null : this.#leaseTtlMs], 'a2a_insert_14')
    if (outcome === -1) throw new LiveTaskLimit(owner)
    if (outcome === 2) throw new TaskConflict(task.id)
  }

  async get (id: string): Promise<StoredTask | null> {
    const { rows } = await this.#query('SELECT record FROM a2a_tasks WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)', [id, this.#now()], 'a2a_get')
    return rows.length === 0 ? null : JSON.parse(rows[0].record)
  }

  async version (id: string): Promise<number | null> {
    const { rows } = await this.#query('SELECT version FROM a2a_tasks WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)', [id, this.#now()], 'a2a_version')
    return rows.length === 0 ? null : rows[0].version
  }

  async replace (next: StoredTask, event?: TaskEvent): Promise<ReplaceOutcome> {
    const { task } = next
    const values = [
      task.id, next.version, task.contextId, task.status.state, next.updatedAt, this.#expiry(next), JSON.stringify(next),
      event === undefined ? null : JSON.stringify(keptBody(event)), this.#maxEvents
    ]
    if (this.#leaseTtlMs === null && this.#announcer === undefined && !this.recordsPush) {
      const { rows: [{ written }] } = await this.#query('SELECT a2a_replace_task($1, $2, $3, $4, $5, $6, $7, $8, $9) AS written', values, 'a2a_replace_9')
      return written
    }
    // a2a_write_task (migration 5) also drops the lease of a task it ends, sends the notice of its event, and records a
    // change of state of a task with push configs in the outbox.
    const notice = event === undefined || this.#announcer === undefined ? null : this.#announcer.notice(task.id, next.version)
    const { rows: [{ written }] } = await this.#query('SELECT a2a_write_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) AS written', [...values, notice, this.recordsPush], 'a2a_write')
    return written === 0 ? false : written === 2 ? 'outbox' : true
  }

  /** Keeps the event of a write just made, after the task's earlier ones; never throws (a lost event makes a reader resync). */
  keep (taskId: string, event: TaskEvent): void {
    const previous = this.#keeping.get(taskId) ?? Promise.resolve()
    const kept: Promise<void> = previous.then(async () => {
      await this.#pool.query('SELECT a2a_keep_event($1, $2, $3, $4)', [taskId, event.version, JSON.stringify(keptBody(event)), this.#maxEvents])
    }).catch(() => {}).then(() => {
      // The last one of the task's chain takes the chain away with it.
      if (this.#keeping.get(taskId) === kept) this.#keeping.delete(taskId)
    })
    this.#keeping.set(taskId, kept)
  }

  async eventsAfter (taskId: string, after: number): Promise<KeptEvent[] | null> {
    const { rows } = await this.#query(`SELECT t.last_event, t.state, t.updated_at, e.version, e.prev, e.body
      FROM a2a_tasks t LEFT JOIN a2a_task_events e ON e.task_id = t.id AND e.version > $2
      WHERE t.id = $1 AND (t.expires_at IS NULL OR t.expires_at > $3) ORDER BY e.version`, [taskId, after, this.#now()])
    if (rows.length === 0 || rows[0].last_event <= after) return []
    // The events of a task terminal for longer than the replay TTL are no longer kept.
    const gone = isTerminal(rows[0].state) && Number(rows[0].updated_at) + this.#replayTtlMs <= this.#now()
    // The first event after `after` must follow it directly, else some were trimmed away. Past the newest
    // `max_events`, those kept for the other instances' listeners are not served.
    if (gone || rows[0].version === null || rows[0].prev > after || rows.length > this.#replayEvents) return null
    return rows.map(keptOf)
  }

  /**
   * The task as stored, the version of its last event, and the events kept after `after`, in one round trip: what a
   * listener of another instance's writes reads (PostgresTaskEventBus). Null when the task is not stored or expired.
   */
  async since (taskId: string, after: number): Promise<TaskSince | null> {
    const { rows } = await this.#query('SELECT * FROM a2a_task_since($1, $2, $3)', [taskId, after, this.#now()], 'a2a_since')
    if (rows.length === 0) return null
    return {
      record: JSON.parse(rows[0].record),
      lastEvent: rows[0].last_event,
      kept: rows[0].version === null ? [] : rows.map(keptOf)
    }
  }

  async claimInterrupted (before: number): Promise<string[]> {
    const { rows } = await this.#query(`UPDATE a2a_tasks SET claimed_until = $2
      WHERE id IN (SELECT id FROM a2a_tasks WHERE state = ANY($3) AND updated_at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1)
        ORDER BY updated_at, seq LIMIT $4 FOR UPDATE SKIP LOCKED)
      RETURNING id, updated_at, seq`, [before, before + INTERRUPTED_RECLAIM_MS, INTERRUPTED, CLAIM_BATCH])
    return rows.sort((a, b) => Number(a.updated_at) - Number(b.updated_at) || Number(a.seq) - Number(b.seq)).map(row => row.id)
  }

  async list (query: TaskListQuery): Promise<TaskListPage> {
    const { owner } = query
    if (owner === undefined) throw new TypeError('PostgresTaskStore lists the tasks of one owner at a time')
    let before = query.pageToken === undefined ? null : decodePageToken('p', query.pageToken, 18)
    // One match past the page says whether there is a next page.
    const wanted = query.pageSize + 1
    const found: Array<{ seq: string, record: StoredTask }> = []
    for (;;) {
      const limit = query.where === undefined ? wanted - found.length : this.#batch
      const { rows } = await this.#query(LIST_SQL, [owner, query.contextId ?? null, query.state ?? null, before, this.#now(), limit])
      for (const row of rows) {
        const record = JSON.parse(row.record) as StoredTask
        if (query.where === undefined || query.where(record.task)) found.push({ seq: row.seq, record })
        if (found.length === wanted) break
      }
      if (found.length === wanted || rows.length < limit) break
      before = rows[rows.length - 1].seq
    }
    const tasks = found.slice(0, query.pageSize).map(f => f.record)
    return { tasks, nextPageToken: found.length > query.pageSize ? encodePageToken('p', found[query.pageSize - 1].seq) : '' }
  }

  /**
   * Deletes terminal tasks past their TTL, and their events, a batch at a time; returns how many went. The claims of
   * idempotent sends whose window has closed go too, a batch at a time.
   */
  async deleteExpired (batch = 500): Promise<number> {
    const { rowCount } = await this.#query(`DELETE FROM a2a_tasks WHERE id IN (
      SELECT id FROM a2a_tasks WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, [this.#now(), batch])
    await this.#query(`DELETE FROM a2a_send_claims WHERE (owner, message_id) IN (
      SELECT owner, message_id FROM a2a_send_claims WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, [this.#now(), batch])
    return rowCount as number
  }

  /** Idempotent sends: one call of `a2a_claim_send` (migration 8), a round trip before the send's task is made. */
  async claimSend (claim: SendClaim, windowMs: number, over?: SendClaim): Promise<SendClaim | null> {
    const { rows } = await this.#query('SELECT a2a_claim_send($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS held', [
      claim.owner, claim.messageId, claim.taskId, claim.hash, claim.at, this.#now(), windowMs, over?.taskId ?? null, over?.hash ?? null, over?.at ?? null
    ], 'a2a_claim_send')
    const held = rows[0].held as string | null
    return held === null ? null : parseClaim(claim.owner, claim.messageId, held)
  }

  async releaseSend (claim: SendClaim): Promise<void> {
    await this.#query('DELETE FROM a2a_send_claims WHERE owner = $1 AND message_id = $2 AND task_id = $3 AND hash = $4 AND claimed_at = $5',
      [claim.owner, claim.messageId, claim.taskId, claim.hash, claim.at], 'a2a_release_send')
  }

  async ping (): Promise<void> {
    await this.#query('SELECT 1', [])
  }

  /** Waits for the events still being kept; the pool belongs to whoever passed it in. */
  async close (): Promise<void> {
    await Promise.all(this.#keeping.values())
  }

  /** When a write of `record` stops being seen: a terminal task `ttlSeconds` after its last update; else never. */
  #expiry (record: StoredTask): number | null {
    return isTerminal(record.task.status.state) ? record.updatedAt + this.#ttlMs : null
  }

  async #query (text: string, values: unknown[], name?: string): Promise<pg.QueryResult> {
    return await storeQuery(this.#pool, text, values, name)
  }
}

/** A row of `a2a_task_events` (its version, the one before, the kept body) as a KeptEvent. */
function keptOf (row: { version: number, prev: number, body: string }): KeptEvent {
  return { ...JSON.parse(row.body), version: row.version, prev: row.prev }
}
