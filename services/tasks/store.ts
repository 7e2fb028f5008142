import type { Artifact, Task, TaskState, TaskStatus } from '../../schemas/task.js'
import type { TaskEvent } from './event-bus.js'
import { traceCarrier, type TraceCarrier } from '../kernel/tracing.js'

/** A task as stored, with what only the server knows about it. Immutable: see `TaskStore`, "Records". */
export interface StoredTask {
  readonly task: Task
  /** The id of the principal that created the task: only its owner sees or lists it (docs/security.md). */
  readonly owner: string
  /** One more on every write: the compare-and-set token, and the id of the write's event if it has one. */
  readonly version: number
  /** When the task was created, ms since the epoch. */
  readonly createdAt: number
  /** When the last write was made, ms since the epoch: interrupted tasks are canceled counting from it. */
  readonly updatedAt: number
  /**
   * The trace context of the write that made this version, when a span recorded it (absent otherwise). It goes with
   * the record into the push outbox, so that a change whose writer died before queueing its webhooks is delivered in
   * its trace by the instance that relays it.
   */
  readonly trace?: TraceCarrier
}

/** What a task event keeps of itself for streams that resume: what its encoders need. */
export type KeptBody =
  | { readonly type: 'status', readonly status: TaskStatus, readonly final: boolean }
  | { readonly type: 'artifact', readonly artifact: Artifact, readonly append: boolean, readonly lastChunk: boolean }

/**
 * A task event as kept for streams that resume (docs/architecture.md, "Resumable streams"): its body, its version, and `prev`, the
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

/**
 * A kept event as the stream's encoders and listeners take it: its task is `task` as it stands (their encoders read
 * its id, contextId and, for a status event, its status: the event's own).
 */
export function fromKept (kept: KeptEvent, task: Task): TaskEvent {
  if (kept.type === 'status') return { type: 'status', version: kept.version, task: { ...task, status: kept.status }, final: kept.final }
  return { type: 'artifact', version: kept.version, task, artifact: kept.artifact, append: kept.append, lastChunk: kept.lastChunk }
}

export interface InsertOptions {
  /** For a store that `leasesOnInsert`: false stores the task without a lease (its run has ended). Default true. */
  lease?: boolean
  /**
   * The events of the task's first turn, which ran before the task was stored (`TaskService.start`, stores without
   * `sync` only), oldest first: kept with the insert, as `replace` keeps its `event` (see "Replay retention").
   */
  events?: readonly TaskEvent[]
}

/**
 * A send's claim on its principal's `messageId` (see `TaskStore`, "Idempotent sends"): what a store keeps under the
 * key (`owner`, `messageId`) for `tasks.dedupe_window`.
 */
export interface SendClaim {
  /** The id of the principal that sent the message. */
  readonly owner: string
  readonly messageId: string
  /** The task the send makes (a new id) or continues (the message's `taskId`). */
  readonly taskId: string
  /** The message's hash (services/tasks/send-claims.ts, `messageHash`): what tells a duplicate from a reuse. */
  readonly hash: string
  /** When the claim was taken, ms since the epoch: a claim whose task never came is taken over after a while. */
  readonly at: number
}

/** What `list` reads: see `TaskStore`, "Listing". */
export interface TaskListQuery {
  /**
   * Only this owner's tasks. The task service always gives one; undefined (every owner's) is for tests of the memory
   * store, and RedisTaskStore throws a TypeError for it: it keeps no index of every task.
   */
  owner?: string
  contextId?: string
  /** The task's current state. */
  state?: TaskState
  /** At least 1. */
  pageSize: number
  /** A previous page's `nextPageToken`. */
  pageToken?: string
  /** Applied after the other filters, to what they let through: no index serves it (v1.0 `statusTimestampAfter`). */
  where?: (task: Task) => boolean
}

export interface TaskListPage {
  tasks: StoredTask[]
  /** Empty when there is no further page. */
  nextPageToken: string
}

/**
 * `insert`, `get` and `replace` of a store in this process, answered without a promise: same data, same rules, same
 * errors (see `TaskStore.sync`).
 */
export interface SyncTaskStore {
  insertNow (record: StoredTask): void
  getNow (id: string): StoredTask | null
  replaceNow (next: StoredTask): boolean
}

