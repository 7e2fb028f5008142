import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { StorageUnavailable } from '../kernel/errors.js'
import type { Logger } from '../kernel/logger.js'
import { traceCarrier, type TraceCarrier } from '../kernel/tracing.js'
import type { Artifact, Task } from '../../schemas/task.js'
import { MemoryTaskEventBus, subscription, type AbortHandler, type Subscription, type TaskEvent, type TaskEventBus, type TaskEventListener } from './event-bus.js'

export interface RedisTaskEventBusOptions {
  /** Prefix of the channels: `<prefix>events:<taskId>` per task and `<prefix>abort` for cancellation. */
  keyPrefix: string
  log: Logger
  /**
   * Reads a task as stored (the task store's `get`): the base a chunk's message is added to when this instance has
   * not seen the task as it was just before the chunk. Without it, such a chunk is dropped with a warning.
   */
  load?: (taskId: string) => Promise<{ readonly version: number, readonly task: Task } | null>
}

/** The task as of one version: what a chunk announced without its task (TaskEventAnnouncer) is added to. */
interface Base {
  readonly version: number
  readonly task: Task
}

/** An event as announced: a chunk's leaves its task out. */
type Announced = TaskEvent | (Omit<Extract<TaskEvent, { type: 'artifact' }>, 'task'> & { task?: undefined })

/** Length of the origin tag (a UUID and a newline) in front of every event and abort message. */
const ORIGIN_LENGTH = 37

/** A `local` subscription: its listener, and how to remove it from where it listens now. */
interface LocalSub {
  readonly listener: TaskEventListener
  off: () => void
}

/** How a write script publishes its change to the other instances (RedisTaskStore's `announcer`). */
export interface TaskEventAnnouncer {
  /** The task's channel. */
  channel (taskId: string): string
  /**
   * The message announcing `event`, whose task is already serialized as `taskJson`; without `taskJson`, the message
   * of a chunk appended to an artifact, which leaves its task out: the other instances add the chunk to the task as
   * they last saw it (see RedisTaskEventBus).
   */
  message (event: TaskEvent, taskJson?: string): string
  /**
   * The head of the message announcing the chunk of version `version`, without its task: the kept event's JSON
   * (`keptBody`) without its opening brace completes it (the store does so in its script).
   */
  chunkHead (version: number): string
  /** The head of `message(event, taskJson)`, which `taskJson` and a closing brace complete (the store's script does). */
  taskHead (event: TaskEvent): string
}

/**
 * The task event bus across instances (CONTRACT.md §10): every event goes to this process's listeners at once and
 * is published on the task's Redis channel for the others. An instance subscribes to a task's channel only while it
 * has listeners on that task, and drops its own messages by their origin tag, so a local listener sees each event
 * once and in the order it was written here.
 *
 * Pub/sub keeps no history: a stream reads the task's snapshot after `ready` (the SUBSCRIBE acknowledged) and drops
 * events at or below the snapshot's version (see TaskEventStream), so nothing falls between the two.
 *
 * A `local` listener (a blocking wait on a task this instance runs) costs Redis nothing: it hears this process's
 * events, and the cancellations of its task made elsewhere, which come with the abort request on the one channel
 * every instance listens to. The RedisTaskStore publishes the events of its writes from the write's own script (this
 * bus is its `announcer`), so an event costs no round trip of its own.
 */
export class RedisTaskEventBus implements TaskEventBus, TaskEventAnnouncer {
  readonly #pub: Redis
  readonly #sub: Redis
  /** Listeners that the task's Redis channel feeds too. */
  readonly #local = new MemoryTaskEventBus()
  /** `local` listeners: this process's events and cancellations only. */
  readonly #localOnly = new MemoryTaskEventBus()
  /** The `local` subscriptions of each task, so that `follow` can move them to the channel. */
  readonly #localSubs = new Map<string, Set<LocalSub>>()
  readonly #origin = randomUUID() + '\n'
  readonly #eventsPrefix: string
  readonly #abortChannel: string
  readonly #log: Logger
  /** Task id → its SUBSCRIBE, acknowledged or failed (a failure is StorageUnavailable). */
  readonly #channels = new Map<string, Promise<void>>()
  readonly #abortHandlers: AbortHandler[] = []
  readonly #load: RedisTaskEventBusOptions['load']
  /** Task id → the task as this instance last saw it, while it listens to the task's channel. */
  readonly #bases = new Map<string, Base>()
  /** Task id → the messages that wait for its base to be read (`load`), in the order they came. */
  readonly #loading = new Map<string, Announced[]>()
  #closed = false

