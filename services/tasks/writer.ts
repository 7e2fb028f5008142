import type { MaybePromise } from '../kernel/maybe-promise.js'
import type { Logger } from '../kernel/logger.js'
import type { Task, TaskState } from '../../schemas/task.js'
import { RunStorageFailure, TaskConflict, TaskNotFound } from '../kernel/errors.js'
import { spanEvent } from '../kernel/tracing.js'
import type { TaskEvent, TaskEventBus } from './event-bus.js'
import { eventOf, type ChunkSlot, type Mutation } from './mutations.js'
import { withTrace, type ReplaceOutcome, type StoredTask, type TaskStore } from './store.js'

// How the task service writes a task: every change is a new snapshot, written with a compare-and-set and then
// published. Three paths, by where the task is:
// - a store in this process (`TaskStore.sync`): read and written at once, with no promise and no tick between the two,
//   so the compare-and-set cannot lose. With the run, the turn and the blocking wait also awaiting only what is a
//   promise, a `message/send` whose executor answers at once allocates 6.4 KB instead of 12.5 KB, and took 70.9
//   instead of 77.5 µs of CPU (BENCHMARKS.md, "No promise for a task that settles at once");
// - a draft, a task whose first turn runs before it is stored (`TaskService.start`): changed in memory, then stored
//   in one write, in the state its turn left it in;
// - a store across the network: compare-and-set from the record last written here, re-read and retried when another
//   writer got there first; a run's writes are also retried while the store refuses them.

export const STORAGE_UNAVAILABLE = 'A2A_ERR_STORAGE_UNAVAILABLE'

/** A run's first retry of a write its store refused waits this long; each next one twice as long, up to the max. */
const STORE_RETRY_FIRST_MS = 50
const STORE_RETRY_MAX_MS = 1000

/** Attempts of a compare-and-set update before giving up: only a pathological race would need more than two. */
const MAX_CAS_ATTEMPTS = 16

/**
 * Called after every state change (not after same-state status updates): push notifications hang off this.
 * `pushConfigs` is what the store saw in the write (`TaskStore.recordsPush`): whether the task had push configs;
 * undefined when the store cannot tell.
 */
export type StatusListener = (record: StoredTask, previous: TaskState, pushConfigs?: boolean) => void

/** A change written to a task not stored yet: published once the task is (see `TaskService.start`). */
interface DraftChange {
  readonly previous: StoredTask
  readonly next: StoredTask
  readonly event: TaskEvent | undefined
}

/** A new task whose first turn runs before it is stored, as far as the turn runs at once (see `TaskService.start`). */
export interface Draft {
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

/** What a retried write sent last, and what it read before: to know, after a lost answer, whether it landed. */
interface Sent {
  previous?: StoredTask
  next?: StoredTask
}

export interface TaskWriterOptions {
  store: TaskStore
  bus: TaskEventBus
  log: Logger
  /** How long a run keeps retrying a write its store refused, ms. */
  storeRetryMs: number
  now: () => number
}

/** Writes and publishes the changes to tasks, for the task service's lifecycle, its runs and its housekeeping. */
export class TaskWriter {
  readonly #store: TaskStore
  readonly #bus: TaskEventBus
  readonly #log: Logger
  readonly #storeRetryMs: number
  readonly #now: () => number
  /**
   * The latest record of each task that runs here, as this process last wrote or read it: a write starts from it
   * instead of reading the task first (the compare-and-set catches a record another instance changed since).
   * Kept for a store across the network only, from `dispatch` to the end of the run.
   */
  readonly latest = new Map<string, StoredTask>()
  /** New tasks whose first turn is running before they are stored (see `TaskService.start`). */
  readonly drafts = new Map<string, Draft>()
  readonly statusListeners: StatusListener[] = []

  constructor (opts: TaskWriterOptions) {
    this.#store = opts.store
    this.#bus = opts.bus
    this.#log = opts.log
    this.#storeRetryMs = opts.storeRetryMs
    this.#now = opts.now
  }

  /**
   * Applies a change with compare-and-set, retrying when another writer got there first, then publishes it. Answered
   * at once by a store in this process: nothing can come between its read and its write, and the run of a task whose
   * executor answers at once takes no tick.
   */
  write (id: string, mutate: Mutation, slot?: ChunkSlot): MaybePromise<StoredTask> {
    const sync = this.#store.sync
    if (sync === undefined) {
      const draft = this.drafts.get(id)
      if (draft === undefined) return this.#writeAsync(id, mutate, slot)
      return this.#writeDraft(draft, id, mutate, slot, () => this.#writeAsync(id, mutate, slot))
    }
    // Nothing runs between this read and this write, so the compare-and-set cannot lose: no retry.
    const current = sync.getNow(id)
    if (current === null) throw new TaskNotFound(id)
    const task = mutate(current.task, current)
    if (task === null) return current
    const next = this.next(current, task)
    /* c8 ignore next -- see above */
    if (!sync.replaceNow(next)) throw new TaskConflict(id)
    return this.published(current, next, eventOf(current, next, slot?.chunk), false, undefined)
  }