/**
 * Where tasks live: the contract a task store backend implements. MemoryTaskStore (`tasks.backend: memory`) keeps
 * them in this process; RedisTaskStore (`tasks.backend: kvcache`) shares them between instances. `storeContract`
 * (test/services/tasks/store-contract.ts) is the acceptance test every backend must pass, and docs/stores.md says how
 * to run it against a new one. The obligations, in order:
 *
 * Records. A StoredTask is immutable: a store never changes a record given to it, and callers never change one it
 * hands out (the memory store hands out the very object it stored). Every write stores a whole new record whose
 * `version` is one more than the one it replaces. `get` and `list` hand back the record last written, equal to it
 * and serializing to the same JSON text, keys in the same order: after a write whose answer was lost, the task
 * service reads the task again and compares the two texts to learn whether the write landed. (A backend that keeps
 * JSON must keep it as written: in PostgreSQL `json` or `text`, not `jsonb`, which reorders keys.)
 *
 * Insert. `insert` stores a new task at the version it carries: 1, or more when its first turn ran before it was
 * stored. It refuses, storing nothing:
 * - LiveTaskLimit when the task is unfinished and its owner holds `tasks.max_live_per_principal` unfinished tasks
 *   already (interrupted ones count; the write that makes a task terminal frees its place);
 * - TaskStoreFull when a bounded store has no room once it has evicted what it may (memory: `tasks.max_tasks` and
 *   `tasks.max_bytes`, evicting terminal tasks only);
 * - TaskConflict when the id is stored already, unless the stored record is exactly this one (a retried insert whose
 *   first answer was lost), which succeeds. Ids are server-made UUIDs: the memory store does not check.
 *
 * Compare-and-set. `replace(next)` writes `next` only if the stored version is `next.version - 1`; otherwise, and
 * when the task is not stored, it answers false and writes nothing, and the caller reads again and retries. A write
 * is atomic: the record, its index moves, its kept event and what the optional capabilities add to it land together
 * or not at all. A backend it cannot reach makes every method throw StorageUnavailable (A2A_ERR_STORAGE_UNAVAILABLE,
 * HTTP 503) with a short fixed reason, never the driver's error, which may carry the task: the task service retries a
 * run's write on that code alone, for up to `tasks.lease_ttl`.
 *
 * Listing. `list` answers one owner's tasks, newest first in the order they were inserted (a sequence the store
 * assigns, without ties; not `createdAt`, which a task stored after its first turn carries from before), only those
 * of `contextId` and in `state` (the current one) when given, then only those `where` accepts. A page holds at most
 * `pageSize` tasks, each as last written. `nextPageToken` is '' on the last page, else an opaque base64url token from
 * which the next page goes on strictly after the last task returned: no task is repeated or skipped, and tasks
 * inserted meanwhile are not seen. A token this store did not issue is invalidParams (-32602, data
 * `params.pageToken: ...`). A filtered page must cost about its size, not the owner's history: index each owner's
 * tasks by insertion order, and by context and by state as well (RedisTaskStore: a sorted set each; in SQL, indexes
 * on (owner, seq), (owner, context_id, seq) and (owner, state, seq)). Expired tasks are never listed.
 *
 * Interrupted tasks. `claimInterrupted(before)` answers the ids of the tasks in `input_required` or `auth_required`
 * last updated at or before `before` (ms since the epoch), oldest first, whether they got there by a write or were
 * inserted so (RedisTaskStore misses the latter today: docs/stores.md); the task service cancels each one still
 * interrupted and due (`tasks.interrupted_ttl`). An id is handed out once while its task stays interrupted
 * (RedisTaskStore hands it out again a minute later, should the instance that took it have died, and at most 100 per
 * call); a task that leaves those states is no longer handed out, and one interrupted again is, by its new update.
 * An id handed out twice costs a read; one never handed out leaves its task waiting for ever.
 *
 * Replay retention (docs/architecture.md, "Resumable streams"). A store keeps each task's events for streams that resume:
 * `eventsAfter(taskId, after)` answers those with a version above `after`, oldest first, each with its `prev`; []
 * when there is none (and for a task not stored); null when one of them is no longer kept, and the stream then
 * resyncs. The store knows the version of a task's last event even when it keeps none, so that a client that got
 * every event is answered []. An event may be dropped only when:
 * - its task has `server.stream_replay.max_events` newer events (0 keeps none; RedisTaskStore trims approximately,
 *   never below that many);
 * - its task has been terminal for `server.stream_replay.ttl` seconds;
 * - its task expires or is evicted;
 * - memory: `tasks.max_bytes` needs the room once terminal tasks are evicted (a task's newest event always stays);
 * - a store with `follow`: no stream had followed its task when it was written (nobody holds its id to resume by).
 * Events reach the store three ways, and it keeps what each brings: `insert`'s `events`, `replace`'s `event` (the
 * task service gives one only to a store that `announces`), and `keep`, called after every other write with an event.
 *
 * Expiry and eviction. A terminal task is kept `tasks.ttl` seconds after its last write; then `get`, `version` and
 * `list` no longer see it and its kept events go with it. A store may drop it lazily, and may evict terminal tasks
 * sooner to stay within its bounds (memory: the least recently updated first). An unfinished task never expires and
 * is never evicted: its run, the lease reaper or `tasks.interrupted_ttl` makes it terminal, and then it expires.
 *
 * Idempotent sends (docs/protocol.md, "Idempotent sends"). `claimSend(claim, windowMs)` takes the key (`owner`,
 * `messageId`) for `windowMs` and answers null, unless a claim holds it already: then it answers that claim and writes
 * nothing. With `over`, it also takes the key from a claim that is exactly `over` (same task id, hash and time): the
 * task service takes over a claim whose task never came (its send failed or its instance died). Two claims of one key,
 * from any number of instances, never both get null: the check and the write are one step (Redis: one script;
 * PostgreSQL: an insert on the key's primary key). A claim is dropped once `windowMs` has passed, and by
 * `releaseSend(claim)` when it is still exactly `claim` (a send refused before its task was stored). A bounded store
 * bounds its claims too (memory: `tasks.max_tasks` of them, the oldest dropped first). The claim is taken before the
 * send's task is made or its message appended, so before any run of the agent: the task may be stored after its first
 * turn ran (see `sync`).
 *
 * Optional capabilities. The members marked optional below each say what they buy and what the task service does
 * without them. A backend may leave any of them out.
 */
