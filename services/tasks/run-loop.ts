import { isThenable, type MaybePromise } from '../kernel/maybe-promise.js'
import { traced } from '../kernel/tracing.js'
import type { Logger } from '../kernel/logger.js'
import type { Message, TaskState } from '../../schemas/task.js'
import type { Principal } from '../auth/principal.js'
import type { AgentExecutor, AgentTools, ExecutorEvent, ExecutorResult } from '../agent/executor.js'
import { IllegalTransition, RunStorageFailure, invalidParams } from '../kernel/errors.js'
import type { TaskEventBus } from './event-bus.js'
import type { TaskLeases } from './leases.js'
import { contextHistory } from './context-history.js'
import { RunAbort, TurnContext } from './turn-context.js'
import { canTransition, isSettled, isTerminal, isoTime } from './states.js'
import { applyAhead, mergedChunks } from './read-ahead.js'
import {
  FAILED_MESSAGE, addArtifact, addResultText, agentMessage, stateOf, withStatus, type ChunkSlot, type Turn
} from './mutations.js'
import { STORAGE_UNAVAILABLE, type TaskWriter } from './writer.js'
import type { StoredTask, TaskStore } from './store.js'

// The executor runs: one run per task that works, one turn per message it is given, and each event the executor
// yields written to the task as it comes.

/**
 * Most events an executor's run reads ahead while a write is in flight (see `#iterate`): what it holds of them in
 * memory at most, and the most chunks one write carries.
 */
const READ_AHEAD = 256

/** The `context.extensions` of a message whose request activated none. */
const NO_EXTENSIONS: readonly string[] = Object.freeze([])

/** A task's run in this process. */
export interface Run {
  readonly abort: RunAbort
  readonly queue: Message[]
  readonly principal: Principal
  done: Promise<void>
  /** Set once the run's loop has returned, by its last step. */
  ended: boolean
}

export interface TaskRunsOptions {
  store: TaskStore
  bus: TaskEventBus
  executor: AgentExecutor
  log: Logger
  toolsFor: (principal: Principal, extensions: readonly string[]) => AgentTools
  leases: TaskLeases | undefined
  writer: TaskWriter
  now: () => number
}

/** The executor runs of this process: started, queued behind, stopped, and each one's loop of turns. */
export class TaskRuns {
  readonly #store: TaskStore
  readonly #bus: TaskEventBus
  readonly #executor: AgentExecutor
  readonly #log: Logger
  readonly #toolsFor: (principal: Principal, extensions: readonly string[]) => AgentTools
  readonly #leases: TaskLeases | undefined
  readonly #writer: TaskWriter
  readonly #now: () => number
  /** The runs going on, by task id. */
  readonly running = new Map<string, Run>()
  /** The sender of a message queued behind a running turn, when it is not the run's starter. */
  readonly #senders = new WeakMap<Message, Principal>()
  /** The extensions the request that sent a message activated, when it activated any (`context.extensions`). */
  readonly #extensions = new WeakMap<Message, readonly string[]>()

  constructor (opts: TaskRunsOptions) {
    this.#store = opts.store
    this.#bus = opts.bus
    this.#executor = opts.executor
    this.#log = opts.log
    this.#toolsFor = opts.toolsFor
    this.#leases = opts.leases
    this.#writer = opts.writer
    this.#now = opts.now
  }

