import type { Artifact, Task, TaskState, TaskStatus } from '../../schemas/task.js'
import type { TaskEvent } from './event-bus.js'

/** A task as stored, with what only the server knows about it. Stored records are never mutated in place. */
export interface StoredTask {
  readonly task: Task
  /** The principal id that created the task (CONTRACT.md §9, tenancy). */
  readonly owner: string
  /** Bumped by one on every write: compare-and-set token and event order. */
  readonly version: number
  /** Creation time, ms since the epoch; `tasks/list` is newest first by it. */
  readonly createdAt: number
  readonly updatedAt: number
}

/** What a task event keeps of itself for streams that resume: what its encoders need. */
export type KeptBody =
  | { readonly type: 'status', readonly status: TaskStatus, readonly final: boolean }
  | { readonly type: 'artifact', readonly artifact: Artifact, readonly append: boolean, readonly lastChunk: boolean }

/**
 * A task event as kept for streams that resume (README, "Resumable streams"): its body, its version, and `prev`, the
 * version of the task's event before it (0 for its first), by which a reader knows that nothing is missing.
 */
export type KeptEvent = KeptBody & { readonly version: number, readonly prev: number }

/** The kept body of an event (Redis keeps the version and `prev` in the stream entry's id and fields). */
export function keptBody (event: TaskEvent): KeptBody {
  if (event.type === 'status') return { type: 'status', status: event.task.status, final: event.final }
  return { type: 'artifact', artifact: event.artifact, append: event.append, lastChunk: event.lastChunk }
}

/** The kept form of an event, after the task's event `prev`. */
export function keptEvent (event: TaskEvent, prev: number): KeptEvent {
  return Object.assign(keptBody(event), { version: event.version, prev })
}

export interface InsertOptions {
  /** A store that `leasesOnInsert`: false stores the task without a lease (its run has ended already). Default true. */
  lease?: boolean
  /**
   * The events of the task's first turn, made before it was stored (TaskService.start): a store that keeps events
   * with its writes (Redis) keeps these with the insert.
   */
  events?: readonly TaskEvent[]
}

export interface TaskListQuery {
  /**
   * Only tasks of this owner. Undefined lists every owner's: the memory store only (tests look at it so); the methods
   * always list one owner's, and the Redis store keeps no index of every task, which it would have to prune.
   */
  owner?: string
  contextId?: string
  state?: TaskState
  pageSize: number
  /** Opaque cursor from a previous page's `nextPageToken`. */
  pageToken?: string
  /** Only tasks it is true of (a filter no index serves, such as v1.0 `statusTimestampAfter`). */
  where?: (task: Task) => boolean
}

export interface TaskListPage {
  tasks: StoredTask[]
  /** Empty when there is no further page. */
  nextPageToken: string
}

/**
 * A store in this process that answers at once: `insertNow`, `getNow` and `replaceNow` are `insert`, `get` and
 * `replace` without a promise.
 */
export interface SyncTaskStore {
  insertNow (record: StoredTask): void
  getNow (id: string): StoredTask | null
  replaceNow (next: StoredTask): boolean
}

/**
 * Where tasks live. Implementations: MemoryTaskStore (bounded by `tasks.max_tasks`, terminal tasks kept `tasks.ttl`)
 * and, with `tasks.backend: kvcache`, a Redis store sharing tasks between instances.
 */
export interface TaskStore {
  /**
   * Stores a new task (version 1). Throws TaskStoreFull when the store is full of unfinished tasks, and
   * LiveTaskLimit when its owner holds `tasks.max_live_per_principal` unfinished tasks.
   */
  insert (record: StoredTask, opts?: InsertOptions): Promise<void>
  get (id: string): Promise<StoredTask | null>
  /**
   * The task's stored version, without reading the task (it may be megabytes); null when it is not stored. A store
   * without it is asked `get`.
   */
  version? (id: string): Promise<number | null>
  /**
   * Compare-and-set: writes `next` only if the stored version is `next.version - 1`. Returns false when another
   * writer got there first (or the task is gone); the caller re-reads and retries. A store that `announces` also
   * publishes `event` (the change, as the task's subscribers get it) to the other instances in the same step. A store
   * that `recordsPush` answers `'outbox'` for a change of state of a task with push configs (recorded for them), and
   * true for any other write: a change of state it answers true for had no push configs. Other stores answer true.
   */
  replace (next: StoredTask, event?: TaskEvent): Promise<ReplaceOutcome>
  list (query: TaskListQuery): Promise<TaskListPage>
  /**
   * Ids of the interrupted tasks (`input_required`, `auth_required`) last updated at or before `before` (ms since
   * the epoch), oldest first: the task service cancels them (`tasks.interrupted_ttl`). An id is handed out once; a
   * Redis store hands it out again a minute later should the task still be interrupted then.
   */
  claimInterrupted (before: number): Promise<string[]>
  /**
   * Memory store: makes room for `bytes` more of a task (a message that joins it) within `tasks.max_bytes`, or
   * throws TaskStoreFull. Stores bounded otherwise (Redis' `maxmemory`) leave it out.
   */
  admit? (bytes: number): void
  /**
   * The task's kept events after version `after`, oldest first; null when some of those are no longer kept (the
   * client is too far behind, or the task's events outlived `server.stream_replay`). A task not found has none.
   */
  eventsAfter (taskId: string, after: number): Promise<KeptEvent[] | null>
  /**
   * Keeps a task's event for resuming streams. Memory store: the task service calls it after each write it
   * publishes. Stores that keep events with the write itself (Redis) leave it out.
   */
  keep? (taskId: string, event: TaskEvent): void
  /** Throws when the backend does not answer (used by `/ready`). */
  ping (): Promise<void>
  close (): Promise<void>
  /**
   * Memory store: `listener` hears the id of every task it evicts or expires, so that what hangs off the task in
   * memory goes with it. Stores whose records expire on their own (Redis) leave it out.
   */
  onDelete? (listener: (taskId: string) => void): void
  /**
   * The memory store answers in this process: the task service reads and writes it through this view, with no
   * promise and no tick between the read and the compare-and-set. Stores across the network leave it out.
   */
  readonly sync?: SyncTaskStore
  /**
   * True when `insert` also takes the new task's lease (Redis with leases), and a write that makes the task terminal
   * drops it: the task is never stored unleased, so a crash right after the insert leaves it to the reaper instead of
   * stranding it in `submitted`, and a finished run has no lease left to give back.
   */
  readonly leasesOnInsert?: boolean
  /** True when `replace` publishes its event to the other instances itself (Redis): the caller tells only its own. */
  readonly announces?: boolean
  /** True when `replace` tells whether the task had push configs (see `replace`). */
  readonly recordsPush?: boolean
}

/** What `replace` did: false, not written (version mismatch); `'outbox'`, written and recorded for push configs. */
export type ReplaceOutcome = boolean | 'outbox'

/**
 * What follows the task in `JSON.stringify(record)`: `{"task":`, the task's JSON, then this is the same bytes, with
 * the task (the bulk of it) serialized once for both the stored record and the event that announces the write (the
 * Redis store's script puts them together). Records are built with their keys in this order (`TaskService`, and
 * JSON.parse keeps it).
 */
export function recordTail (record: StoredTask): string {
  return `,"owner":${JSON.stringify(record.owner)},"version":${record.version},"createdAt":${record.createdAt},"updatedAt":${record.updatedAt}}`
}