  /** `client` is borrowed for publishing; the bus opens (and closes) its own subscriber connection from it. */
  constructor (client: Redis, opts: RedisTaskEventBusOptions) {
    this.#pub = client
    this.#log = opts.log
    this.#load = opts.load
    this.#eventsPrefix = `${opts.keyPrefix}events:`
    this.#abortChannel = `${opts.keyPrefix}abort`
    this.#sub = client.duplicate()
    // The client's own error listener is not copied: without one, ioredis prints every failed reconnect.
    this.#sub.on('error', () => {})
    this.#sub.on('message', this.#onMessage)
    this.#sub.subscribe(this.#abortChannel).catch((err: Error) => {
      this.#log.warn({ err }, 'could not subscribe to task abort requests')
    })
  }

  publish (taskId: string, event: TaskEvent): void {
    this.#pub.publish(this.#eventsPrefix + taskId, this.#origin + JSON.stringify(event)).catch((err: Error) => {
      this.#log.warn({ err, taskId }, 'task event not published')
    })
    this.deliver(taskId, event)
  }

  deliver (taskId: string, event: TaskEvent): void {
    let failure: unknown
    try {
      this.#local.publish(taskId, event)
    } catch (err) {
      failure = err
    }
    this.#localOnly.publish(taskId, event)
    this.#remember(taskId, event.version, event.task)
    if (failure !== undefined) throw failure
  }

  channel (taskId: string): string {
    return this.#eventsPrefix + taskId
  }

  message (event: TaskEvent, taskJson?: string): string {
    if (taskJson === undefined) {
      const { task, ...rest } = event
      return this.#origin + JSON.stringify(rest)
    }
    return `${this.taskHead(event)}${taskJson}}`
  }

  taskHead (event: TaskEvent): string {
    const { task, ...rest } = event
    return `${this.#origin}${JSON.stringify(rest).slice(0, -1)},"task":`
  }

  chunkHead (version: number): string {
    return `${this.#origin}{"version":${version},`
  }

  subscribe (taskId: string, listener: TaskEventListener, opts?: { local?: boolean }): Subscription {
    if (opts?.local === true) return this.#subscribeLocal(taskId, listener)
    const first = this.#local.listenerCount(taskId) === 0
    const unsubscribe = this.#local.subscribe(taskId, listener)
    if (first) this.#channels.set(taskId, this.#listen(taskId))
    const ready = this.#channels.get(taskId) as Promise<void>
    let active = true
    return Object.assign(() => {
      if (!active) return
      active = false
      unsubscribe()
      if (this.#local.listenerCount(taskId) > 0 || this.#closed) return
      this.#channels.delete(taskId)
      this.#bases.delete(taskId)
      this.#loading.delete(taskId)
      this.#sub.unsubscribe(this.#eventsPrefix + taskId).catch(() => {})
    }, { ready })
  }

  follow (taskId: string): Promise<void> | undefined {
    const subs = this.#localSubs.get(taskId)
    if (subs === undefined) return undefined
    this.#localSubs.delete(taskId)
    const ready: Array<Promise<void>> = []
    for (const sub of subs) {
      sub.off()
      const followed = this.subscribe(taskId, sub.listener)
      sub.off = followed
      ready.push(followed.ready)
    }
    return Promise.all(ready).then(() => {})
  }

  /** A `local` listener, behind an unsubscribe that still works once `follow` has moved it to the channel. */
  #subscribeLocal (taskId: string, listener: TaskEventListener): Subscription {
    let subs = this.#localSubs.get(taskId)
    if (subs === undefined) this.#localSubs.set(taskId, (subs = new Set()))
    const sub: LocalSub = { listener, off: this.#localOnly.subscribe(taskId, listener) }
    subs.add(sub)
    const all = subs
    return subscription(() => {
      sub.off()
      all.delete(sub)
      if (all.size === 0 && this.#localSubs.get(taskId) === all) this.#localSubs.delete(taskId)
    })
  }

  listenerCount (taskId?: string): number {
    return this.#local.listenerCount(taskId) + this.#localOnly.listenerCount(taskId)
  }

  requestAbort (taskId: string, event?: TaskEvent): void {
    // Every instance hears it, this one too: the one running the task aborts it, the others have nothing to do.
    const traceparent = traceCarrier()?.traceparent
    let message = this.#origin + taskId
    if (event !== undefined || traceparent !== undefined) message += '\n' + (event === undefined ? '' : JSON.stringify(event))
    if (traceparent !== undefined) message += '\n' + traceparent
    this.#pub.publish(this.#abortChannel, message).catch((err: Error) => {
      this.#log.warn({ err, taskId }, 'task abort request not published')
    })
  }

  onAbortRequest (handler: AbortHandler): void {
    this.#abortHandlers.push(handler)
  }

  async close (): Promise<void> {
    this.#closed = true
    await this.#local.close()
    await this.#localOnly.close()
    this.#localSubs.clear()
    this.#channels.clear()
    this.#bases.clear()
    this.#loading.clear()
    this.#sub.disconnect()
  }

  #listen (taskId: string): Promise<void> {
    const ack = this.#sub.subscribe(this.#eventsPrefix + taskId).then(() => {}, (err: Error) => {
      throw new StorageUnavailable(err.message)
    })
    // Callers that never await `ready` (a blocking wait) must not leave an unhandled rejection behind.
    ack.catch(() => {})
    return ack
  }

  /**
   * An abort request: `<origin>\n<taskId>[\n<event JSON>[\n<traceparent>]]` (a bare task id from an instance of an
   * earlier release; the event may be empty when a traceparent follows). The cancel's event goes to this process's
   * `local` listeners, then the handlers abort the run if it is here.
   */
  #onAbort (message: string): void {
    let taskId = message
    let trace: TraceCarrier | undefined
    if (message.length > ORIGIN_LENGTH && message[ORIGIN_LENGTH - 1] === '\n') {
      const [id, json = '', traceparent] = message.slice(ORIGIN_LENGTH).split('\n', 3)
      taskId = id
      if (json !== '' && !message.startsWith(this.#origin)) this.#deliverLocalOnly(taskId, json)
      if (traceparent !== undefined) trace = { traceparent }
    }
    for (const handler of this.#abortHandlers) handler(taskId, trace)
  }

  #deliverLocalOnly (taskId: string, json: string): void {
    if (this.#localOnly.listenerCount(taskId) === 0) return
    try {
      this.#localOnly.publish(taskId, JSON.parse(json) as TaskEvent)
    } catch (err) {
      this.#log.warn({ err, taskId }, 'task cancellation not delivered')
    }
  }

  readonly #onMessage = (channel: string, message: string): void => {
    if (channel === this.#abortChannel) {
      this.#onAbort(message)
      return
    }
    if (message.startsWith(this.#origin)) return
    const taskId = channel.slice(this.#eventsPrefix.length)
    let event: Announced
    try {
      event = JSON.parse(message.slice(ORIGIN_LENGTH))
    } catch (err) {
      this.#log.warn({ err, taskId }, 'unreadable task event dropped')
      return
    }
    this.#receive(taskId, event, true)
  }

  /**
   * An event from another instance, to this process's listeners. A chunk announced without its task is added to the
   * task as this instance last saw it, when that is the version just before; else the task is read first (`load`),
   * once (`reload`), and the events that come meanwhile wait behind it. A chunk that still finds the task older goes
   * on with the chunk added to it: its listeners get every chunk, and the next whole task catches up.
   */
  #receive (taskId: string, announced: Announced, reload: boolean): void {
    const waiting = this.#loading.get(taskId)
    if (waiting !== undefined) {
      waiting.push(announced)
      return
    }
    let event: TaskEvent
    if (announced.task !== undefined) {
      event = announced
    } else {
      const base = this.#bases.get(taskId)
      if (reload && (base === undefined || base.version < announced.version - 1)) {
        this.#loadBase(taskId, announced)
        return
      }
      if (base === undefined) {
        this.#log.warn({ taskId }, 'task chunk dropped: the task could not be read')
        return
      }
      event = { ...announced, task: base.version >= announced.version ? base.task : withChunk(base.task, announced.artifact) }
    }
    this.#remember(taskId, event.version, event.task)
    try {
      this.#local.publish(taskId, event)
    } catch (err) {
      this.#log.error({ err, taskId }, 'task event listener failed')
    }
  }

  /** Reads the task as stored, then passes on `first` and what came meanwhile. */
  #loadBase (taskId: string, first: Announced): void {
    const waiting = [first]
    this.#loading.set(taskId, waiting)
    const load = this.#load ?? (async () => null)
    load(taskId).then(record => {
      if (record !== null) this.#remember(taskId, record.version, record.task)
    }, (err: unknown) => {
      this.#log.warn({ err, taskId }, 'task not read for its chunk')
    }).finally(() => {
      if (this.#loading.get(taskId) !== waiting) return
      this.#loading.delete(taskId)
      for (const event of waiting) this.#receive(taskId, event, false)
    }).catch(() => {})
  }

  /** Keeps the task as of `version` as the base of the next chunk, while its channel is listened to. */
  #remember (taskId: string, version: number, task: Task): void {
    if (!this.#channels.has(taskId)) return
    const base = this.#bases.get(taskId)
    if (base === undefined || base.version < version) this.#bases.set(taskId, { version, task })
  }
}

/** `task` with the parts of `chunk` appended to its artifact (a new artifact when it has none of that id). */
function withChunk (task: Task, chunk: Artifact): Task {
  const index = task.artifacts.findIndex(a => a.artifactId === chunk.artifactId)
  if (index < 0) return { ...task, artifacts: task.artifacts.concat([chunk]) }
  const artifacts = task.artifacts.slice()
  artifacts[index] = { ...artifacts[index], parts: artifacts[index].parts.concat(chunk.parts) }
  return { ...task, artifacts }
}