  /** Starts the executor on a task's last history message, or queues the message behind a running turn. */
  dispatch (record: StoredTask, principal: Principal, extensions?: readonly string[]): void {
    const message = record.task.history[record.task.history.length - 1]
    if (this.enqueue(record.task.id, message, principal, extensions) !== undefined) return
    if (extensions !== undefined) this.#extensions.set(message, extensions)
    const run: Run = { abort: new RunAbort(), queue: [message], principal, done: Promise.resolve(), ended: false }
    if (this.#store.sync === undefined) this.#writer.latest.set(record.task.id, record)
    run.done = this.#loop(record.task.id, run, record.version === 1)
    // A run that ended before its loop returned (an executor that answered at once, over a store in this process)
    // could not be seen, queued behind or canceled by anyone: it is not registered. A Map in the old generation gets
    // its new tables there, and one entry set and deleted per task cost two such tables: old-generation growth per
    // `message/send` went from 1,130 to 1,162 bytes down to 979 to 994 (BENCHMARKS.md).
    if (!run.ended) this.running.set(record.task.id, run)
  }

  /**
   * Queues a message behind the task's running turn, if it has one, to run as its `sender` (tools, scopes and audit
   * are the sender's). Returns that run; undefined when the task has none.
   */
  enqueue (taskId: string, message: Message, sender: Principal, extensions?: readonly string[]): Run | undefined {
    const run = this.running.get(taskId)
    if (run === undefined) return undefined
    this.#senders.set(message, sender)
    if (extensions !== undefined) this.#extensions.set(message, extensions)
    run.queue.push(message)
    return run
  }

  /** Aborts a task's run here, dropping what is queued behind its turn; nothing when it has none. */
  stop (id: string): void {
    const run = this.running.get(id)
    if (run === undefined) return
    run.queue.length = 0
    run.abort.abort()
  }

  /**
   * A task's run: one turn per queued message. Written for both kinds of store and executor: with a store in this
   * process and an executor that answers at once, it finishes before `dispatch` returns, with no promise made;
   * each step awaits only what is a promise.
   */
  async #loop (taskId: string, run: Run, fresh: boolean): Promise<void> {
    const { abort } = run
    const leases = this.#leases
    const writer = this.#writer
    // Set when the run could not write its task: the lease is left to lapse, and the reaper fails the task.
    let stranded = false
    if (leases !== undefined) {
      // A new task's lease was taken with its insert, so a crash between the two cannot leave it unleased.
      if (fresh && this.#store.leasesOnInsert === true) leases.hold(taskId)
      // Without its lease the task still runs; it is only not reaped if this instance dies meanwhile.
      else await leases.acquire(taskId).catch((err: unknown) => this.#log.warn({ err, taskId }, 'task lease not taken'))
    }
    try {
      for (let message = run.queue.shift(); message !== undefined; message = run.queue.shift()) {
        let started = writer.runWrite(taskId, task => {
          if (task.status.state === 'in_progress' || isTerminal(task.status.state)) return null
          return withStatus(task, 'in_progress', this.#now())
        })
        if (started instanceof Promise) started = await started
        if (abort.aborted || isTerminal(started.task.status.state)) return
        // A span per turn, active for the executor: its own outbound calls join the trace (docs/operations.md, "Traces").
        let state = traced('invoke_agent', () => ({
          'gen_ai.operation.name': 'invoke_agent',
          'a2a.task.id': taskId,
          'a2a.context.id': started.task.contextId
        }), () => this.#turn(started, message, run), (span, after) => { span.setAttribute('a2a.task.state', after) })
        if (state instanceof Promise) state = await state
        if (isTerminal(state)) return
        if (run.queue.length > 0) continue
        // input_required and auth_required wait for the client's next message, in a new run.
        if (state !== 'in_progress') return
        const completed = writer.runWrite(taskId, task => task.status.state === 'in_progress' && run.queue.length === 0
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
      if (this.running.get(taskId) === run) this.running.delete(taskId)
      // A task not stored when its turn ended is stored without a lease. (A run that writes waits for its task's
      // insert: only a run aborted meanwhile could end while it is in flight, and its abort was a write after it.)
      const draft = writer.drafts.get(taskId)
      const unleased = draft !== undefined && draft.stored === undefined
      const last = writer.latest.get(taskId)
      writer.latest.delete(taskId)
      if (draft === undefined) this.#rejoin(taskId)
      if (leases !== undefined) {
        // The write that made the task terminal dropped its lease (`TaskStore.leasesOnInsert`).
        if (stranded || unleased || (this.#store.leasesOnInsert === true && last !== undefined && isTerminal(last.task.status.state))) {
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
    const followed = this.#bus.follow(taskId)
    if (followed === undefined) return
    followed.then(() => this.#store.get(taskId)).then(now => {
      if (now !== null) this.#bus.deliver(taskId, { type: 'status', version: now.version, task: now.task, final: isSettled(now.task.status.state) })
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
    const extensions = this.#extensions.get(message) ?? NO_EXTENSIONS
    let outcome: MaybePromise<TaskState>
    try {
      const result = this.#executor(new TurnContext({
        task: record.task,
        message,
        principal: sender,
        tools: this.#toolsFor(sender, extensions),
        log: this.#log,
        abort: run.abort,
        extensions,
        contextHistory: limit => contextHistory(this.#store, record, limit)
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
    const failed = this.#writer.runWrite(taskId, task => isTerminal(task.status.state)
      ? null
      : withStatus(task, 'failed', this.#now(), agentMessage(task, FAILED_MESSAGE)))
    return failed instanceof Promise ? failed.then(stateOf) : stateOf(failed)
  }

  /** Writes one executor event to the task. Returns the task's state afterwards. */
  #apply (taskId: string, event: ExecutorEvent, turn: Turn): MaybePromise<TaskState> {
    const now = this.#now()
    const slot: ChunkSlot = {}
    const next = this.#writer.runWrite(taskId, task => {
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
