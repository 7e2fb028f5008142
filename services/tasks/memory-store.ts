import { LiveTaskLimit, TaskStoreFull } from '../kernel/errors.js'
import { decodePageToken, encodePageToken } from './page-token.js'
import { isInterrupted, isTerminal } from './states.js'
import { keptEventBytes, taskBytes, taskBytesChange } from './task-bytes.js'
import type { TaskEvent } from './event-bus.js'
import { MemorySendClaims } from './send-claims.js'
import { keptEvent, type KeptEvent, type SendClaim, type StoredTask, type SyncTaskStore, type TaskListPage, type TaskListQuery, type TaskStore } from './store.js'

export interface MemoryTaskStoreOptions {
  /** `tasks.max_tasks`: at most this many tasks are held. */
  maxTasks: number
  /** `tasks.max_bytes`: at most about this many bytes of tasks are held (see task-bytes.ts). Default: no bound. */
  maxBytes?: number
  /** `tasks.max_live_per_principal`: unfinished tasks one owner may hold. Default: no bound. */
  maxLivePerOwner?: number
  /** `tasks.ttl` in seconds: how long a terminal task is kept after its last update. */
  ttlSeconds: number
  /** Clock, for tests. */
  now?: () => number
  /** How often expired tasks are swept, ms. */
  sweepIntervalMs?: number
  /** `server.stream_replay`: events kept per task for streams that resume, and for how long after it ends. */
  replay?: { maxEvents: number, ttlSeconds: number }
}

/** `server.stream_replay`'s defaults. */
const DEFAULT_REPLAY = { maxEvents: 1000, ttlSeconds: 300 }

const DEFAULT_SWEEP_MS = 60_000

interface Entry {
  record: StoredTask
  /** The record's size estimate and its kept events', counted in the store's total. */
  bytes: number
  /** Insertion order, the cursor of `list` pages. */
  seq: number
  /**
   * Terminal tasks only: their neighbours in the terminal list (older, newer). A terminal task expires `tasks.ttl`
   * after `record.updatedAt`; the time is not kept here, where it would cost a boxed number per task.
   */
  older: Entry | null
  newer: Entry | null
  linked: boolean
  /** Its owner's tasks, in insertion order: the neighbours (older, newer). */
  ownerOlder: Entry | null
  ownerNewer: Entry | null
  /** Its last events, oldest first (`server.stream_replay`); null before the first and once they have expired. */
  kept: KeptEvent[] | null
  /** The size estimate of each kept event, in the same order (counted in `bytes`). */
  keptSizes: number[] | null
  /** The version of its last event; 0 before the first. */
  lastEvent: number
}

/** One owner's tasks, a doubly-linked list through their entries: `tasks/list` walks it from the newest. */
interface OwnerList {
  oldest: Entry | null
  newest: Entry | null
  /** How many of them are unfinished (`tasks.max_live_per_principal`). */
  live: number
}

/**
 * Tasks in a Map, bounded. Terminal tasks are also on a doubly-linked list in the order they were last updated,
 * which is both their expiry order (one TTL for all) and their eviction order, so expiry and eviction cost O(1) per
 * task. A list, not a second Map: a Map deleted from the front keeps the holes until it is rehashed, and finding its
 * first live key walks them, which made every insert of a full store cost thousands of steps. Each owner's tasks are
 * a third list, in insertion order, for `tasks/list`: linking an entry in and out costs a few pointers, where a Set
 * per owner cost a hash-table insert and delete per task (with security off every task has the same owner, so that
 * Set held the whole store), and a page no longer copies the owner's every id.
 */
export class MemoryTaskStore implements TaskStore, SyncTaskStore {
  readonly #tasks = new Map<string, Entry>()
  /** The terminal list: `#oldest` expires (and is evicted) first. */
  #oldest: Entry | null = null
  #newest: Entry | null = null
  readonly #byOwner = new Map<string, OwnerList>()
  readonly #deleteListeners: Array<(taskId: string) => void> = []
  readonly #maxTasks: number
  readonly #maxBytes: number
  readonly #maxLive: number
  /** Interrupted (input_required, auth_required) task ids → last update, oldest update first. */
  readonly #interrupted = new Map<string, number>()
  #bytes = 0
  readonly #ttlMs: number
  readonly #now: () => number
  readonly #timer: NodeJS.Timeout
  readonly #maxEvents: number
  readonly #replayTtlMs: number
  #seq = 0
  /** The claims of idempotent sends: at most `tasks.max_tasks`, as many as the tasks they name. */
  readonly #claims: MemorySendClaims

