import { newId } from '../ids.js'
import { isThenable, type MaybePromise } from '../maybe-promise.js'
import type { Logger } from '../logger.js'
import type { Artifact, Message, Task, TaskState } from '../../schemas/task.js'
import { RESULT_ARTIFACT_NAME } from '../../schemas/task.js'
import { isAdmin, type Principal } from '../auth/principal.js'
import type { AgentExecutor, AgentTools, ExecutorEvent, ExecutorResult, MessageContent } from '../agent/executor.js'
import {
  IllegalTransition, RunStorageFailure, TaskConflict, TaskNotFound, invalidParams, taskNotCancelable, taskNotFound
} from '../errors.js'
import { LOCAL, type TaskEvent, type TaskEventBus } from './event-bus.js'
import type { TaskLeases } from './leases.js'
import { contextHistory } from './context-history.js'
import { RunAbort, TurnContext } from './turn-context.js'
import { canTransition, isInterrupted, isSettled, isTerminal, isoTime } from './states.js'
import { valueBytes } from './task-bytes.js'
import { applyAhead, mergedChunks } from './read-ahead.js'
import type { ReplaceOutcome, StoredTask, TaskListPage, TaskListQuery, TaskStore } from './store.js'

export interface TaskServiceOptions {
  store: TaskStore
  bus: TaskEventBus
  executor: AgentExecutor
  log: Logger
  /** The tools an executor may call, bound to the task's principal. */
  toolsFor: (principal: Principal) => AgentTools
  /** kvcache: the leases on running tasks, shared by every instance (CONTRACT.md §10). */
  leases?: TaskLeases
  /**
   * How long a run keeps retrying a write its store refused (storage down or stalled), ms; default 30,000 (kvcache:
   * `tasks.lease_ttl`). Past it the run stops and leaves its lease to lapse, so that the reaper fails the task.
   */
  storeRetryMs?: number
  /** `tasks.interrupted_ttl` in ms: an input_required or auth_required task left this long is canceled. */
  interruptedTtlMs?: number
  now?: () => number
}

/** What a blocking wait returns: the task and the version it was read at. */
export type SettledTask = Pick<StoredTask, 'task' | 'version'>

/**
 * Called after every state change (not after same-state status updates): push notifications hang off this.
 * `pushConfigs` is what the store saw in the write (`TaskStore.recordsPush`): whether the task had push configs;
 * undefined when the store cannot tell.
 */
export type StatusListener = (record: StoredTask, previous: TaskState, pushConfigs?: boolean) => void

export const FAILED_MESSAGE = 'The agent failed while processing the task.'
export const SHUTDOWN_MESSAGE = 'The server stopped before the task finished.'
export const OWNER_LOST_MESSAGE = 'The server instance running the task stopped before the task finished.'
export const INTERRUPTED_EXPIRED_MESSAGE = 'The task waited for input longer than the server keeps a task waiting.'

const STORAGE_UNAVAILABLE = 'A2A_ERR_STORAGE_UNAVAILABLE'

/** A run's first retry of a write its store refused waits this long; each next one twice as long, up to the max. */
const STORE_RETRY_FIRST_MS = 50
const STORE_RETRY_MAX_MS = 1000
const DEFAULT_STORE_RETRY_MS = 30_000

/**
 * Most events an executor's run reads ahead while a write is in flight (see `#iterate`): what it holds of them in
 * memory at most, and the most chunks one write carries.
 */
const READ_AHEAD = 256

/** Attempts of a compare-and-set update before giving up: only a pathological race would need more than two. */
const MAX_CAS_ATTEMPTS = 16

interface Run {
  readonly abort: RunAbort
  readonly queue: Message[]
  readonly principal: Principal
  done: Promise<void>
  /** Set once the run's loop has returned, by its last step. */
  ended: boolean
}

type Mutation = (task: Task, record: StoredTask) => Task | null

/** What a retried write sent last, and what it read before: to know, after a lost answer, whether it landed. */
interface Sent {
  previous?: StoredTask
  next?: StoredTask
}

/** The chunk an artifact event carries (A2A `artifact-update`). */
interface ArtifactChunk {
  artifact: Artifact
  append: boolean
  lastChunk: boolean
}

/** A change written to a task not stored yet: published once the task is (see `TaskService.start`). */
interface DraftChange {
  readonly previous: StoredTask
  readonly next: StoredTask
  readonly event: TaskEvent | undefined
}

/** A new task whose first turn runs before it is stored, as far as the turn runs at once (see `TaskService.start`). */
interface Draft {
  /** The task as the turn has left it so far. */
  record: StoredTask
  readonly changes: DraftChange[]
  /**
   * A stream follows the task from its start (message/stream): its first turn's events are kept for it to resume
   * by. Nobody else can have seen them (the task is not stored yet), so a task sent otherwise keeps none of them.
   */
  readonly followed: boolean
  /** The insert, once begun: a write made after that waits for it. Rejects when the task could not be stored. */
  stored?: Promise<void>
}

