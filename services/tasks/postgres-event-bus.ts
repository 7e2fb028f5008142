import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import { StorageUnavailable } from '../kernel/errors.js'
import type { Logger } from '../kernel/logger.js'
import { traceCarrier, type TraceCarrier } from '../kernel/tracing.js'
import { MemoryTaskEventBus, type AbortHandler, type Subscription, type TaskEvent, type TaskEventBus, type TaskEventListener } from './event-bus.js'
import type { TaskStatus } from '../../schemas/task.js'
import type { TaskSince } from './postgres-store.js'
import { isSettled } from './states.js'
import { fromKept } from './store.js'

/** The one channel every instance listens on. */
export const EVENTS_CHANNEL = 'a2a_events'

/** The first wait before a broken listening connection is opened again; each next one twice as long, up to the max. */
const RETRY_FIRST_MS = 100
const RETRY_MAX_MS = 1_000

export interface PostgresTaskEventBusOptions {
  /** Opens the connection the bus listens on: one per instance, kept open, opened again when it breaks. */
  connect: () => Promise<pg.Client>
  /** Sends a notice on EVENTS_CHANNEL (through the pool). */
  notify: (payload: string) => Promise<unknown>
  /** Reads a task and its events after a version (PostgresTaskStore's `since`). */
  since: (taskId: string, after: number) => Promise<TaskSince | null>
  log: Logger
}

/** What this process's listeners of one task have had: the version of the last event (0: none yet), and its status. */
interface Followed {
  version: number
  status?: TaskStatus
  /** While `version` is 0: the version of the first notice of the task (0: read from its first event). */
  from?: number
}

/** A read of a task's writes under way; `again`: another notice came meanwhile, so one more read follows. */
interface Reading {
  again: boolean
}

/**
 * The task event bus across instances on PostgreSQL alone (docs/architecture.md, "PostgreSQL stores"). Each instance
 * keeps one connection that LISTENs on EVENTS_CHANNEL. A write the store makes sends a notice on it in the same round
 * trip (`PostgresTaskStore`'s `announcer`): `<origin> e <version> <taskId>`, some eighty bytes, far below
 * NOTIFY's 8,000-byte limit. An instance whose listeners follow that task reads what it has not seen (`since`: the
 * task and its kept events, one round trip, one read at a time per task, however many notices come meanwhile) and
 * hands the events to them; the others drop the notice. A cancel's abort request is a notice too
 * (`<origin> a 0 <taskId>`), which every instance hears and the one running the task acts on.
 *
 * Every listener hears every instance's writes: a subscription costs the database nothing, and is ready as soon as
 * the bus listens. While the connection is down, subscribing fails with StorageUnavailable; once it is open again,
 * every followed task is read, so that an event written meanwhile is not missed.
 */
export class PostgresTaskEventBus implements TaskEventBus {
  readonly #local = new MemoryTaskEventBus()
  readonly #origin = randomUUID()
  readonly #opts: PostgresTaskEventBusOptions
  readonly #log: Logger
  readonly #abortHandlers: AbortHandler[] = []
  /** Task id → what its listeners here have had, while it has listeners. */
  readonly #seen = new Map<string, Followed>()
  readonly #reads = new Map<string, Reading>()
  #client: pg.Client | null = null
  /** Settles once the bus listens; rejected while its connection is down. */
  #ready: Promise<void>
  /** The first attempt to listen (attempts never reject). */
  readonly #started: Promise<void>
  /** The attempt under way, or the last one. */
  #attempt: Promise<void>
  /** The connection is down, and has been said to be. */
  #down = false
  #retry: NodeJS.Timeout | undefined
  #closed = false

  constructor (opts: PostgresTaskEventBusOptions) {
    this.#opts = opts
    this.#log = opts.log
    this.#attempt = this.#started = this.#listen(RETRY_FIRST_MS)
    this.#ready = this.#started.then(async () => { await this.#ready })
    this.#ready.catch(() => {})
  }