  constructor (opts: MemoryTaskStoreOptions) {
    this.#maxTasks = opts.maxTasks
    this.#maxBytes = opts.maxBytes ?? Infinity
    this.#maxLive = opts.maxLivePerOwner ?? Infinity
    this.#ttlMs = opts.ttlSeconds * 1000
    this.#now = opts.now ?? Date.now
    const replay = opts.replay ?? DEFAULT_REPLAY
    this.#maxEvents = replay.maxEvents
    this.#replayTtlMs = replay.ttlSeconds * 1000
    this.#timer = setInterval(() => this.sweep(), opts.sweepIntervalMs ?? DEFAULT_SWEEP_MS).unref()
    this.#claims = new MemorySendClaims(opts.maxTasks, this.#now)
  }

  claimSend (claim: SendClaim, windowMs: number, over?: SendClaim): SendClaim | null {
    return this.#claims.claim(claim, windowMs, over)
  }

  releaseSend (claim: SendClaim): void {
    this.#claims.release(claim)
  }

  /** Claims of idempotent sends held. */
  get claims (): number {
    return this.#claims.size
  }

  get size (): number {
    return this.#tasks.size
  }

  /** The size estimate of every task held, bytes. */
  get bytes (): number {
    return this.#bytes
  }

  async insert (record: StoredTask): Promise<void> {
    this.insertNow(record)
  }

