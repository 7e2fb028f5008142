import type { Logger } from '../kernel/logger.js'
import type { Task, TaskState } from '../../schemas/task.js'
import type { TaskLeases } from './leases.js'
import { isInterrupted, isTerminal } from './states.js'
import {
  INTERRUPTED_EXPIRED_MESSAGE, OWNER_LOST_MESSAGE, SHUTDOWN_MESSAGE, agentMessage, withStatus, type Mutation
} from './mutations.js'
import type { TaskRuns } from './run-loop.js'
import type { StoredTask, TaskStore } from './store.js'

// What the task service does for tasks nobody is working on: it fails the tasks of an instance that died (the
// reaper), cancels the conversations left waiting too long, and, at shutdown, waits for the runs and fails what is
// left of them.

export interface HousekeepingOptions {
  store: TaskStore
  log: Logger
  leases: TaskLeases | undefined
  runs: TaskRuns
  /** The task service's write: compare-and-set, then published. */
  update: (id: string, mutate: Mutation) => Promise<StoredTask>
  /** `tasks.interrupted_ttl` in ms. */
  interruptedTtlMs: number
  now: () => number
}

export class TaskHousekeeping {
  readonly #opts: HousekeepingOptions
  readonly #beforeReap: Array<() => Promise<unknown>> = []
  #draining: Promise<void> | undefined

  constructor (opts: HousekeepingOptions) {
    this.#opts = opts
  }

  /** A step run before each reaping round, in the order added (see `TaskService.beforeReap`). */
  beforeReap (step: () => Promise<unknown>): void {
    this.#beforeReap.push(step)
  }

  /**
   * Fails the tasks whose running instance died: their lease expired unrenewed. Each expired lease is claimed by
   * one instance; a task that reached a terminal state meanwhile is left alone. Returns the ids this call failed.
   */
  async reapOrphans (): Promise<string[]> {
    const { leases, log } = this.#opts
    if (leases === undefined) return []
    for (const step of this.#beforeReap) {
      await step().catch((err: unknown) => log.warn({ err }, 'step before reaping failed'))
    }
    const failed: string[] = []
    for (const id of await leases.claimExpired()) {
      try {
        const moved = await this.#settleClaimed(id, 'failed', OWNER_LOST_MESSAGE, task => !isTerminal(task.status.state))
        // Expired or never stored: nothing to fail, and the lease must not be claimed for ever.
        if (moved === null) log.warn({ taskId: id }, 'lease of a vanished task dropped')
        else if (moved) failed.push(id)
        await leases.release(id)
      } catch (err) {
        // The claim lapses like any lease: the task is claimed again, by this instance or another, once it does.
        log.warn({ err, taskId: id }, 'could not fail an orphaned task')
      }
    }
    if (failed.length > 0) log.warn({ taskIds: failed }, 'tasks of a stopped instance failed')
    return failed
  }

  /**
   * Cancels the interrupted tasks (input_required, auth_required) that have waited `tasks.interrupted_ttl` since
   * their last update: an abandoned conversation neither holds its owner's live-task allowance nor the store for
   * ever. Returns the ids this call canceled.
   */
  async expireInterrupted (): Promise<string[]> {
    const { store, log } = this.#opts
    const cutoff = this.#opts.now() - this.#opts.interruptedTtlMs
    const canceled: string[] = []
    for (const id of await store.claimInterrupted(cutoff)) {
      try {
        const moved = await this.#settleClaimed(id, 'canceled', INTERRUPTED_EXPIRED_MESSAGE,
          (task, record) => isInterrupted(task.status.state) && record.updatedAt <= cutoff)
        if (moved === true) canceled.push(id)
      } catch (err) {
        // Redis hands the id out again a minute later; the memory store cannot fail here.
        log.warn({ err, taskId: id }, 'could not cancel an expired interrupted task')
      }
    }
    if (canceled.length > 0) log.info({ taskIds: canceled }, 'interrupted tasks expired')
    return canceled
  }

  /**
   * Waits for running executors up to `timeoutMs`, then fails what is left. Every caller shares one drain.
   */
  drain (timeoutMs: number): Promise<void> {
    this.#draining ??= this.#drain(timeoutMs)
    return this.#draining
  }

  async #drain (timeoutMs: number): Promise<void> {
    const { runs, log } = this.#opts
    const pending = [...runs.running.values()].map(r => r.done)
    if (pending.length === 0) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(pending),
      new Promise<void>(resolve => { timer = setTimeout(resolve, timeoutMs) })
    ])
    clearTimeout(timer)
    for (const id of [...runs.running.keys()]) {
      try {
        await this.#opts.update(id, task => isTerminal(task.status.state)
          ? null
          : withStatus(task, 'failed', this.#opts.now(), agentMessage(task, SHUTDOWN_MESSAGE)))
      } catch (err) {
        log.error({ err, taskId: id }, 'could not fail a task at shutdown')
      }
      runs.stop(id)
    }
  }

  /**
   * Moves a task that a sweep claimed (an orphan, an expired interrupted task) to `state` with an agent status
   * message saying why, if `due` still holds when it is written. True when this call moved it, false when the task
   * had moved on, null when it is gone.
   */
  async #settleClaimed (id: string, state: TaskState, text: string, due: (task: Task, record: StoredTask) => boolean): Promise<boolean | null> {
    const before = await this.#opts.store.get(id)
    if (before === null) return null
    const after = await this.#opts.update(id, (task, record) => due(task, record) ? withStatus(task, state, this.#opts.now(), agentMessage(task, text)) : null)
    return after.version !== before.version && after.task.status.state === state
  }
}