  /**
   * Resolves once the first attempt to listen has been made. One that failed is retried, as a connection that
   * breaks is: subscriptions fail with StorageUnavailable until one succeeds.
   */
  async start (): Promise<void> {
    await this.#started
  }

  /** The notice of write `version` of a task, as the store sends it with the write. */
  notice (taskId: string, version: number): string {
    return `${this.#origin} e ${version} ${taskId}`
  }

  publish (taskId: string, event: TaskEvent): void {
    this.#opts.notify(this.notice(taskId, event.version)).catch((err: unknown) => {
      this.#log.warn({ err, taskId }, 'task event not published')
    })
    this.deliver(taskId, event)
  }

  deliver (taskId: string, event: TaskEvent): void {
    const followed = this.#seen.get(taskId)
    if (followed !== undefined && event.version > followed.version) {
      followed.version = event.version
      followed.status = event.task.status
    }
    this.#local.publish(taskId, event)
  }

  subscribe (taskId: string, listener: TaskEventListener): Subscription {
    const unsubscribe = this.#local.subscribe(taskId, listener)
    if (!this.#seen.has(taskId)) this.#seen.set(taskId, { version: 0 })
    let active = true
    return Object.assign(() => {
      if (!active) return
      active = false
      unsubscribe()
      if (this.#local.listenerCount(taskId) === 0) this.#seen.delete(taskId)
    }, { ready: this.#ready })
  }

  /** Every listener hears every instance's writes already. */
  follow (): undefined {
    return undefined
  }

  listenerCount (taskId?: string): number {
    return this.#local.listenerCount(taskId)
  }

  requestAbort (taskId: string): void {
    // This instance's handlers at once; the others by the notice. (The cancel's own event went out with its write.)
    this.#abort(taskId)
    // The version's place carries the canceller's traceparent (instances of earlier releases read no version there).
    this.#opts.notify(`${this.#origin} a ${traceCarrier()?.traceparent ?? '0'} ${taskId}`).catch((err: unknown) => {
      this.#log.warn({ err, taskId }, 'task abort request not published')
    })
  }

  onAbortRequest (handler: AbortHandler): void {
    this.#abortHandlers.push(handler)
  }

  async close (): Promise<void> {
    this.#closed = true
    clearTimeout(this.#retry)
    // An attempt under way ends its connection itself, once it sees the bus closed.
    await this.#attempt
    await this.#local.close()
    this.#seen.clear()
    const client = this.#client
    this.#client = null
    await client?.end().catch(() => {})
  }

  /** Opens the listening connection; on failure, again after `waitMs`, then twice as long each time, until closed. */
  async #listen (waitMs: number): Promise<void> {
    try {
      await this.#open()
    } catch (err) {
      this.#ready = Promise.reject(new StorageUnavailable('postgres event listener down'))
      this.#ready.catch(() => {})
      if (this.#closed) return
      if (!this.#down) this.#log.warn({ err }, 'postgres event listener not listening; retrying')
      this.#down = true
      this.#retry = setTimeout(() => { this.#attempt = this.#listen(Math.min(2 * waitMs, RETRY_MAX_MS)) }, waitMs).unref()
      return
    }
    this.#ready = Promise.resolve()
    if (this.#down) this.#log.info({ followed: this.#seen.size }, 'postgres event listener back')
    this.#down = false
    // What was written while nobody listened: each followed task is read once.
    for (const [taskId, followed] of this.#seen) this.#read(taskId, followed, 0)
  }

  /** Opens the listening connection. */
  async #open (): Promise<void> {
    const client = await this.#opts.connect()
    try {
      client.on('notification', this.#onNotice)
      client.on('error', () => { this.#lost(client) })
      client.on('end', () => { this.#lost(client) })
      await client.query(`LISTEN ${EVENTS_CHANNEL}`)
      if (this.#closed) throw new Error('closed')
    } catch (err) {
      await client.end().catch(() => {})
      throw err
    }
    this.#client = client
  }

  /** The listening connection broke: subscriptions fail until it is open again. */
  #lost (client: pg.Client): void {
    // (close() lets go of its client before it ends it.)
    if (this.#client !== client) return
    this.#client = null
    this.#ready = Promise.reject(new StorageUnavailable('postgres event listener down'))
    this.#ready.catch(() => {})
    this.#down = true
    this.#log.warn('postgres event listener lost; reconnecting')
    this.#attempt = this.#listen(RETRY_FIRST_MS)
  }

  /** A notice, `<origin> <kind> <version> <taskId>`: an instance's own are dropped (their events were delivered here). */
  readonly #onNotice = (message: pg.Notification): void => {
    const [origin, kind, version, taskId] = String(message.payload).split(' ', 4)
    if (taskId === undefined || origin === this.#origin) return
    const followed = this.#seen.get(taskId)
    if (kind === 'a') this.#abort(taskId, version === '0' ? undefined : { traceparent: version })
    else if (kind === 'e' && followed !== undefined) this.#read(taskId, followed, Number(version))
  }

  #abort (taskId: string, trace?: TraceCarrier): void {
    for (const handler of this.#abortHandlers) handler(taskId, trace)
  }

  /**
   * Reads what the listeners of a task have not seen, unless a read is under way (which then reads once more). Should
   * they all unsubscribe meanwhile, what is read goes to nobody.
   */
  #read (taskId: string, followed: Followed, notified: number): void {
    // Listeners that have had no event yet read their task after subscribing: every write they lack is notified from
    // then on, the first of them with the first notice at the latest.
    followed.from ??= notified
    const reading = this.#reads.get(taskId)
    if (reading !== undefined) {
      reading.again = true
      return
    }
    const state: Reading = { again: false }
    this.#reads.set(taskId, state)
    this.#readAll(taskId, followed, state).catch((err: unknown) => {
      // The streams' own look at their task (TaskEventStream.check) catches up with what this read missed.
      this.#log.warn({ err, taskId }, 'task events not read')
    }).finally(() => this.#reads.delete(taskId))
  }

  async #readAll (taskId: string, followed: Followed, state: Reading): Promise<void> {
    do {
      state.again = false
      const after = followed.version > 0 ? followed.version : Math.max(0, (followed.from as number) - 1)
      const since = await this.#opts.since(taskId, after)
      if (since !== null) this.#hand(taskId, followed, after, since)
    } while (state.again)
  }

  /**
   * Hands the listeners the events read after `after` that they lack. An event's task is the task as read, with the
   * status it had at that event (an artifact event's: the last status event's before it). When some of those events
   * are no longer kept, the listeners get the task as it stands instead, as a status event (a blocking wait settles on
   * it; a stream shows the state).
   */
  #hand (taskId: string, followed: Followed, after: number, { record, lastEvent, kept }: TaskSince): void {
    let status = followed.status
    const events: TaskEvent[] = lastEvent > after && (kept.length === 0 || kept[0].prev > after)
      ? [{ type: 'status', version: record.version, task: record.task, final: isSettled(record.task.status.state) }]
      : kept.map(event => {
        if (event.type === 'status') status = event.status
        return fromKept(event, status === undefined ? record.task : { ...record.task, status })
      })
    for (const event of events) {
      // Those this process wrote meanwhile have been delivered already.
      if (event.version > followed.version) this.#hear(taskId, followed, event)
    }
    // Writes without an event (a message added to the history) leave nothing to hand on.
    followed.version = Math.max(followed.version, record.version)
  }

  #hear (taskId: string, followed: Followed, event: TaskEvent): void {
    followed.version = event.version
    followed.status = event.task.status
    try {
      this.#local.publish(taskId, event)
    } catch (err) {
      this.#log.error({ err, taskId }, 'task event listener failed')
    }
  }
}