export interface TaskStore {
  /** Stores a new task: see "Insert". */
  insert (record: StoredTask, opts?: InsertOptions): Promise<void>
  /** The task as last written (see "Records"); null when it is not stored. */
  get (id: string): Promise<StoredTask | null>
  /**
   * Optional: the task's stored version, without reading the task (it may be megabytes); null when it is not stored.
   * A stream asks at its heartbeats whether its task has vanished or moved past what it sent. Without it, the task
   * service reads the task with `get`.
   */
  version? (id: string): Promise<number | null>
  /**
   * The compare-and-set write: see "Compare-and-set". `event` is the write's event: the store keeps it with the write
   * (see "Replay retention") and, if it `announces`, publishes it. The task service gives one only to a store that
   * `announces`. The outcome is false (not written), `'outbox'` (see `recordsPush`) or true.
   */
  replace (next: StoredTask, event?: TaskEvent): Promise<ReplaceOutcome>
  /** One owner's tasks, a page at a time: see "Listing". */
  list (query: TaskListQuery): Promise<TaskListPage>
  /** The interrupted tasks due for cancellation: see "Interrupted tasks". */
  claimInterrupted (before: number): Promise<string[]>
  /**
   * Optional, for a store bounded by size: makes room for `bytes` more (a message joining a task) within
   * `tasks.max_bytes` by evicting terminal tasks, or throws TaskStoreFull. The task service calls it before it writes
   * the message. Without it, nothing is checked before the write (Redis is bounded by its own `maxmemory`).
   */
  admit? (bytes: number): void
  /** The task's kept events after version `after`, or null: see "Replay retention". */
  eventsAfter (taskId: string, after: number): Promise<KeptEvent[] | null>
  /**
   * Optional: keeps the event of a write just made, for a store that does not keep it with the write (see "Replay
   * retention"). Returns nothing and must not throw. Without it, a store keeps only what `insert` and `replace` bring.
   */
  keep? (taskId: string, event: TaskEvent): void
  /**
   * Optional: a stream follows the task from now on (it has subscribed, and reads the task next), so its events from
   * here must be kept (see "Replay retention"). A store that has it may keep none of a task's events before it is
   * called. Without it, a store keeps every event it is given.
   */
  follow? (taskId: string): void
  /**
   * Optional: takes a send's claim, or answers the claim that holds its key (see "Idempotent sends"). A store in this
   * process answers at once. Without it (and `releaseSend`), sends are not deduplicated whatever
   * `tasks.dedupe_window` says.
   */
  claimSend? (claim: SendClaim, windowMs: number, over?: SendClaim): SendClaim | null | Promise<SendClaim | null>
  /** Drops `claim` if it still holds its key: see "Idempotent sends". Present with `claimSend`. */
  releaseSend? (claim: SendClaim): void | Promise<void>
  /** Throws when the backend does not answer: `/ready` answers 503 meanwhile. */
  ping (): Promise<void>
  /** Stops what the store started (timers); a client it was given stays open for its owner to close. */
  close (): Promise<void>
  /**
   * Optional: `listener` hears the id of every task the store evicts or expires, so that what hangs off the task
   * goes with it: the webhook notifier drops the task's push configs (`PushConfigStore.forget`). Without it, push
   * configs expire on their own (`PutOptions.ttlSeconds`).
   */
  onDelete? (listener: (taskId: string) => void): void
  /**
   * Optional, for a store in this process: the same store, answered without a promise. With it, the task service reads
   * and writes through it with no tick between the read and the compare-and-set (which then cannot lose), and a run
   * whose executor answers at once ends before `dispatch` returns, with no promise made. Without it, a new task's first
   * turn runs before the task is stored and the task is inserted in the state the turn reached (`InsertOptions`), a run
   * writes from the record it wrote last and reads only when the compare-and-set fails, and a write refused with
   * StorageUnavailable is retried.
   */
  readonly sync?: SyncTaskStore
  /**
   * Optional, with the task leases of `tasks.backend: kvcache` (RedisTaskLeases: the sorted set
   * `<tasks.key_prefix>leases`, scored by expiry): true when `insert` takes the new task's lease in the same step,
   * unless `InsertOptions.lease` is false or the task is terminal, and the write that makes a task terminal drops it.
   * A task is then never stored unleased, so a crash right after its insert leaves it to the reaper instead of
   * stranding it in `submitted`; the run takes no lease of its own, and gives none back once the task is terminal.
   * Without it, the task service takes the lease after the insert and gives it back when the run ends.
   */
  readonly leasesOnInsert?: boolean
  /**
   * Optional, with the Redis event bus (RedisTaskEventBus): true when `replace(next, event)` also publishes `event` to
   * the other instances in the same step, on the task's channel `<tasks.key_prefix>events:<taskId>`, as the bus's
   * message (`TaskEventAnnouncer`): the bus's origin tag (a UUID and a newline), then the event's JSON with `task`
   * last, or without its task for a chunk appended to an artifact (the other instances add it to the task as they
   * last saw it). The task service then hands the event to this process's listeners only. Without it, the task
   * service gives `replace` no event, calls `keep`, and publishes the event itself after the write: one round trip
   * more per event, and an event lost should the instance die between the two.
   */
  readonly announces?: boolean
  /**
   * Optional, with push configs in the same backend: true when `replace` looks whether the task has push configs. A
   * write that changes the task's state while it has some is recorded in the push outbox in the same step, and answered
   * `'outbox'` (Redis: `<taskId>.<version>` in the sorted set `<tasks.key_prefix>outbox`, scored by the write time, and
   * the record JSON under it in the hash `<tasks.key_prefix>outbox:b`); every other write is answered true, so a state
   * change answered true had no push configs. The notifier skips those, queues the deliveries of the others and
   * acknowledges the entry; an entry left behind by an instance that died is relayed by another (RedisPushOutbox).
   * Without it, the notifier asks the push config store (`holds`, else `list`) at every state change, and a crash
   * between the write and the queueing of its webhooks loses them.
   */
  readonly recordsPush?: boolean
}

/** What `replace` did: false, not written (version mismatch); `'outbox'`, written and recorded for push configs. */
export type ReplaceOutcome = boolean | 'outbox'

/**
 * `record` with the trace context active here (`StoredTask.trace`), when a span records; else `record` itself, with
 * no `trace` key, so that an untraced write is the same bytes it always was.
 */
export function withTrace (record: StoredTask): StoredTask {
  const trace = traceCarrier()
  return trace === undefined ? record : { ...record, trace }
}

/**
 * What follows the task in `JSON.stringify(record)`: `{"task":`, the task's JSON, then this is the same bytes, with
 * the task (the bulk of it) serialized once for both the stored record and the event that announces the write (the
 * Redis store's script puts them together). Records are built with their keys in this order (`TaskService`, and
 * JSON.parse keeps it).
 */
export function recordTail (record: StoredTask): string {
  const trace = record.trace === undefined ? '' : `,"trace":${JSON.stringify(record.trace)}`
  return `,"owner":${JSON.stringify(record.owner)},"version":${record.version},"createdAt":${record.createdAt},"updatedAt":${record.updatedAt}${trace}}`
}
