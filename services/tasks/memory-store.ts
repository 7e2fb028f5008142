import { TaskStoreFull, invalidParams } from '../errors.js'
import { isTerminal } from './states.js'
import type { StoredTask, TaskListPage, TaskListQuery, TaskStore } from './store.js'

export interface MemoryTaskStoreOptions {
  /** `tasks.max_tasks`: at most this many tasks are held. */
  maxTasks: number
  /** `tasks.ttl` in seconds: how long a terminal task is kept after its last update. */
  ttlSeconds: number
  /** Clock, for tests. */
  now?: () => number
  /** How often expired tasks are swept, ms. */
  sweepIntervalMs?: number
}

const DEFAULT_SWEEP_MS = 60_000

interface Entry {
  record: StoredTask
  /** Insertion order, the cursor of `list` pages. */
  seq: number
}

/**
 * Tasks in a Map, bounded. Terminal tasks sit in a second Map in the order they were last updated, which is both
 * their expiry order (one TTL for all) and their eviction order, so expiry and eviction cost O(1) per task.
 */
export class MemoryTaskStore implements TaskStore {
  readonly #tasks = new Map<string, Entry>()
  readonly #terminal = new Map<string, number>()
  readonly #byOwner = new Map<string, Set<string>>()
  readonly #deleteListeners: Array<(taskId: string) => void> = []
  readonly #maxTasks: number
  readonly #ttlMs: number
  readonly #now: () => number
  readonly #timer: NodeJS.Timeout
  #seq = 0

  constructor (opts: MemoryTaskStoreOptions) {
    this.#maxTasks = opts.maxTasks
    this.#ttlMs = opts.ttlSeconds * 1000
    this.#now = opts.now ?? Date.now
    this.#timer = setInterval(() => this.sweep(), opts.sweepIntervalMs ?? DEFAULT_SWEEP_MS).unref()
  }

  get size (): number {
    return this.#tasks.size
  }

  async insert (record: StoredTask): Promise<void> {
    this.sweep()
    if (this.#tasks.size >= this.#maxTasks) {
      const oldest = this.#terminal.keys().next()
      if (oldest.done) throw new TaskStoreFull(this.#tasks.size)
      this.#delete(oldest.value)
    }
    this.#tasks.set(record.task.id, { record, seq: ++this.#seq })
    let owned = this.#byOwner.get(record.owner)
    if (!owned) this.#byOwner.set(record.owner, (owned = new Set()))
    owned.add(record.task.id)
    this.#track(record)
  }

  async get (id: string): Promise<StoredTask | null> {
    const entry = this.#tasks.get(id)
    if (!entry) return null
    const expires = this.#terminal.get(id)
    if (expires !== undefined && expires <= this.#now()) {
      this.#delete(id)
      return null
    }
    return entry.record
  }

  async replace (next: StoredTask): Promise<boolean> {
    const entry = this.#tasks.get(next.task.id)
    if (!entry || entry.record.version !== next.version - 1) return false
    entry.record = next
    this.#track(next)
    return true
  }

  async list (query: TaskListQuery): Promise<TaskListPage> {
    const after = query.pageToken === undefined ? Infinity : decodeToken(query.pageToken)
    const ids = query.owner === undefined ? [...this.#tasks.keys()] : [...(this.#byOwner.get(query.owner) ?? [])]
    const now = this.#now()
    const tasks: StoredTask[] = []
    let lastSeq = 0
    // Newest first: walk the insertion order backwards.
    for (let i = ids.length - 1; i >= 0; i--) {
      const entry = this.#tasks.get(ids[i]) as Entry
      if (entry.seq >= after) continue
      const { task } = entry.record
      if (query.contextId !== undefined && task.contextId !== query.contextId) continue
      if (query.state !== undefined && task.status.state !== query.state) continue
      const expires = this.#terminal.get(task.id)
      if (expires !== undefined && expires <= now) continue
      if (tasks.length === query.pageSize) return { tasks, nextPageToken: encodeToken(lastSeq) }
      tasks.push(entry.record)
      lastSeq = entry.seq
    }
    return { tasks, nextPageToken: '' }
  }

  onDelete (listener: (taskId: string) => void): void {
    this.#deleteListeners.push(listener)
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    clearInterval(this.#timer)
  }

  /** Drops terminal tasks past their TTL: they are kept in expiry order, so this stops at the first live one. */
  sweep (): void {
    const now = this.#now()
    for (const [id, expires] of this.#terminal) {
      if (expires > now) break
      this.#delete(id)
    }
  }

  #track (record: StoredTask): void {
    if (!isTerminal(record.task.status.state)) return
    // Re-inserting moves the task to the end: the Map stays ordered by last update.
    this.#terminal.delete(record.task.id)
    this.#terminal.set(record.task.id, record.updatedAt + this.#ttlMs)
  }

  #delete (id: string): void {
    const entry = this.#tasks.get(id) as Entry
    this.#tasks.delete(id)
    this.#terminal.delete(id)
    const owned = this.#byOwner.get(entry.record.owner) as Set<string>
    owned.delete(id)
    if (owned.size === 0) this.#byOwner.delete(entry.record.owner)
    for (const listener of this.#deleteListeners) listener(id)
  }
}

function encodeToken (seq: number): string {
  return Buffer.from(`m:${seq}`).toString('base64url')
}

function decodeToken (token: string): number {
  const m = /^m:(\d{1,15})$/.exec(Buffer.from(token, 'base64url').toString())
  if (!m) throw invalidParams('params.pageToken: is not a token this server issued')
  return Number(m[1])
}