/** Where a mutation that adds an artifact leaves the chunk its event is to carry. */
interface ChunkSlot {
  chunk?: ArtifactChunk
}

/** Per-turn state while an executor runs: the turn's `Agent-result` artifact, created by the first string. */
interface Turn {
  resultArtifactId: string | undefined
}

/**
 * Owns tasks: the state machine of CONTRACT.md §6, the executor runs, cancellation, and the events every change
 * publishes. Stored tasks are immutable; every change writes a new snapshot with a compare-and-set.
 */
export class TaskService {
  readonly store: TaskStore
  readonly bus: TaskEventBus
  readonly #executor: AgentExecutor
  readonly #log: Logger
  readonly #toolsFor: (principal: Principal) => AgentTools
  readonly #leases: TaskLeases | undefined
  readonly #storeRetryMs: number
  readonly #interruptedTtlMs: number
  readonly #now: () => number
  readonly #running = new Map<string, Run>()
  /**
   * The latest record of each task that runs here, as this process last wrote or read it: a write starts from it
   * instead of reading the task first (the compare-and-set catches a record another instance changed since).
   * Kept for a store across the network only, from `dispatch` to the end of the run.
   */
  readonly #latest = new Map<string, StoredTask>()
  /** New tasks whose first turn is running before they are stored (see `start`). */
  readonly #drafts = new Map<string, Draft>()
  /** A task `start` stored in the state its turn had reached, by the record `start` returned: `waitSettled` reads it. */
  readonly #outcomes = new WeakMap<object, StoredTask>()
  readonly #statusListeners: StatusListener[] = []
  readonly #createListeners: Array<(record: StoredTask) => void> = []
  readonly #beforeReap: Array<() => Promise<unknown>> = []
  /** The sender of a message queued behind a running turn, when it is not the run's starter. */
  readonly #senders = new WeakMap<Message, Principal>()
  #draining: Promise<void> | undefined

