import type { Task } from '../../schemas/task.js'
import { fromKept, type KeptEvent, type StoredTask } from './store.js'
import { taskNotFound, type JsonRpcError } from '../kernel/errors.js'
import { openSpan, type Span } from '../kernel/tracing.js'
import { LOCAL, type Subscription, type TaskEvent, type TaskEventBus } from './event-bus.js'
import { isSettled } from './states.js'

/** The metadata key that marks a snapshot sent in place of events no longer kept. */
export const RESYNC_KEY = 'fastify-a2a.resync'

/** `task` marked as a resync: a snapshot sent in place of events the stream no longer has. */
function resynced (task: Task): Task {
  return { ...task, metadata: { ...task.metadata, [RESYNC_KEY]: true } }
}

/**
 * How a stream writes its results, in the wire form of its version and binding: given by the protocol layer, so
 * that the task layer knows no wire.
 */
export interface StreamEncoder {
  /**
   * Every result is the whole task (the v0.3 default dialect): a message's stream starts with no snapshot, a
   * resumed one is not replayed, and of what waits only the latest result is kept.
   */
  readonly wholeTask: boolean
  /** The JSON of an event's result. */
  event (event: TaskEvent): string
  /** The JSON of a snapshot result; `shared`: other streams write the same snapshot (it is remembered per task). */
  snapshot (task: Task, shared: boolean): string
}

/** Where a stream's events go: serialized JSON-RPC `result` values, then the end. */
export interface StreamSink {
  /**
   * Writes one result (already JSON), with its SSE event id when the stream has ids (the task's version). Returns
   * false when the consumer is not keeping up: wait for `drain`; null when it was not written (the server has no
   * room for it now): hold it, and wait for `drain`.
   */
  write (resultJson: string, id?: number): boolean | null
  end (): void
  /** Bytes written but not yet taken by the consumer, beyond the result being written (which may be of any size). */
  queued (): number
  /** Cuts the consumer off: it let too much pile up (CONTRACT.md §7). */
  abort (): void
  /** Ends the stream with an error event, in the binding's form; a sink without it just ends. */
  fail? (error: JsonRpcError): void
  /**
   * Held and queued bytes past which the consumer is cut off at once. Default MAX_QUEUED_BYTES; a sink whose binding
   * itself cuts off a consumer that stops reading (SSE: MAX_QUEUED_BYTES once it has taken nothing for a while)
   * gives MAX_BEHIND_BYTES, so that one that reads is never cut off for being behind by a large event.
   */
  readonly limit?: number
}

/** CONTRACT.md §7: a consumer that does not read may have at most this much waiting for it. */
export const MAX_QUEUED_BYTES = 1024 * 1024

/**
 * However fast it reads, a consumer may not fall further behind than this, held and queued beyond the result being
 * written and the next one to write, on a binding that cuts off consumers that stop reading by itself (`StreamSink.limit`): past it the stream
 * is cut off at once, so what a fast agent piles up for one consumer stays bounded between the binding's looks.
 */
export const MAX_BEHIND_BYTES = 16 * 1024 * 1024

export interface TaskEventStreamOptions {
  encoder: StreamEncoder
  /**
   * `message`: the stream of a message just sent (whole-task results: starts at in_progress, no snapshot; others:
   * the Task first). `resubscribe`: the current snapshot first, in every wire form. Either ends when the task settles
   * (terminal, input_required or auth_required), as CONTRACT.md §7 says of every stream.
   */
  mode: 'message' | 'resubscribe'
  /** A task this process runs: follow it as a `local` listener of the bus (no subscription in Redis). */
  local?: boolean
  /** Each frame carries its task version as the SSE event id (docs/architecture.md, "Resumable streams"). */
  ids?: boolean
  /**
   * The task as stored, which `check` looks at: its version (null once it surely is not stored), and the task. A task
   * that a stream follows has not settled, so it never expires; it can only vanish with its store (Redis restarted
   * empty, flushed). Its version may pass the events that reached the stream: Redis' pub/sub keeps nothing for a
   * subscriber while it reconnects (Redis restarted), so an event published then never comes.
   */
  stored?: {
    version: () => Promise<number | null>
    read: () => Promise<StoredTask | null>
  }
}

