import type { Artifact, Task } from '../../schemas/task.js'
import type { TraceCarrier } from '../kernel/tracing.js'

/** A change to a task, as published to its subscribers. `task` is the whole snapshot after the change. */
export type TaskEvent =
  | { readonly type: 'status', readonly version: number, readonly task: Task, readonly final: boolean }
  | {
    readonly type: 'artifact'
    readonly version: number
    readonly task: Task
    readonly artifact: Artifact
    readonly append: boolean
    readonly lastChunk: boolean
  }

export type TaskEventListener = (event: TaskEvent) => void

/**
 * Removes the listener when called. `ready` settles once events published from now on will reach it (at once in
 * memory; after the SUBSCRIBE is acknowledged in Redis): read a snapshot only after it.
 */
export interface Subscription {
  (): void
  readonly ready: Promise<void>
}

const READY: Promise<void> = Promise.resolve()

/** The options of a `local` subscription (see `TaskEventBus.subscribe`), made once. */
export const LOCAL: { readonly local: true } = { local: true }

/**
 * Per-task publish/subscribe. The memory bus serves one process; with `tasks.backend: kvcache` a Redis bus carries
 * the same events between instances. Publishing to a task nobody follows costs nothing.
 */
export interface TaskEventBus {
  publish (taskId: string, event: TaskEvent): void
  /**
   * `publish` to this process's listeners only: for an event the store announced to the other instances with the
   * write itself (`TaskStore.announces`).
   */
  deliver (taskId: string, event: TaskEvent): void
  /**
   * `local`: for a task this process runs, whose changes are written here, a listener that hears this process's
   * events and the cancellations of the task made elsewhere (see `requestAbort`), and nothing else other instances
   * write. It costs no subscription in Redis, and is ready at once.
   */
  subscribe (taskId: string, listener: TaskEventListener, opts?: { local?: boolean }): Subscription
  /**
   * The task's run in this process ended with `local` listeners still waiting for it to settle (another instance
   * settles it, or will: a turn it took, the reaper): from now on they hear every instance's events. Resolves once
   * they do; undefined when there were none, or nothing to change (memory: a listener hears every write).
   */
  follow (taskId: string): Promise<void> | undefined
  /** Listeners on one task, or on all tasks: leak checks and metrics. */
  listenerCount (taskId?: string): number
  /**
   * Asks whichever instance runs the task to abort its executor (CONTRACT.md §10, cancellation). In memory that is
   * this process; in Redis every instance hears it and the one running the task acts. `event`, the cancel's own
   * change, reaches the `local` listeners of the task on the other instances. The trace context active here goes
   * with it (Redis, PostgreSQL), so that the instance that stops the run can show it in the canceller's trace.
   */
  requestAbort (taskId: string, event?: TaskEvent): void
  /** Registers the handler of abort requests (the task service's); `trace`: the requester's trace context, if sent. */
  onAbortRequest (handler: AbortHandler): void
  close (): Promise<void>
}

/** What hears an abort request: the task, and the trace context of the cancel that asked for it. */
export type AbortHandler = (taskId: string, trace?: TraceCarrier) => void

export class MemoryTaskEventBus implements TaskEventBus {
  /** Listeners per task, in subscription order. Nearly always one: the blocking wait or the stream of the task. */
  readonly #listeners = new Map<string, TaskEventListener[]>()
  readonly #abortHandlers: AbortHandler[] = []
  #count = 0

  requestAbort (taskId: string): void {
    for (const handler of this.#abortHandlers) handler(taskId)
  }

  onAbortRequest (handler: AbortHandler): void {
    this.#abortHandlers.push(handler)
  }

  deliver (taskId: string, event: TaskEvent): void {
    this.publish(taskId, event)
  }

  follow (): undefined {
    return undefined
  }

  publish (taskId: string, event: TaskEvent): void {
    const list = this.#listeners.get(taskId)
    if (list === undefined) return
    if (list.length === 1) {
      list[0](event)
      return
    }
    // A listener may unsubscribe (or subscribe another) while we deliver: iterate over a copy. One that throws does
    // not keep the event from the others; the first error is rethrown once all have it.
    let failure: unknown
    for (const listener of list.slice()) {
      try {
        listener(event)
      } catch (err) {
        failure ??= err
      }
    }
    if (failure !== undefined) throw failure
  }

  subscribe (taskId: string, listener: TaskEventListener): Subscription {
    let list = this.#listeners.get(taskId)
    if (list === undefined) this.#listeners.set(taskId, (list = []))
    else if (list.includes(listener)) return subscription(() => {})
    const listeners = list
    listeners.push(listener)
    this.#count++
    let active = true
    return subscription(() => {
      if (!active) return
      active = false
      const at = listeners.indexOf(listener)
      // After close() the listener is gone already: count it out only once.
      if (at < 0) return
      listeners.splice(at, 1)
      this.#count--
      if (listeners.length === 0 && this.#listeners.get(taskId) === listeners) this.#listeners.delete(taskId)
    })
  }

  listenerCount (taskId?: string): number {
    if (taskId === undefined) return this.#count
    return this.#listeners.get(taskId)?.length ?? 0
  }

  async close (): Promise<void> {
    for (const list of this.#listeners.values()) list.length = 0
    this.#listeners.clear()
    this.#count = 0
  }
}

/** An unsubscribe function that is ready at once (memory, and the `local` listeners of the Redis bus). */
export function subscription (unsubscribe: () => void): Subscription {
  (unsubscribe as { ready?: Promise<void> }).ready = READY
  return unsubscribe as Subscription
}