  constructor (opts: TaskServiceOptions) {
    this.store = opts.store
    this.bus = opts.bus
    this.#executor = opts.executor
    this.#log = opts.log
    this.#toolsFor = opts.toolsFor
    this.#leases = opts.leases
    this.#storeRetryMs = opts.storeRetryMs ?? DEFAULT_STORE_RETRY_MS
    this.#interruptedTtlMs = opts.interruptedTtlMs ?? Infinity
    this.#now = opts.now ?? Date.now
    // A cancel made on another instance reaches the one running the task here.
    this.bus.onAbortRequest(id => this.#stop(id))
  }

  /** Number of tasks whose executor is running in this process. */
  get running (): number {
    return this.#running.size
  }

  onStatusChange (listener: StatusListener): void {
    this.#statusListeners.push(listener)
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
    this.#beforeReap.push(step)
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
    prepare?: (taskId: string) => Promise<unknown>): MaybePromise<StoredTask> {
    const id = newId()
    if (prepare !== undefined) return prepare(id).then(() => this.#insert(id, message, principal, metadata))
    return this.#insert(id, message, principal, metadata)
  }

  /**
   * A new task, started: `create`, then `started` (a stream follows the task from there), then `dispatch`. Over a
   * store across the network, with nothing to prepare, the task's first turn runs before the task is stored, as far
   * as it runs at once: the task is then stored in one write, in the state the turn left it in (a task whose executor
   * answered at once is stored once, finished, instead of once per change), and its events are published once it is
   * stored. Either way the task is stored when the promise resolves, to the task as it was created.
   */
  start (message: Message, principal: Principal, metadata: Record<string, unknown> | null | undefined,
    prepare?: (taskId: string) => Promise<unknown>, started?: (record: StoredTask) => void): MaybePromise<StoredTask> {
    if (prepare !== undefined || this.store.sync !== undefined) {
      const created = this.create(message, principal, metadata, prepare)
      if (created instanceof Promise) return created.then(record => this.#begin(record, principal, started))
      return this.#begin(created, principal, started)
    }
    const record = this.#newRecord(newId(), message, principal, metadata)
    const draft: Draft = { record, changes: [], followed: started !== undefined }
    this.#drafts.set(record.task.id, draft)
    started?.(record)
    this.dispatch(record, principal)
    return this.#store(draft, record)
  }

  #begin (record: StoredTask, principal: Principal, started: ((record: StoredTask) => void) | undefined): StoredTask {
    started?.(record)
    this.dispatch(record, principal)
    return record
  }

  /**
   * Stores a draft as its turn has left it: with a lease while the run goes on (its later writes wait for the
   * insert), without one when the turn has ended. If the task cannot be stored, its run is aborted.
   */
  async #store (draft: Draft, created: StoredTask): Promise<StoredTask> {
    const id = created.task.id
    const events = draft.followed ? draft.changes.flatMap(change => change.event === undefined ? [] : [change.event]) : []
    const stored = this.store.insert(draft.record, { lease: this.#running.has(id), events }).then(() => {
      this.#drafts.delete(id)
      this.#outcomes.set(created, draft.record)
      this.#created(created)
      // Nobody elsewhere can follow a task before it is stored: its events so far go to this process only.
      for (const change of draft.changes) this.#published(change.previous, change.next, change.event, true, false)
    }, (err: unknown) => {
      this.#drafts.delete(id)
      this.#stop(id)
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
    return { task, owner: principal.id, version: 1, createdAt: now, updatedAt: now }
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
  dispatch (record: StoredTask, principal: Principal): void {
    const message = record.task.history[record.task.history.length - 1]
    const existing = this.#running.get(record.task.id)
    if (existing !== undefined) {
      this.#senders.set(message, principal)
      existing.queue.push(message)
      return
    }
    const run: Run = { abort: new RunAbort(), queue: [message], principal, done: Promise.resolve(), ended: false }
    if (this.store.sync === undefined) this.#latest.set(record.task.id, record)
    run.done = this.#loop(record.task.id, run, record.version === 1)
    // A run that ended before its loop returned (an executor that answered at once, over a store in this process)
    // could not be seen, queued behind or canceled by anyone: it is not registered. A Map in the old generation gets
    // its new tables there, and one entry set and deleted per task cost two such tables.
    if (!run.ended) this.#running.set(record.task.id, run)
  }

  /**
   * A message for an existing task (CONTRACT.md §5): appended to its history and handed to the executor. -32001 for
   * an unknown task, -32602 for a terminal one or a contextId that is not the task's.
   */
  async join (taskId: string, message: Message, principal: Principal): Promise<StoredTask> {
    const current = await this.get(taskId, principal)
    if (message.contextId !== undefined && message.contextId !== current.task.contextId) {
      throw invalidParams('params.message.contextId: does not match the task\'s contextId')
    }
    const entry = historyEntry(message, taskId, current.task.contextId)
    // What a message adds counts against `tasks.max_bytes` as a new task does: refused (503) when it cannot fit.
    this.store.admit?.(valueBytes(entry))
    // Queue first, then write the history: a run that is about to complete the task sees the message and goes on.
    // Its turn runs as its sender, not as whoever started the run (tools, scopes and audit are the sender's).
    const run = this.#running.get(taskId)
    this.#senders.set(entry, principal)
    run?.queue.push(entry)
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
    if (run === undefined) this.dispatch(record, principal)
    return record
  }

  /** Moves a task to `canceled` and aborts its executor: -32001 unknown, -32002 when it is already terminal. */
  async cancel (id: string, principal: Principal): Promise<StoredTask> {
    await this.get(id, principal)
    const record = await this.update(id, task => {
      if (isTerminal(task.status.state)) throw taskNotCancelable(id, task.status.state)
      return withStatus(task, 'canceled', this.#now())
    })
    if (this.#running.has(id)) this.#stop(id)
    else this.bus.requestAbort(id, { type: 'status', version: record.version, task: record.task, final: true })
    return record
  }

  /**
   * Fails the tasks whose running instance died: their lease expired unrenewed (CONTRACT.md §10). Each expired
   * lease is claimed by one instance; a task that reached a terminal state meanwhile is left alone. Returns the ids
   * this call failed.
   */
  async reapOrphans (): Promise<string[]> {
    const leases = this.#leases
    if (leases === undefined) return []
    for (const step of this.#beforeReap) {
      await step().catch((err: unknown) => this.#log.warn({ err }, 'step before reaping failed'))
    }
    const failed: string[] = []
    for (const id of await leases.claimExpired()) {
      try {
        const moved = await this.#settleClaimed(id, 'failed', OWNER_LOST_MESSAGE, task => !isTerminal(task.status.state))
        // Expired or never stored: nothing to fail, and the lease must not be claimed for ever.
        if (moved === null) this.#log.warn({ taskId: id }, 'lease of a vanished task dropped')
        else if (moved) failed.push(id)
        await leases.release(id)
      } catch (err) {
        // The claim lapses like any lease: the task is claimed again, by this instance or another, once it does.
        this.#log.warn({ err, taskId: id }, 'could not fail an orphaned task')
      }
    }
    if (failed.length > 0) this.#log.warn({ taskIds: failed }, 'tasks of a stopped instance failed')
    return failed
  }

  /**
   * Cancels the interrupted tasks (input_required, auth_required) that have waited `tasks.interrupted_ttl` since
   * their last update (CONTRACT.md §2): an abandoned conversation neither holds its owner's live-task allowance nor
   * the store for ever. Returns the ids this call canceled.
   */
  async expireInterrupted (): Promise<string[]> {
    const cutoff = this.#now() - this.#interruptedTtlMs
    const canceled: string[] = []
    for (const id of await this.store.claimInterrupted(cutoff)) {
      try {
        const moved = await this.#settleClaimed(id, 'canceled', INTERRUPTED_EXPIRED_MESSAGE,
          (task, record) => isInterrupted(task.status.state) && record.updatedAt <= cutoff)
        if (moved === true) canceled.push(id)
      } catch (err) {
        // Redis hands the id out again a minute later; the memory store cannot fail here.
        this.#log.warn({ err, taskId: id }, 'could not cancel an expired interrupted task')
      }
    }
    if (canceled.length > 0) this.#log.info({ taskIds: canceled }, 'interrupted tasks expired')
    return canceled
  }

  /**
   * Moves a task that a sweep claimed (an orphan, an expired interrupted task) to `state` with an agent status
   * message saying why, if `due` still holds when it is written. True when this call moved it, false when the task
   * had moved on, null when it is gone.
   */
  async #settleClaimed (id: string, state: TaskState, text: string, due: (task: Task, record: StoredTask) => boolean): Promise<boolean | null> {
    const before = await this.store.get(id)
    if (before === null) return null
    const after = await this.update(id, (task, record) => due(task, record) ? withStatus(task, state, this.#now(), agentMessage(task, text)) : null)
    return after.version !== before.version && after.task.status.state === state
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
    // on (`#rejoin`). A task that runs elsewhere is followed on its channel.
    const run = this.#running.get(taskId)
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
    return this.#write(id, mutate)
  }

  /**
   * `update`, answered at once by a store in this process: nothing can come between its read and its write, and
   * the run of a task whose executor answers at once takes no tick.
   */
  #write (id: string, mutate: Mutation, slot?: ChunkSlot): MaybePromise<StoredTask> {
    const sync = this.store.sync
    if (sync === undefined) {
      const draft = this.#drafts.get(id)
      if (draft === undefined) return this.#writeAsync(id, mutate, slot)
      return this.#writeDraft(draft, id, mutate, slot, () => this.#writeAsync(id, mutate, slot))
    }
    // Nothing runs between this read and this write, so the compare-and-set cannot lose: no retry.
    const current = sync.getNow(id)
    if (current === null) throw new TaskNotFound(id)
    const task = mutate(current.task, current)
    if (task === null) return current
    const next = this.#next(current, task)
    /* c8 ignore next -- see above */
    if (!sync.replaceNow(next)) throw new TaskConflict(id)
    return this.#published(current, next, eventOf(current, next, slot?.chunk), false, undefined)
  }

  async #writeAsync (id: string, mutate: Mutation, slot?: ChunkSlot, sent?: Sent): Promise<StoredTask> {
    const { store } = this
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      // A task that runs here starts from the record last written or read here: no read first. A retry after a
      // lost answer reads, to learn whether the write landed.
      let current = attempt === 0 && sent?.next === undefined ? this.#latest.get(id) : undefined
      if (current === undefined) {
        const read = await store.get(id)
        if (read === null) throw new TaskNotFound(id)
        current = read
        if (this.#latest.has(id)) this.#latest.set(id, read)
      }
      // A retried write whose earlier answer was lost, and which had landed: done, and published now.
      // (`sent.next`, not the copy just read, shares the unchanged parts with `sent.previous`: the event is the same.)
      // Its event went out with it when the store announces (the write's own script published it).
      if (sent?.next !== undefined && landed(current, sent.next)) {
        const previous = sent.previous as StoredTask
        return this.#published(previous, sent.next, eventOf(previous, sent.next, slot?.chunk), store.announces === true, undefined)
      }
      const task = mutate(current.task, current)
      if (task === null) return current
      const next = this.#next(current, task)
      if (sent !== undefined) {
        sent.previous = current
        sent.next = next
      }
      const event = eventOf(current, next, slot?.chunk)
      const announced = store.announces === true && event !== undefined
      const outcome = await store.replace(next, announced ? event : undefined)
      if (outcome !== false) return this.#published(current, next, event, announced, this.#pushConfigs(outcome))
      if (sent !== undefined) sent.next = undefined
    }
    /* c8 ignore next -- only reachable under sustained write contention on one task */
    throw new TaskConflict(id)
  }

  /**
   * A run's write: `#write`, retried while the store refuses it (storage down or stalled) for up to `storeRetryMs`.
   * A write whose answer was lost may have landed: a retry that finds exactly the record it sent takes it as done,
   * so nothing is applied twice. Past the budget it throws RunStorageFailure: a storage failure, never the agent's.
   */
  #runWrite (id: string, mutate: Mutation, slot?: ChunkSlot): MaybePromise<StoredTask> {
    if (this.store.sync !== undefined) return this.#write(id, mutate, slot)
    const draft = this.#drafts.get(id)
    if (draft !== undefined) return this.#writeDraft(draft, id, mutate, slot, () => this.#retried(id, mutate, slot))
    return this.#retried(id, mutate, slot)
  }

  /**
   * A write to a task not stored yet: made in memory, at once, while its turn runs at once; once the insert has
   * begun, made after it by `then`. A task that could not be stored is not found.
   */
  #writeDraft (draft: Draft, id: string, mutate: Mutation, slot: ChunkSlot | undefined, then: () => Promise<StoredTask>): MaybePromise<StoredTask> {
    if (draft.stored !== undefined) return draft.stored.then(then, () => { throw new TaskNotFound(id) })
    const current = draft.record
    const task = mutate(current.task, current)
    if (task === null) return current
    const next = this.#next(current, task)
    draft.record = next
    draft.changes.push({ previous: current, next, event: eventOf(current, next, slot?.chunk) })
    return next
  }

  async #retried (id: string, mutate: Mutation, slot: ChunkSlot | undefined): Promise<StoredTask> {
    const deadline = this.#now() + this.#storeRetryMs
    const sent: Sent = {}
    for (let wait = STORE_RETRY_FIRST_MS; ; wait = Math.min(2 * wait, STORE_RETRY_MAX_MS)) {
      try {
        return await this.#writeAsync(id, mutate, slot, sent)
      } catch (err) {
        if ((err as { code?: string }).code !== STORAGE_UNAVAILABLE) throw err
        if (this.#now() + wait > deadline) throw new RunStorageFailure(id)
        this.#log.warn({ taskId: id, code: STORAGE_UNAVAILABLE }, 'task write refused by storage, will retry')
        await new Promise(resolve => setTimeout(resolve, wait))
      }
    }
  }

  #next (current: StoredTask, task: Task): StoredTask {
    return { task, owner: current.owner, version: current.version + 1, createdAt: current.createdAt, updatedAt: this.#now() }
  }

  /** What a write's outcome says of the task's push configs, when its store can tell (`recordsPush`). */
  #pushConfigs (outcome: ReplaceOutcome): boolean | undefined {
    return this.store.recordsPush === true ? outcome === 'outbox' : undefined
  }

  /**
   * Waits for running executors up to `timeoutMs`, then fails what is left (CONTRACT.md §6, shutdown). Called by
   * every plugin that must see tasks finish before it closes; they share one drain.
   */
  drain (timeoutMs: number): Promise<void> {
    this.#draining ??= this.#drain(timeoutMs)
    return this.#draining
  }

  async #drain (timeoutMs: number): Promise<void> {
    const pending = [...this.#running.values()].map(r => r.done)
    if (pending.length === 0) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(pending),
      new Promise<void>(resolve => { timer = setTimeout(resolve, timeoutMs) })
    ])
    clearTimeout(timer)
    for (const id of [...this.#running.keys()]) {
      try {
        await this.update(id, task => isTerminal(task.status.state)
          ? null
          : withStatus(task, 'failed', this.#now(), agentMessage(task, SHUTDOWN_MESSAGE)))
      } catch (err) {
        this.#log.error({ err, taskId: id }, 'could not fail a task at shutdown')
      }
      this.#stop(id)
    }
  }

  #stop (id: string): void {
    const run = this.#running.get(id)
    if (run === undefined) return
    run.queue.length = 0
    run.abort.abort()
  }

  /**
   * Tells subscribers and status listeners about a write that has happened: its `event` goes to this process's
   * listeners, and to the other instances' unless the store `announced` it with the write. Their failures are logged
   * and go no further: the write stands, and the task's run must not be failed by a listener.
   */
  #published (previous: StoredTask, next: StoredTask, event: TaskEvent | undefined, announced: boolean, pushConfigs: boolean | undefined): StoredTask {
    const id = next.task.id
    if (this.#latest.has(id)) this.#latest.set(id, next)
    if (event !== undefined) {
      // Kept for streams that resume; a store that announces kept it with the write.
      if (!announced) this.store.keep?.(id, event)
      try {
        if (announced) this.bus.deliver(id, event)
        else this.bus.publish(id, event)
      } catch (err) {
        this.#log.error({ err, taskId: id }, 'task event listener failed')
      }
    }
    if (previous.task.status.state !== next.task.status.state) {
      for (const listener of this.#statusListeners) {
        try {
          listener(next, previous.task.status.state, pushConfigs)
        } catch (err) {
          this.#log.error({ err, taskId: next.task.id }, 'task status listener failed')
        }
      }
    }
    return next
  }

  /**
   * A task's run: one turn per queued message. Written for both kinds of store and executor: with a store in this
   * process and an executor that answers at once, it finishes before `dispatch` returns, with no promise made;
   * each step awaits only what is a promise.
   */
  async #loop (taskId: string, run: Run, fresh: boolean): Promise<void> {
    const { abort } = run
    const leases = this.#leases
    // Set when the run could not write its task: the lease is left to lapse, and the reaper fails the task.
    let stranded = false
    if (leases !== undefined) {
      // A new task's lease was taken with its insert, so a crash between the two cannot leave it unleased.
      if (fresh && this.store.leasesOnInsert === true) leases.hold(taskId)
      // Without its lease the task still runs; it is only not reaped if this instance dies meanwhile.
      else await leases.acquire(taskId).catch((err: unknown) => this.#log.warn({ err, taskId }, 'task lease not taken'))
    }
    try {
      for (let message = run.queue.shift(); message !== undefined; message = run.queue.shift()) {
        let started = this.#runWrite(taskId, task => {
          if (task.status.state === 'in_progress' || isTerminal(task.status.state)) return null
          return withStatus(task, 'in_progress', this.#now())
        })
        if (started instanceof Promise) started = await started
        if (abort.aborted || isTerminal(started.task.status.state)) return
        let state = this.#turn(started, message, run)
        if (state instanceof Promise) state = await state
        if (isTerminal(state)) return
        if (run.queue.length > 0) continue
        // input_required and auth_required wait for the client's next message, in a new run.
        if (state !== 'in_progress') return
        const completed = this.#runWrite(taskId, task => task.status.state === 'in_progress' && run.queue.length === 0
          ? withStatus(task, 'completed', this.#now())
          : null)
        if (completed instanceof Promise) await completed
      }
    } catch (err) {
      if (err instanceof RunStorageFailure) {
        stranded = true
        this.#log.error({ taskId, code: STORAGE_UNAVAILABLE }, 'task run stopped: its storage is unavailable')
      } else {
        this.#log.error({ err, taskId }, 'task run failed')
      }
    } finally {
      run.ended = true
      if (this.#running.get(taskId) === run) this.#running.delete(taskId)
      // A task not stored when its turn ended is stored without a lease. (A run that writes waits for its task's
      // insert: only a run aborted meanwhile could end while it is in flight, and its abort was a write after it.)
      const draft = this.#drafts.get(taskId)
      const unleased = draft !== undefined && draft.stored === undefined
      const last = this.#latest.get(taskId)
      this.#latest.delete(taskId)
      if (draft === undefined) this.#rejoin(taskId)
      if (leases !== undefined) {
        // The write that made the task terminal dropped its lease (`TaskStore.leasesOnInsert`).
        if (stranded || unleased || (this.store.leasesOnInsert === true && last !== undefined && isTerminal(last.task.status.state))) {
          leases.abandon(taskId)
        } else {
          await leases.release(taskId).catch((err: unknown) => this.#log.warn({ err, taskId }, 'task lease not released'))
        }
      }
    }
  }

  /**
   * A run here ended with `local` listeners (blocking waits, streams) still waiting for its task to settle: another
   * instance's turn settled it, or the reaper will. They follow every instance from now on, and get the task as it
   * now stands (a listener drops what it has seen by its version).
   */
  #rejoin (taskId: string): void {
    const followed = this.bus.follow(taskId)
    if (followed === undefined) return
    followed.then(() => this.store.get(taskId)).then(now => {
      if (now !== null) this.bus.deliver(taskId, { type: 'status', version: now.version, task: now.task, final: isSettled(now.task.status.state) })
    }).catch((err: unknown) => this.#log.warn({ err, taskId }, 'task not read after its run ended'))
  }

  /**
   * One executor invocation for one message. Returns the state it left the task in: at once when the executor
   * answered at once (a value, not a promise or an iterable) and the store is in this process.
   */
  #turn (record: StoredTask, message: Message, run: Run): MaybePromise<TaskState> {
    const taskId = record.task.id
    const turn: Turn = { resultArtifactId: undefined }
    const state: TaskState = record.task.status.state
    const sender = this.#senders.get(message) ?? run.principal
    let outcome: MaybePromise<TaskState>
    try {
      const result = this.#executor(new TurnContext({
        task: record.task,
        message,
        principal: sender,
        tools: this.#toolsFor(sender),
        log: this.#log,
        abort: run.abort,
        contextHistory: limit => contextHistory(this.store, record, limit)
      }))
      if (isAsyncIterable(result)) outcome = this.#iterate(taskId, result, state, turn, run)
      else if (isThenable(result)) outcome = Promise.resolve(result).then(value => this.#applyAll(taskId, eventsOf(value), 0, state, turn, run))
      else outcome = this.#applyAll(taskId, eventsOf(result), 0, state, turn, run)
    } catch (err) {
      return this.#failed(taskId, run, err)
    }
    if (outcome instanceof Promise) return outcome.then(last => ended(run, last), (err: unknown) => this.#failed(taskId, run, err))
    return ended(run, outcome)
  }

  /**
   * The events of an executor that is an async iterable, written as they come. While a write is in flight (a store
   * across the network), what the executor yields meanwhile is read ahead, and a run of chunks appended to one
   * artifact is written as one change (one version, one artifact-update carrying all their parts): an executor that
   * streams faster than the store takes writes costs a round trip per batch, not per chunk. (4,000 chunks of 1 KB on
   * Redis took 5.4 times the memory store's time at one write each; batched, 2.2 to 2.8 times: BENCHMARKS.md.)
   */
  async #iterate (taskId: string, events: AsyncIterable<ExecutorEvent>, state: TaskState, turn: Turn, run: Run): Promise<TaskState> {
    await applyAhead(events, event => {
      if (run.abort.aborted) return true
      const next = this.#apply(taskId, event, turn)
      if (!(next instanceof Promise)) return isTerminal(state = next)
      return next.then(after => isTerminal(state = after))
    }, (into, next) => mergedChunks(into, next, turn.resultArtifactId), READ_AHEAD,
    // A status may end the task: the executor does not run past it before it is written.
    event => typeof event === 'string' || event.kind !== 'status')
    return state
  }