  insertNow (record: StoredTask): void {
    this.sweep()
    const live = !isTerminal(record.task.status.state)
    if (live && (this.#byOwner.get(record.owner)?.live ?? 0) >= this.#maxLive) throw new LiveTaskLimit(record.owner)
    if (this.#tasks.size >= this.#maxTasks) {
      if (this.#oldest === null) throw new TaskStoreFull(this.#tasks.size)
      this.#delete(this.#oldest)
    }
    const bytes = taskBytes(record.task)
    this.admit(bytes)
    const entry: Entry = { record, bytes, seq: ++this.#seq, older: null, newer: null, linked: false, ownerOlder: null, ownerNewer: null, kept: null, keptSizes: null, lastEvent: 0 }
    this.#bytes += bytes
    this.#tasks.set(record.task.id, entry)
    // Read again: an eviction above may have taken the owner's last task, and its list with it.
    const owned = this.#byOwner.get(record.owner)
    if (owned === undefined) {
      this.#byOwner.set(record.owner, { oldest: entry, newest: entry, live: live ? 1 : 0 })
    } else {
      const newest = owned.newest as Entry
      entry.ownerOlder = newest
      newest.ownerNewer = entry
      owned.newest = entry
      if (live) owned.live++
    }
    this.#track(entry)
  }

  async get (id: string): Promise<StoredTask | null> {
    return this.getNow(id)
  }

  async replace (next: StoredTask): Promise<boolean> {
    return this.replaceNow(next)
  }

  /** This store is its own synchronous view (TaskStore.sync). */
  get sync (): SyncTaskStore | undefined {
    return this
  }

  getNow (id: string): StoredTask | null {
    const entry = this.#tasks.get(id)
    if (!entry) return null
    if (this.#expired(entry, this.#now())) {
      this.#delete(entry)
      return null
    }
    return entry.record
  }

  replaceNow (next: StoredTask): boolean {
    const entry = this.#tasks.get(next.task.id)
    if (!entry || entry.record.version !== next.version - 1) return false
    const previous = entry.record
    const change = taskBytesChange(next.task, previous.task)
    this.#bytes += change
    entry.bytes += change
    entry.record = next
    if (!isTerminal(previous.task.status.state) && isTerminal(next.task.status.state)) (this.#byOwner.get(next.owner) as OwnerList).live--
    this.#track(entry)
    // A task's own writes are never refused (its run would be failed for it): older terminal tasks make the room.
    while (this.#bytes > this.#maxBytes && this.#oldest !== null && this.#oldest !== entry) this.#delete(this.#oldest)
    return true
  }

  /**
   * Makes room for `bytes` more (a new task, or a message that joins one) by evicting the least recently updated
   * terminal tasks; throws TaskStoreFull when only unfinished tasks are left and they leave no room.
   */
  admit (bytes: number): void {
    while (this.#bytes + bytes > this.#maxBytes) {
      if (this.#oldest === null) throw new TaskStoreFull(this.#tasks.size)
      this.#delete(this.#oldest)
    }
  }

  async claimInterrupted (before: number): Promise<string[]> {
    const ids: string[] = []
    for (const [id, updatedAt] of this.#interrupted) {
      if (updatedAt > before) break
      ids.push(id)
      this.#interrupted.delete(id)
    }
    return ids
  }

  async list (query: TaskListQuery): Promise<TaskListPage> {
    const after = query.pageToken === undefined ? Infinity : Number(decodePageToken('m', query.pageToken, 15))
    const now = this.#now()
    const tasks: StoredTask[] = []
    let lastSeq = 0
    const newestFirst = query.owner === undefined ? [...this.#tasks.values()].reverse() : this.#owned(query.owner)
    for (const entry of newestFirst) {
      if (entry.seq >= after) continue
      const { task } = entry.record
      if (query.contextId !== undefined && task.contextId !== query.contextId) continue
      if (query.state !== undefined && task.status.state !== query.state) continue
      if (this.#expired(entry, now)) continue
      if (query.where !== undefined && !query.where(task)) continue
      if (tasks.length === query.pageSize) return { tasks, nextPageToken: encodePageToken('m', lastSeq) }
      tasks.push(entry.record)
      lastSeq = entry.seq
    }
    return { tasks, nextPageToken: '' }
  }

  /** One owner's entries, newest first. */
  * #owned (owner: string): Generator<Entry> {
    for (let entry = this.#byOwner.get(owner)?.newest ?? null; entry !== null; entry = entry.ownerOlder) yield entry
  }

  /**
   * A stream follows the task from now on: its events from here are kept for streams that resume. Until then nobody
   * holds an id of one of its events to resume by (a stream's frames are where ids come from), so none is kept, only
   * the version of its last, by which a resume from a guessed id is answered as a resync. A task sent without a
   * stream and never subscribed to, the bulk of a busy server's, saves about 700 bytes (docs/architecture.md, "Lean
   * and current: the design": 2,180 bytes of heap per stored task against 1,491 with no events kept).
   */
  follow (taskId: string): void {
    if (this.#maxEvents === 0) return
    const entry = this.#tasks.get(taskId)
    if (entry === undefined) return
    entry.kept ??= []
    entry.keptSizes ??= []
  }

  /**
   * Keeps a task's event for resuming streams, once a stream has followed it (`follow`), within
   * `server.stream_replay.max_events` and within `tasks.max_bytes` with the tasks (docs/configuration.md,
   * `tasks.max_bytes`): past the bound, as for the task's own writes, older terminal tasks are evicted first; then
   * the task's own oldest kept events go (a stream resuming before them gets the task afresh, as past `max_events`).
   * Its newest event is always kept.
   */
  keep (taskId: string, event: TaskEvent): void {
    const entry = this.#tasks.get(taskId)
    if (entry === undefined) return
    const prev = entry.lastEvent
    entry.lastEvent = event.version
    // A task no stream follows keeps none (`follow`); `max_events: 0` never follows.
    const kept = entry.kept
    if (kept === null) return
    const max = this.#maxEvents
    const sizes = entry.keptSizes as number[]
    const one = keptEvent(event, prev)
    const bytes = keptEventBytes(one)
    kept.push(one)
    sizes.push(bytes)
    entry.bytes += bytes
    this.#bytes += bytes
    // Trimmed an eighth at a time, so that a long task does not shift its array on every event.
    if (kept.length > max + (max >> 3)) this.#trimKept(entry, kept.length - max)
    if (this.#bytes <= this.#maxBytes) return
    while (this.#bytes > this.#maxBytes && this.#oldest !== null && this.#oldest !== entry) this.#delete(this.#oldest)
    let n = 0
    for (let over = this.#bytes - this.#maxBytes; over > 0 && n < kept.length - 1; n++) over -= sizes[n]
    this.#trimKept(entry, n)
  }

  /** Drops an entry's `n` oldest kept events and their bytes. */
  #trimKept (entry: Entry, n: number): void {
    const sizes = entry.keptSizes as number[]
    let freed = 0
    for (let i = 0; i < n; i++) freed += sizes[i]
    ;(entry.kept as KeptEvent[]).splice(0, n)
    sizes.splice(0, n)
    entry.bytes -= freed
    this.#bytes -= freed
  }

  /** Drops all of an entry's kept events (`server.stream_replay.ttl` has passed). */
  #dropKept (entry: Entry): void {
    this.#trimKept(entry, (entry.kept as KeptEvent[]).length)
    entry.kept = entry.keptSizes = null
  }

  async eventsAfter (taskId: string, after: number): Promise<KeptEvent[] | null> {
    const entry = this.#tasks.get(taskId)
    if (entry === undefined) return []
    if (entry.kept !== null && this.#replayExpired(entry, this.#now())) this.#dropKept(entry)
    if (entry.lastEvent <= after) return []
    const kept = entry.kept
    if (kept === null) return null
    let i = kept.length
    while (i > 0 && kept[i - 1].version > after) i--
    // The first event after `after` must follow it directly, else some were trimmed away.
    if (i === kept.length || kept[i].prev > after) return null
    return kept.slice(i)
  }

  #replayExpired (entry: Entry, now: number): boolean {
    return entry.linked && entry.record.updatedAt + this.#replayTtlMs <= now
  }

  onDelete (listener: (taskId: string) => void): void {
    this.#deleteListeners.push(listener)
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    clearInterval(this.#timer)
  }

  /**
   * Drops terminal tasks past their TTL: they are kept in expiry order, so this stops at the first live one. The
   * kept events of terminal tasks past `server.stream_replay.ttl` go too (the same order).
   */
  sweep (): void {
    const now = this.#now()
    while (this.#oldest !== null && this.#expired(this.#oldest, now)) this.#delete(this.#oldest)
    for (let entry = this.#oldest; entry !== null && this.#replayExpired(entry, now); entry = entry.newer) {
      if (entry.kept !== null) this.#dropKept(entry)
    }
  }

  #expired (entry: Entry, now: number): boolean {
    return entry.linked && entry.record.updatedAt + this.#ttlMs <= now
  }

  /**
   * A terminal task goes to the newest end of the terminal list; a later write moves it there again. An interrupted
   * one goes to the newest end of the interrupted map, which it leaves with its state.
   */
  #track (entry: Entry): void {
    const { task } = entry.record
    if (isInterrupted(task.status.state)) {
      this.#interrupted.delete(task.id)
      this.#interrupted.set(task.id, entry.record.updatedAt)
    } else if (this.#interrupted.size > 0) {
      this.#interrupted.delete(task.id)
    }
    if (!isTerminal(task.status.state)) return
    this.#unlink(entry)
    entry.older = this.#newest
    entry.newer = null
    if (this.#newest === null) this.#oldest = entry
    else this.#newest.newer = entry
    this.#newest = entry
    entry.linked = true
  }

  #unlink (entry: Entry): void {
    if (!entry.linked) return
    if (entry.older === null) this.#oldest = entry.newer
    else entry.older.newer = entry.newer
    if (entry.newer === null) this.#newest = entry.older
    else entry.newer.older = entry.older
    entry.older = entry.newer = null
    entry.linked = false
  }

  #delete (entry: Entry): void {
    const { owner, task: { id } } = entry.record
    this.#tasks.delete(id)
    this.#bytes -= entry.bytes
    this.#unlink(entry)
    const owned = this.#byOwner.get(owner) as OwnerList
    if (entry.ownerOlder === null) owned.oldest = entry.ownerNewer
    else entry.ownerOlder.ownerNewer = entry.ownerNewer
    if (entry.ownerNewer === null) owned.newest = entry.ownerOlder
    else entry.ownerNewer.ownerOlder = entry.ownerOlder
    if (owned.oldest === null) this.#byOwner.delete(owner)
    for (const listener of this.#deleteListeners) listener(id)
  }
}
