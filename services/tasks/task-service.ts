import { newId } from '../kernel/ids.js'
import type { MaybePromise } from '../kernel/maybe-promise.js'
import type { Logger } from '../kernel/logger.js'
import { traced } from '../kernel/tracing.js'
import type { Message, Task } from '../../schemas/task.js'
import { isAdmin, type Principal } from '../auth/principal.js'
import type { AgentExecutor, AgentTools } from '../agent/executor.js'
import { invalidParams, taskNotCancelable, taskNotFound } from '../kernel/errors.js'
import { LOCAL, type TaskEventBus } from './event-bus.js'
import type { TaskLeases } from './leases.js'
import { isSettled, isTerminal, isoTime } from './states.js'
import { valueBytes } from './task-bytes.js'
import { historyEntry, withStatus, type Mutation } from './mutations.js'
import { TaskWriter, type Draft, type StatusListener } from './writer.js'
import { TaskRuns } from './run-loop.js'
import { TaskHousekeeping } from './housekeeping.js'
import { SendDedupe } from './dedupe.js'
import { withTrace, type StoredTask, type TaskListPage, type TaskListQuery, type TaskStore } from './store.js'

// The task service, in four parts: this file is its public lifecycle (create, start, join, cancel, get, list, the
// blocking wait); `writer.ts` writes and publishes each change; `run-loop.ts` runs the executor, turn by turn;
// `housekeeping.ts` reaps the tasks of dead instances, expires abandoned ones and drains at shutdown. `mutations.ts`
// holds the changes themselves, as pure functions.

export {
  FAILED_MESSAGE, INTERRUPTED_EXPIRED_MESSAGE, OWNER_LOST_MESSAGE, SHUTDOWN_MESSAGE
} from './mutations.js'
export type { StatusListener } from './writer.js'

export interface TaskServiceOptions {
  store: TaskStore
  bus: TaskEventBus
  executor: AgentExecutor
  log: Logger
  /**
   * The tools an executor may call, bound to the task's principal and to the extensions the message's request
   * activated (a tool call serves that request).
   */
  toolsFor: (principal: Principal, extensions: readonly string[]) => AgentTools
  /** kvcache: the leases on running tasks, shared by every instance (CONTRACT.md §10). */
  leases?: TaskLeases
  /**
   * How long a run keeps retrying a write its store refused (storage down or stalled), ms; default 30,000 (kvcache:
   * `tasks.lease_ttl`). Past it the run stops and leaves its lease to lapse, so that the reaper fails the task.
   */
  storeRetryMs?: number
  /** `tasks.interrupted_ttl` in ms: an input_required or auth_required task left this long is canceled. */
  interruptedTtlMs?: number
  /**
   * `tasks.dedupe_window` in ms: a principal's send of a `messageId` it sent this recently gets the task the first
   * send made (`dedupe`). 0 or absent: off; off too with a store without `claimSend`.
   */
  dedupeWindowMs?: number
  now?: () => number
}

/** What a send carries besides its message, from the protocol layer (which reads it off the wire). */
export interface SendOptions {
  /** The extensions the request activated (docs/protocol.md, "Extensions"): the executor's `context.extensions`. */
  readonly extensions?: readonly string[]
}

/** What a blocking wait returns: the task and the version it was read at. */
export type SettledTask = Pick<StoredTask, 'task' | 'version'>

type SendDedupeStore = TaskStore & Required<Pick<TaskStore, 'claimSend' | 'releaseSend'>>

/** By default a run retries a write its store refused for this long, ms (kvcache: `tasks.lease_ttl`). */
const DEFAULT_STORE_RETRY_MS = 30_000

/**
 * Owns tasks: the state machine of CONTRACT.md §6, the executor runs, cancellation, and the events every change
 * publishes. Stored tasks are immutable; every change writes a new snapshot with a compare-and-set.
 */
export class TaskService {
  readonly store: TaskStore
  readonly bus: TaskEventBus
  readonly #log: Logger
  readonly #now: () => number
  readonly #writer: TaskWriter
  readonly #runs: TaskRuns
  readonly #housekeeping: TaskHousekeeping
  /** A task `start` stored in the state its turn had reached, by the record `start` returned: `waitSettled` reads it. */
  readonly #outcomes = new WeakMap<object, StoredTask>()
  readonly #createListeners: Array<(record: StoredTask) => void> = []
  /** Idempotent sends, while `tasks.dedupe_window` is on and the store can claim (docs/protocol.md, "Idempotent sends"). */
  readonly dedupe: SendDedupe | undefined