  /** The events an executor returned, from `from` on, written in order; at once while the writes are. */
  #applyAll (taskId: string, events: ExecutorEvent[], from: number, state: TaskState, turn: Turn, run: Run): MaybePromise<TaskState> {
    for (let i = from; i < events.length; i++) {
      if (run.abort.aborted) break
      const next = this.#apply(taskId, events[i], turn)
      if (next instanceof Promise) {
        return next.then(after => isTerminal(after) ? after : this.#applyAll(taskId, events, i + 1, after, turn, run))
      }
      state = next
      if (isTerminal(state)) break
    }
    return state
  }

  /** An executor that threw: the task fails, unless the throw came from a cancel. */
  #failed (taskId: string, run: Run, err: unknown): MaybePromise<TaskState> {
    // The store, not the agent, failed: the run stops without blaming the agent (see `#loop`).
    if (err instanceof RunStorageFailure) throw err
    if (run.abort.aborted) return 'canceled'
    this.#log.error({ err, taskId }, 'agent executor failed')
    const failed = this.#runWrite(taskId, task => isTerminal(task.status.state)
      ? null
      : withStatus(task, 'failed', this.#now(), agentMessage(task, FAILED_MESSAGE)))
    return failed instanceof Promise ? failed.then(stateOf) : stateOf(failed)
  }