  /**
   * A run's write: `write`, retried while the store refuses it (storage down or stalled) for up to `storeRetryMs`.
   * A write whose answer was lost may have landed: a retry that finds exactly the record it sent takes it as done,
   * so nothing is applied twice. Past the budget it throws RunStorageFailure: a storage failure, never the agent's.
   */
  runWrite (id: string, mutate: Mutation, slot?: ChunkSlot): MaybePromise<StoredTask> {
    if (this.#store.sync !== undefined) return this.write(id, mutate, slot)
    const draft = this.drafts.get(id)
    if (draft !== undefined) return this.#writeDraft(draft, id, mutate, slot, () => this.#retried(id, mutate, slot))
    return this.#retried(id, mutate, slot)
  }

  /** The record that follows `current` with `task`: the next version, stamped now (and traced, when a span records). */
  next (current: StoredTask, task: Task): StoredTask {
    return withTrace({ task, owner: current.owner, version: current.version + 1, createdAt: current.createdAt, updatedAt: this.#now() })
  }

  /**
   * Tells subscribers and status listeners about a write that has happened: its `event` goes to this process's
   * listeners, and to the other instances' unless the store `announced` it with the write. Their failures are logged
   * and go no further: the write stands, and the task's run must not be failed by a listener.
   */
  published (previous: StoredTask, next: StoredTask, event: TaskEvent | undefined, announced: boolean, pushConfigs: boolean | undefined): StoredTask {
    const id = next.task.id
    if (this.latest.has(id)) this.latest.set(id, next)
    if (event !== undefined) {
      // Kept for streams that resume; a store that announces kept it with the write.
      if (!announced) this.#store.keep?.(id, event)
      try {
        if (announced) this.#bus.deliver(id, event)
        else this.#bus.publish(id, event)
      } catch (err) {
        this.#log.error({ err, taskId: id }, 'task event listener failed')
      }
    }
    if (previous.task.status.state !== next.task.status.state) {
      spanEvent('a2a.task.state', () => ({ 'a2a.task.id': id, 'a2a.task.state': next.task.status.state, 'a2a.task.version': next.version }))
      for (const listener of this.statusListeners) {
        try {
          listener(next, previous.task.status.state, pushConfigs)
        } catch (err) {
          this.#log.error({ err, taskId: next.task.id }, 'task status listener failed')
        }
      }
    }
    return next
  }

  async #writeAsync (id: string, mutate: Mutation, slot?: ChunkSlot, sent?: Sent): Promise<StoredTask> {
    const store = this.#store
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      // A task that runs here starts from the record last written or read here: no read first. A retry after a
      // lost answer reads, to learn whether the write landed.
      let current = attempt === 0 && sent?.next === undefined ? this.latest.get(id) : undefined
      if (current === undefined) {
        const read = await store.get(id)
        if (read === null) throw new TaskNotFound(id)
        current = read
        if (this.latest.has(id)) this.latest.set(id, read)
      }
      // A retried write whose earlier answer was lost, and which had landed: done, and published now.
      // (`sent.next`, not the copy just read, shares the unchanged parts with `sent.previous`: the event is the same.)
      // Its event went out with it when the store announces (the write's own script published it).
      if (sent?.next !== undefined && landed(current, sent.next)) {
        const previous = sent.previous as StoredTask
        return this.published(previous, sent.next, eventOf(previous, sent.next, slot?.chunk), store.announces === true, undefined)
      }
      const task = mutate(current.task, current)
      if (task === null) return current
      const next = this.next(current, task)
      if (sent !== undefined) {
        sent.previous = current
        sent.next = next
      }
      const event = eventOf(current, next, slot?.chunk)
      const announced = store.announces === true && event !== undefined
      const outcome = await store.replace(next, announced ? event : undefined)
      if (outcome !== false) return this.published(current, next, event, announced, this.#pushConfigs(outcome))
      if (sent !== undefined) sent.next = undefined
    }
    /* c8 ignore next -- only reachable under sustained write contention on one task */
    throw new TaskConflict(id)
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
    const next = this.next(current, task)
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

  /** What a write's outcome says of the task's push configs, when its store can tell (`recordsPush`). */
  #pushConfigs (outcome: ReplaceOutcome): boolean | undefined {
    return this.#store.recordsPush === true ? outcome === 'outbox' : undefined
  }
}

/** The stored record is exactly the one a write sent: that write landed, though its answer was lost. */
function landed (current: StoredTask, sent: StoredTask): boolean {
  return current.version === sent.version && JSON.stringify(current) === JSON.stringify(sent)
}
