import type { Task } from '../../schemas/task.js'
import type { Subscription, TaskEvent, TaskEventBus } from './event-bus.js'
import { isSettled, presentTask, stateName, type Dialect } from './states.js'
import type { StoredTask } from './store.js'

/** Where a stream's events go: serialized JSON-RPC `result` values, then the end. */
export interface StreamSink {
  /** Writes one result (already JSON). Returns false when the consumer is not keeping up. */
  write (resultJson: string): boolean
  end (): void
}

export interface TaskEventStreamOptions {
  dialect: Dialect
  /**
   * `message`: the stream of a message just sent (default dialect: starts at in_progress, no snapshot; a2a: the
   * Task first). `resubscribe`: the current snapshot first, in both dialects. Either ends when the task settles
   * (terminal, input_required or auth_required), as CONTRACT.md §7 says of every stream.
   */
  mode: 'message' | 'resubscribe'
}

// One serialization per event and dialect, shared by every stream that follows the task (CONTRACT.md §7).
const serialized: Record<Dialect, WeakMap<object, string>> = { default: new WeakMap(), a2a: new WeakMap() }

/** The JSON of an event's `result` in a dialect: the whole Task (default) or an A2A update event (a2a). */
export function eventResult (event: TaskEvent, dialect: Dialect): string {
  const cache = serialized[dialect]
  let json = cache.get(event)
  if (json !== undefined) return json
  const { task } = event
  if (dialect === 'default') {
    json = JSON.stringify(presentTask(task, dialect))
  } else if (event.type === 'status') {
    json = JSON.stringify({
      kind: 'status-update',
      taskId: task.id,
      contextId: task.contextId,
      status: { ...task.status, state: stateName(task.status.state, dialect) },
      final: event.final
    })
  } else {
    json = JSON.stringify({
      kind: 'artifact-update',
      taskId: task.id,
      contextId: task.contextId,
      artifact: event.artifact,
      append: event.append,
      lastChunk: event.lastChunk
    })
  }
  cache.set(event, json)
  return json
}

function snapshotResult (task: Task, dialect: Dialect): string {
  const cache = serialized[dialect]
  let json = cache.get(task)
  if (json === undefined) {
    json = JSON.stringify(presentTask(task, dialect))
    cache.set(task, json)
  }
  return json
}

/**
 * The events of one task for one stream. It subscribes at construction, before the caller reads the task or starts
 * it, and holds what arrives until `start` gives it the snapshot: events at or below the snapshot's version are
 * dropped and later ones kept, so nothing falls in a gap between the snapshot and the live events. Output is held
 * until a sink is attached.
 */
export class TaskEventStream {
  readonly taskId: string
  readonly #dialect: Dialect
  readonly #mode: TaskEventStreamOptions['mode']
  readonly #unsubscribe: Subscription
  #early: TaskEvent[] | null = []
  #pending: string[] | null = []
  #sink: StreamSink | null = null
  #afterVersion = 0
  #ended = false
  #last: Task | null = null

  constructor (bus: TaskEventBus, taskId: string, opts: TaskEventStreamOptions) {
    this.taskId = taskId
    this.#dialect = opts.dialect
    this.#mode = opts.mode
    this.#unsubscribe = bus.subscribe(taskId, this.#onEvent)
  }

  /** Settles once live events reach this stream: read the snapshot after it. */
  get ready (): Promise<void> {
    return this.#unsubscribe.ready
  }

  /** Sets the snapshot the stream starts from, and replays what arrived after it. */
  start (record: StoredTask): this {
    const early = this.#early as TaskEvent[]
    this.#early = null
    this.#afterVersion = record.version
    this.#last = record.task
    if (this.#mode === 'resubscribe' || this.#dialect === 'a2a') {
      // A resubscribe to a task that has settled gets its snapshot and the stream ends.
      this.#push(snapshotResult(record.task, this.#dialect), this.#mode === 'resubscribe' && isSettled(record.task.status.state))
    }
    for (const event of early) this.#onEvent(event)
    return this
  }

  /** The task as of the last event this stream saw, serialized: what a stream cut short by shutdown sends last. */
  snapshot (): string {
    return snapshotResult(this.#last as Task, this.#dialect)
  }

  /** Starts writing: everything held so far, then live events. */
  attach (sink: StreamSink): void {
    this.#sink = sink
    const pending = this.#pending as string[]
    this.#pending = null
    for (const json of pending) sink.write(json)
    if (this.#ended) sink.end()
  }

  /** Stops following the task (client gone, stream closed); idempotent. */
  close (): void {
    this.#ended = true
    this.#unsubscribe()
  }

  readonly #onEvent = (event: TaskEvent): void => {
    if (this.#early !== null) {
      this.#early.push(event)
      return
    }
    if (this.#ended || event.version <= this.#afterVersion) return
    this.#afterVersion = event.version
    this.#last = event.task
    // The status event of a settled task (terminal, input_required, auth_required) is the stream's last.
    this.#push(eventResult(event, this.#dialect), event.type === 'status' && event.final)
  }

  #push (json: string, final: boolean): void {
    if (this.#sink !== null) this.#sink.write(json)
    else (this.#pending as string[]).push(json)
    if (final) {
      this.close()
      if (this.#sink !== null) this.#sink.end()
    }
  }
}