  /** Writes one executor event to the task. Returns the task's state afterwards. */
  #apply (taskId: string, event: ExecutorEvent, turn: Turn): MaybePromise<TaskState> {
    const now = this.#now()
    const slot: ChunkSlot = {}
    const next = this.#runWrite(taskId, task => {
      if (isTerminal(task.status.state)) return null
      if (typeof event === 'string') return addResultText(task, event, turn, slot)
      switch (event.kind) {
        case 'artifact':
          return addArtifact(task, event, slot)
        case 'message':
          return { ...task, history: task.history.concat([agentMessage(task, event.content, event.metadata)]) }
        case 'status': {
          const message = event.message === undefined ? undefined : agentMessage(task, event.message)
          if (event.state === task.status.state) {
            return { ...task, status: { state: task.status.state, timestamp: isoTime(now), message } }
          }
          if (!canTransition(task.status.state, event.state)) {
            throw new IllegalTransition(taskId, task.status.state, event.state)
          }
          return withStatus(task, event.state, now, message)
        }
        default:
          throw invalidParams(`executor event kind "${(event as { kind: unknown }).kind}" is unknown`)
      }
    }, slot)
    return next instanceof Promise ? next.then(stateOf) : stateOf(next)
  }
}

/**
 * The message as an entry of the task's history: its own fields in their order, then `kind`, `taskId` and
 * `contextId` set. Copied field by field: a spread followed by fields the message lacks (`{ ...message, taskId }`)
 * cost V8 about 0.9 µs, the copy a tenth of that.
 */