/**
 * Where a resumed stream starts (`Last-Event-ID`): after the event `after`, with the events kept since, or (`kept`
 * null) too far behind for them: the current task, marked as a resync.
 */
export interface Resume {
  readonly after: number
  readonly kept: readonly KeptEvent[] | null
}

/**
 * The events of one task for one stream. It subscribes at construction, before the caller reads the task or starts
 * it, and holds what arrives until `start` gives it the snapshot: events at or below the snapshot's version are
 * dropped and later ones kept, so nothing falls in a gap between the snapshot and the live events. Output is held
 * until a sink is attached.
 */
export class TaskEventStream {
  readonly taskId: string
  readonly #encoder: StreamEncoder
  readonly #mode: TaskEventStreamOptions['mode']
  readonly #unsubscribe: Subscription
  readonly #ids: boolean
  readonly #stored: TaskEventStreamOptions['stored']
  /** A `check` is in flight. */
  #checking = false
  /** The stored version a `check` found past the events that had reached the stream; 0: none. */
  #behind = 0
  #early: TaskEvent[] | null = []
  /** What waits for the consumer: everything before a sink is attached, and what comes while it is not keeping up. */
  readonly #held: Held[] = []
  /** Bytes of what waits: their sum; with whole-task results an estimate of the latest snapshot. */
  #heldBytes = 0
  /** Whole-task results: the size of the last snapshot written, which each held event grows by its change. */
  #lastBytes = 0
  #sink: StreamSink | null = null
  /** The last write was refused: hold (and coalesce) until `drain`. */
  #blocked = false
  #written = 0
  #afterVersion = 0
  /** The settling event has been seen: end once everything held is written. */
  #final = false
  #ended = false
  #last: Task | null = null
  /** Results the stream had to send (snapshots and events), for its span. */
  #pushed = 0
  /** Its span, while one records and the stream follows the task. */
  #span: Span | undefined

  constructor (bus: TaskEventBus, taskId: string, opts: TaskEventStreamOptions) {
    this.taskId = taskId
    this.#encoder = opts.encoder
    this.#mode = opts.mode
    this.#ids = opts.ids === true
    this.#stored = opts.stored
    this.#unsubscribe = bus.subscribe(taskId, this.#onEvent, opts.local === true ? LOCAL : undefined)
    // The stream's own span, under the operation's (which ends once the stream is set up), until it stops following.
    this.#span = openSpan('a2a stream', () => ({ 'a2a.task.id': taskId, 'a2a.stream.mode': opts.mode }))
  }

  /** Settles once live events reach this stream: read the snapshot after it. */
  get ready (): Promise<void> {
    return this.#unsubscribe.ready
  }