  constructor (opts: TaskServiceOptions) {
    const { store, bus, log, leases } = opts
    const now = opts.now ?? Date.now
    this.store = store
    this.bus = bus
    this.#log = log
    this.#now = now
    const storeRetryMs = opts.storeRetryMs ?? DEFAULT_STORE_RETRY_MS
    this.#writer = new TaskWriter({ store, bus, log, now, storeRetryMs })
    const windowMs = opts.dedupeWindowMs ?? 0
    // `releaseSend` comes with `claimSend` (`TaskStore`, "Idempotent sends").
    this.dedupe = windowMs > 0 && store.claimSend !== undefined
      ? new SendDedupe({ store: store as SendDedupeStore, windowMs, staleMs: storeRetryMs, now, log })
      : undefined
    this.#runs = new TaskRuns({ store, bus, log, leases, now, executor: opts.executor, toolsFor: opts.toolsFor, writer: this.#writer })
    this.#housekeeping = new TaskHousekeeping({
      store, log, leases, now, runs: this.#runs, update: (id, mutate) => this.update(id, mutate), interruptedTtlMs: opts.interruptedTtlMs ?? Infinity
    })
    // A cancel made on another instance reaches the one running the task here: a span of its own, in the canceller's
    // trace when the request carried it.
    bus.onAbortRequest((id, trace) => {
      if (!this.#runs.running.has(id)) return
      traced('a2a task abort', () => ({ 'a2a.task.id': id }), () => { this.#runs.stop(id) }, undefined, trace)
    })
  }

  /** Number of tasks whose executor is running in this process. */
  get running (): number {
    return this.#runs.running.size
  }

  onStatusChange (listener: StatusListener): void {
    this.#writer.statusListeners.push(listener)
  }

  /** Called once a task this service created is stored (metrics count tasks from here). It must not throw. */
  onCreate (listener: (record: StoredTask) => void): void {
    this.#createListeners.push(listener)
  }

  /**
   * A step run before each reaping round, in the order added; its failure is logged and the round goes on. The push
   * outbox relay runs here, so that the changes a dead instance left unqueued are queued before the reaper's own
   * change to the same tasks.
   */
  beforeReap (step: () => Promise<unknown>): void {
    this.#housekeeping.beforeReap(step)
  }

  /** The task, if it exists and the principal may see it; -32001 otherwise (CONTRACT.md §9, tenancy). */
  async get (id: string, principal: Principal): Promise<StoredTask> {
    const record = await this.store.get(id)
    if (record === null || (record.owner !== principal.id && !isAdmin(principal))) throw taskNotFound(id)
    return record
  }

  /**
   * The task's stored version, whoever owns it; null when it is not stored. A stream looks whether the task it
   * follows has vanished, or has moved on past the events that reached it.
   */
  async storedVersion (id: string): Promise<number | null> {
    const store = this.store
    return store.version === undefined ? (await store.get(id))?.version ?? null : await store.version(id)
  }

  /** The task as stored, whoever owns it: for a stream already let follow it, which has missed some of its events. */
  async stored (id: string): Promise<StoredTask | null> {
    return await this.store.get(id)
  }

  async list (query: Omit<TaskListQuery, 'owner'>, principal: Principal): Promise<TaskListPage> {
    return this.store.list({ ...query, owner: principal.id })
  }

  /**
   * A new task in `submitted`, its history holding the message. The executor is not started: see `dispatch`.
   * `prepare` runs with the new id before the task is stored (a push config is stored there); if it throws, no task
   * is made. With a store in this process and nothing to prepare, the task is stored before this returns.
   */
  create (message: Message, principal: Principal, metadata?: Record<string, unknown> | null,
    prepare?: (taskId: string) => Promise<unknown>, id = newId()): MaybePromise<StoredTask> {
    if (prepare !== undefined) return prepare(id).then(() => this.#insert(id, message, principal, metadata))
    return this.#insert(id, message, principal, metadata)
  }

  /**
   * A new task, started: `create`, then `started` (a stream follows the task from there), then `dispatch`. Over a
   * store across the network, with nothing to prepare, the task's first turn runs before the task is stored, as far
   * as it runs at once: the task is then stored in one write, in the state the turn left it in (a task whose executor
   * answered at once is stored once, finished, instead of once per change), and its events are published once it is
   * stored. Either way the task is stored when the promise resolves, to the task as it was created. `id` is the new
   * task's id (a send's claim names it); a new one by default.
   */
  start (message: Message, principal: Principal, metadata: Record<string, unknown> | null | undefined,
    prepare?: (taskId: string) => Promise<unknown>, started?: (record: StoredTask) => void, id = newId(), options?: SendOptions): MaybePromise<StoredTask> {
    if (prepare !== undefined || this.store.sync !== undefined) {
      const created = this.create(message, principal, metadata, prepare, id)
      if (created instanceof Promise) return created.then(record => this.#begin(record, principal, started, options))
      return this.#begin(created, principal, started, options)
    }
    const record = this.#newRecord(id, message, principal, metadata)
    const draft: Draft = { record, changes: [], followed: started !== undefined }
    this.#writer.drafts.set(record.task.id, draft)
    started?.(record)
    this.dispatch(record, principal, options)
    return this.#store(draft, record)
  }

  #begin (record: StoredTask, principal: Principal, started: ((record: StoredTask) => void) | undefined, options: SendOptions | undefined): StoredTask {
    started?.(record)
    this.dispatch(record, principal, options)
    return record
  }

  /**
   * Stores a draft as its turn has left it: with a lease while the run goes on (its later writes wait for the
   * insert), without one when the turn has ended. If the task cannot be stored, its run is aborted.
   */
  async #store (draft: Draft, created: StoredTask): Promise<StoredTask> {
    const id = created.task.id
    const events = draft.followed ? draft.changes.flatMap(change => change.event === undefined ? [] : [change.event]) : []
    const stored = this.store.insert(draft.record, { lease: this.#runs.running.has(id), events }).then(() => {
      this.#writer.drafts.delete(id)
      this.#outcomes.set(created, draft.record)
      this.#created(created)
      // Nobody elsewhere can follow a task before it is stored: its events so far go to this process only.
      for (const change of draft.changes) this.#writer.published(change.previous, change.next, change.event, true, false)
    }, (err: unknown) => {
      this.#writer.drafts.delete(id)
      this.#runs.stop(id)
      throw err
    })
    draft.stored = stored
    stored.catch(() => {})
    await stored
    return created
  }

  #newRecord (id: string, message: Message, principal: Principal, metadata: Record<string, unknown> | null | undefined): StoredTask {
    const contextId = message.contextId ?? newId()
    const now = this.#now()
    const task: Task = {
      id,
      contextId,
      kind: 'task',
      status: { state: 'submitted', timestamp: isoTime(now) },
      artifacts: [],
      history: [historyEntry(message, id, contextId)],
      metadata: metadata ?? null
    }
    return withTrace({ task, owner: principal.id, version: 1, createdAt: now, updatedAt: now })
  }

  #insert (id: string, message: Message, principal: Principal, metadata: Record<string, unknown> | null | undefined): MaybePromise<StoredTask> {
    const record = this.#newRecord(id, message, principal, metadata)
    const sync = this.store.sync
    if (sync === undefined) return this.store.insert(record).then(() => this.#created(record))
    sync.insertNow(record)
    return this.#created(record)
  }

  #created (record: StoredTask): StoredTask {
    for (const listener of this.#createListeners) listener(record)
    return record
  }

  /** Starts the executor on a task's last history message, or queues the message behind a running turn. */
  dispatch (record: StoredTask, principal: Principal, options?: SendOptions): void {
    this.#runs.dispatch(record, principal, options?.extensions)
  }

  /**
   * A message for an existing task (CONTRACT.md §5): appended to its history and handed to the executor. -32001 for
   * an unknown task, -32602 for a terminal one or a contextId that is not the task's.
   */
  async join (taskId: string, message: Message, principal: Principal, options?: SendOptions): Promise<StoredTask> {
    const current = await this.get(taskId, principal)
    if (message.contextId !== undefined && message.contextId !== current.task.contextId) {
      throw invalidParams('params.message.contextId: does not match the task\'s contextId')
    }
    const entry = historyEntry(message, taskId, current.task.contextId)
    // What a message adds counts against `tasks.max_bytes` as a new task does: refused (503) when it cannot fit.
    this.store.admit?.(valueBytes(entry))
    // Queue first, then write the history: a run that is about to complete the task sees the message and goes on.
    // Its turn runs as its sender, not as whoever started the run (tools, scopes and audit are the sender's).
    const run = this.#runs.enqueue(taskId, entry, principal, options?.extensions)
    let record: StoredTask
    try {
      record = await this.update(taskId, task => {
        if (isTerminal(task.status.state)) {
          throw invalidParams(`params.message.taskId: task "${taskId}" is ${task.status.state} and takes no more messages`)
        }
        return { ...task, history: task.history.concat([entry]) }
      })
    } catch (err) {
      if (run !== undefined) run.queue.splice(run.queue.indexOf(entry) >>> 0, 1)
      throw err
    }
    if (run === undefined) this.dispatch(record, principal, options)
    return record
  }

  /** Moves a task to `canceled` and aborts its executor: -32001 unknown, -32002 when it is already terminal. */
  async cancel (id: string, principal: Principal): Promise<StoredTask> {
    await this.get(id, principal)
    const record = await this.update(id, task => {
      if (isTerminal(task.status.state)) throw taskNotCancelable(id, task.status.state)
      return withStatus(task, 'canceled', this.#now())
    })
    if (this.#runs.running.has(id)) this.#runs.stop(id)
    else this.bus.requestAbort(id, { type: 'status', version: record.version, task: record.task, final: true })
    return record
  }

  /**
   * Waits until the task settles (terminal, input_required or auth_required) at a version after `afterVersion`,
   * or `timeoutMs` passes; returns the task as it then stands: the snapshot its settling event carried, else a
   * fresh read. A store in this process answers at once, so a task that has settled already (an executor that
   * answered without waiting) is returned without a wait.
   */
  waitSettled (record: SettledTask, timeoutMs: number): MaybePromise<SettledTask> {
    const sync = this.store.sync
    const now = sync?.getNow(record.task.id) ?? this.#outcomes.get(record)
    if (now != null && now.version > record.version && isSettled(now.task.status.state)) return now
    return this.#waitSettled(record, timeoutMs)
  }

  async #waitSettled (record: SettledTask, timeoutMs: number): Promise<SettledTask> {
    const taskId = record.task.id
    // A task that runs here is written here: its events are heard in this process, and a cancel made elsewhere comes
    // with the abort request. Should the run end before the task settles, the wait follows every instance from then
    // on (`TaskRuns`' rejoin). A task that runs elsewhere is followed on its channel.
    const run = this.#runs.running.get(taskId)
    const settled = await new Promise<SettledTask | null>(resolve => {
      const timer = setTimeout(() => finish(null), timeoutMs)
      const unsubscribe = this.bus.subscribe(taskId, event => {
        if (event.type === 'status' && event.final && event.version > record.version) finish(event)
      }, run === undefined ? undefined : LOCAL)
      function finish (value: SettledTask | null): void {
        clearTimeout(timer)
        unsubscribe()
        resolve(value)
      }
      // The task may have settled between the caller's read and this subscription. (A store in this process was
      // read by `waitSettled` just before, with nothing in between; a run here writes after this.)
      if (run === undefined && this.store.sync === undefined) {
        this.store.get(taskId).then(now => {
          if (now !== null && now.version > record.version && isSettled(now.task.status.state)) finish(now)
        }, () => {})
      }
    })
    if (settled !== null) return settled
    this.#log.debug({ taskId }, 'blocking wait timed out')
    const latest = await this.store.get(taskId)
    /* c8 ignore next -- a task only disappears by expiry or eviction, which needs a terminal state and a long wait */
    if (latest === null) throw taskNotFound(taskId)
    return latest
  }

  /**
   * Applies a change with compare-and-set, retrying when another writer got there first, then publishes it.
   * `mutate` returns the new task, or null for no change; it may throw to refuse.
   */
  async update (id: string, mutate: Mutation): Promise<StoredTask> {
    return this.#writer.write(id, mutate)
  }

  /**
   * Fails the tasks whose running instance died: their lease expired unrenewed (CONTRACT.md §10). Returns the ids
   * this call failed.
   */
  reapOrphans (): Promise<string[]> {
    return this.#housekeeping.reapOrphans()
  }

  /**
   * Cancels the interrupted tasks that have waited `tasks.interrupted_ttl` since their last update (CONTRACT.md §2).
   * Returns the ids this call canceled.
   */
  expireInterrupted (): Promise<string[]> {
    return this.#housekeeping.expireInterrupted()
  }

  /**
   * Waits for running executors up to `timeoutMs`, then fails what is left (CONTRACT.md §6, shutdown). Called by
   * every plugin that must see tasks finish before it closes; they share one drain.
   */
  drain (timeoutMs: number): Promise<void> {
    return this.#housekeeping.drain(timeoutMs)
  }
}