function historyEntry (message: Message, taskId: string, contextId: string): Message {
  const entry: Record<string, unknown> = {}
  for (const key of Object.keys(message)) entry[key] = message[key as keyof Message]
  entry.kind = 'message'
  entry.taskId = taskId
  entry.contextId = contextId
  return entry as unknown as Message
}

function addResultText (task: Task, text: string, turn: Turn, slot: ChunkSlot): Task {
  const artifactId = (turn.resultArtifactId ??= newId())
  const exists = task.artifacts.some(a => a.artifactId === artifactId)
  return addArtifact(task, exists
    ? { kind: 'artifact', artifactId, append: true, parts: [{ kind: 'text', text }] }
    : { kind: 'artifact', artifactId, name: RESULT_ARTIFACT_NAME, parts: [{ kind: 'text', text }] }, slot)
}

/** The artifact a write added or replaced, for a write that says not which (`update` called directly). */
function changedArtifact (before: Task, after: Task): Artifact {
  return after.artifacts.length > before.artifacts.length
    ? after.artifacts[after.artifacts.length - 1]
    : after.artifacts.find((a, i) => a !== before.artifacts[i]) as Artifact
}

/** The task with the artifact event applied; the chunk the event is to carry goes into `slot`. */
function addArtifact (task: Task, event: Extract<ExecutorEvent, { kind: 'artifact' }>, slot: ChunkSlot): Task {
  const index = event.artifactId === undefined ? -1 : task.artifacts.findIndex(a => a.artifactId === event.artifactId)
  let artifacts: Artifact[]
  let chunk: Artifact
  // Stored artifacts are kept until the task is evicted: each is built whole, in one literal (a field added later
  // would go to a separate property store), and arrays are grown with `concat`, which makes them at their final
  // length (`[...list, item]` and `push` reserve 16 slots more).
  if (index >= 0 && event.append === true) {
    const old = task.artifacts[index]
    chunk = old.name === undefined
      ? { artifactId: old.artifactId, parts: event.parts }
      : { artifactId: old.artifactId, name: old.name, parts: event.parts }
    artifacts = task.artifacts.slice()
    artifacts[index] = { ...old, parts: old.parts.concat(event.parts) }
  } else {
    const artifactId = event.artifactId ?? newId()
    chunk = event.name === undefined ? { artifactId, parts: event.parts } : { artifactId, name: event.name, parts: event.parts }
    if (event.description !== undefined) chunk.description = event.description
    if (event.metadata !== undefined) chunk.metadata = event.metadata
    if (index >= 0) {
      artifacts = task.artifacts.slice()
      artifacts[index] = chunk
    } else {
      artifacts = task.artifacts.concat([chunk])
    }
  }
  slot.chunk = { artifact: chunk, append: index >= 0 && event.append === true, lastChunk: event.lastChunk ?? true }
  return { ...task, artifacts }
}