  /**
   * Sets the snapshot the stream starts from, and replays what arrived after it. A `resume` (not with an encoder
   * of whole tasks, whose every result is the whole task) starts after the client's last event instead: the events kept
   * since, then live ones; or, when those are no longer kept, the snapshot marked as a resync.
   */
  start (record: StoredTask, resume?: Resume): this {
    const early = this.#early as TaskEvent[]
    this.#early = null
    this.#afterVersion = record.version
    this.#last = record.task
    const settled = isSettled(record.task.status.state)
    if (resume !== undefined && !this.#encoder.wholeTask) {
      if (resume.kept === null) {
        this.#push({ snapshot: resynced(record.task), version: record.version }, settled)
      } else {
        this.#afterVersion = resume.after
        for (const kept of resume.kept) this.#onEvent(fromKept(kept, record.task))
        if (this.#afterVersion <= record.version) this.#last = record.task
        // The client has every event up to the task's settling one: nothing is left to send.
        if (!this.#final && settled && resume.kept.length === 0) {
          this.#final = true
          this.close()
        }
      }
    } else if (this.#mode === 'resubscribe' || !this.#encoder.wholeTask) {
      // A resubscribe to a task that has settled gets its snapshot and the stream ends.
      this.#push({ snapshot: record.task, version: record.version }, this.#mode === 'resubscribe' && settled)
    }
    for (const event of early) this.#onEvent(event)
    return this
  }

  /** The task as of the last event this stream saw, serialized: what a stream cut short by shutdown sends last. */
  snapshot (): string {
    return this.#encoder.snapshot(this.#last as Task, true)
  }

  /** The id of what `snapshot` shows, when the stream has ids. */
  snapshotId (): number | undefined {
    return this.#ids ? this.#afterVersion : undefined
  }

  /** About how many bytes of results wait for the consumer here (not written yet). */
  held (): number {
    return this.#heldBytes
  }

  /** Starts writing: everything held so far, then live events. */
  attach (sink: StreamSink): void {
    this.#sink = sink
    this.drain()
  }

  /** The consumer has taken what was queued: write what was held meanwhile. */
  drain (): void {
    const sink = this.#sink
    if (sink === null) return
    this.#blocked = false
    while (this.#held.length > 0 && !this.#blocked) {
      const held = this.#held[0]
      if (!this.#write(sink, held.result, held.json)) break
      this.#held.shift()
      this.#heldBytes -= held.bytes
    }
    if (this.#held.length === 0) this.#heldBytes = 0
    if (this.#held.length === 0 && this.#final) sink.end()
  }

  /**
   * Looks at the task as stored (the binding asks while the stream is idle, at its heartbeats):
   * - one that has vanished will never send another event, so the stream ends with the task-not-found error
   *   (-32001) instead of holding its slot on heartbeats for ever;
   * - one whose version has passed the events that reached the stream, and still has at the next look (an event
   *   in flight arrives long before), has lost events on the way: the stream goes on from the task as stored, sent
   *   as a resync snapshot (as a resumed stream gets when its events are no longer kept), and ends there when the
   *   task has settled. Without it a stream whose task settled while Redis restarted stayed open for ever.
   * A look that fails (storage down) decides nothing: the next one does.
   */
  check (): void {
    const stored = this.#stored
    if (stored === undefined || this.#checking || this.#ended || this.#early !== null) return
    this.#checking = true
    this.#look(stored).then(() => { this.#checking = false }, () => { this.#checking = false })
  }

  async #look (stored: NonNullable<TaskEventStreamOptions['stored']>): Promise<void> {
    const version = await stored.version()
    const sink = this.#sink
    if (this.#ended || sink === null) return
    if (version === null) {
      this.close()
      if (sink.fail !== undefined) sink.fail(taskNotFound(this.taskId))
      else sink.end()
      return
    }
    if (version <= this.#afterVersion) {
      this.#behind = 0
      return
    }
    if (this.#behind === 0 || this.#afterVersion >= this.#behind) {
      this.#behind = version
      return
    }
    const record = await stored.read()
    if (record === null || this.#ended || record.version <= this.#afterVersion) return
    this.#behind = 0
    this.#afterVersion = record.version
    this.#last = record.task
    const task = this.#encoder.wholeTask ? record.task : resynced(record.task)
    this.#push({ snapshot: task, version: record.version }, isSettled(record.task.status.state))
  }

  /** Stops following the task (client gone, stream closed); idempotent. */
  close (): void {
    this.#ended = true
    this.#unsubscribe()
    const span = this.#span
    if (span === undefined) return
    this.#span = undefined
    // `settled`: the task's last event reached the stream; `closed`: the consumer left first, or the task vanished.
    span.setAttributes({ 'a2a.stream.results': this.#pushed, 'a2a.stream.end': this.#final ? 'settled' : 'closed' })
    span.end()
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
    this.#push(event, event.type === 'status' && event.final)
  }

  #push (result: Result, final: boolean): void {
    this.#pushed++
    if (final) {
      this.#final = true
      this.close()
    }
    const sink = this.#sink
    if (sink !== null && !this.#blocked && this.#held.length === 0) {
      if (this.#write(sink, result)) {
        if (final) sink.end()
        return
      }
    }
    this.#hold(result)
    // The next result to write is spared, as the sink spares the one being written: a client that reads gets an event
    // of any size (a 16 MiB message echoed), and only what waits behind it counts.
    const next = this.#held[0].bytes
    if (sink !== null && this.#heldBytes - next + sink.queued() > (sink.limit ?? MAX_QUEUED_BYTES)) sink.abort()
  }

  /** Writes one result; false when the sink had no room for it (nothing written: the caller holds it). */
  #write (sink: StreamSink, result: Result, json = this.#json(result)): boolean {
    const written = sink.write(json, this.#ids ? result.version : undefined)
    if (written === null) {
      this.#blocked = true
      return false
    }
    this.#lastBytes = json.length
    this.#blocked = !written
    this.#written++
    return true
  }

  /**
   * Keeps a result for a consumer that is not keeping up (or not attached yet), coalescing what a later result makes
   * redundant, so that a fast producer neither cuts off a consumer that reads nor piles up memory:
   * - whole-task results (v0.3 default dialect): every result is the whole task, so only the latest is kept (never in place of the stream's
   *   first result, which must show the first state). Its size is estimated from the last snapshot written and the
   *   changes since, rather than serializing every snapshot a slow consumer will never see;
   * - event results: consecutive chunks appended to one artifact are merged into one artifact-update.
   * What is held counts towards the consumer's 1 MiB.
   */
  #hold (result: Result): void {
    const last = this.#held[this.#held.length - 1]
    if (this.#encoder.wholeTask) {
      if (last !== undefined && (this.#written > 0 || this.#held.length > 1)) this.#held.pop()
      this.#held.push({ result, bytes: 0 })
      this.#heldBytes = Math.max(this.#heldBytes, this.#lastBytes) + changeBytes(result)
      return
    }
    const previous = last?.result
    if (previous !== undefined && 'type' in previous && previous.type === 'artifact' && 'type' in result &&
      result.type === 'artifact' && result.append && result.artifact.artifactId === previous.artifact.artifactId) {
      const merged: TaskEvent = {
        ...result,
        artifact: { ...previous.artifact, parts: [...previous.artifact.parts, ...result.artifact.parts] },
        append: previous.append
      }
      // The merged update grows by the new parts only.
      const bytes = JSON.stringify(result.artifact.parts).length
      this.#heldBytes += bytes
      this.#held[this.#held.length - 1] = { result: merged, bytes: last.bytes + bytes }
      return
    }
    const json = this.#json(result)
    this.#heldBytes += json.length
    this.#held.push({ result, bytes: json.length, json })
  }

  #json (result: Result): string {
    if (!('snapshot' in result)) return this.#encoder.event(result)
    // The first result of a message's own stream is its new task, which no other stream shares: nothing to remember.
    return this.#encoder.snapshot(result.snapshot, this.#mode !== 'message')
  }
}

/** About how much an event grows the task's snapshot by. */
function changeBytes (result: Result): number {
  if ('snapshot' in result) return 0
  if (result.type === 'status') return JSON.stringify(result.task.status).length
  return JSON.stringify(result.append ? result.artifact.parts : result.artifact).length
}

/** What a stream writes: a task snapshot (at its version), or an event. */
type Result = { readonly snapshot: Task, readonly version: number } | TaskEvent

/** A result waiting for the consumer, with its serialized size when it counts towards the consumer's limit. */
interface Held {
  readonly result: Result
  readonly bytes: number
  /** The result serialized, when holding it took that already (a2a): written as it is. */
  readonly json?: string
}