function withStatus (task: Task, state: TaskState, now: number, message?: Message): Task {
  const status: Task['status'] = { state, timestamp: isoTime(now) }
  if (message !== undefined) status.message = message
  return { ...task, status }
}

function agentMessage (task: Task, content: MessageContent, metadata?: Record<string, unknown>): Message {
  const message: Message = {
    kind: 'message',
    role: 'agent',
    parts: typeof content === 'string' ? [{ kind: 'text', text: content }] : content,
    messageId: newId(),
    taskId: task.id,
    contextId: task.contextId
  }
  if (metadata !== undefined) message.metadata = metadata
  return message
}

/** The event a write publishes: a status change, else an artifact change, else none (a history-only write). */
function eventOf (previous: StoredTask, next: StoredTask, chunk: ArtifactChunk | undefined): TaskEvent | undefined {
  const before = previous.task
  const after = next.task
  if (before.status !== after.status) {
    return { type: 'status', version: next.version, task: after, final: isSettled(after.status.state) }
  }
  if (before.artifacts !== after.artifacts) {
    return {
      type: 'artifact',
      version: next.version,
      task: after,
      // The executor's events leave their chunk in a slot; a change made through `update` alone is looked up.
      artifact: chunk?.artifact ?? changedArtifact(before, after),
      append: chunk?.append ?? false,
      lastChunk: chunk?.lastChunk ?? true
    }
  }
  return undefined
}

/** The stored record is exactly the one a write sent: that write landed, though its answer was lost. */
function landed (current: StoredTask, sent: StoredTask): boolean {
  return current.version === sent.version && JSON.stringify(current) === JSON.stringify(sent)
}

/** The state a write left its task in. */
function stateOf (record: StoredTask): TaskState {
  return record.task.status.state
}

/** The state a turn left its task in: canceled when the task was canceled while it ran. */
function ended (run: Run, state: TaskState): TaskState {
  return run.abort.aborted ? 'canceled' : state
}

function isAsyncIterable (value: unknown): value is AsyncIterable<ExecutorEvent> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value
}

/** What an executor returned, as a list of events. */
function eventsOf (value: ExecutorResult): ExecutorEvent[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}
