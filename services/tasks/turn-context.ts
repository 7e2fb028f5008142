import type { Message, Task } from '../../schemas/task.js'
import type { Principal } from '../auth/principal.js'
import type { AgentTools, ExecutionContext } from '../agent/executor.js'
import { LazyChildLogger } from '../kernel/lazy-logger.js'
import type { Logger } from '../kernel/logger.js'

/**
 * A run's cancellation. The AbortController (an EventTarget, about 1.7 µs to make) is made only when the executor
 * reads its signal; most executors never do.
 */
export class RunAbort {
  aborted = false
  #controller: AbortController | undefined

  get signal (): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.aborted) this.#controller.abort()
    }
    return this.#controller.signal
  }

  abort (): void {
    this.aborted = true
    this.#controller?.abort()
  }
}

/**
 * What an executor gets for one turn (ExecutionContext). A class, not an object literal with getters: V8 builds such
 * a literal the slow way, property by property (about 0.65 µs against 15 ns for the class, measured alone). Every
 * field is an own property, so `{ ...ctx, message }` passes the context on, except `signal`, which is made on first
 * read and lives on the prototype: pass it along by name (`{ ...ctx, signal: ctx.signal }`). The logger is made on
 * first write.
 */
export class TurnContext implements ExecutionContext {
  readonly task: Task
  readonly message: Message
  readonly principal: Principal
  readonly tools: AgentTools
  readonly log: Logger
  readonly extensions: readonly string[]
  readonly contextHistory: (limit?: number) => Promise<Task[]>
  readonly #abort: RunAbort

  constructor (opts: {
    task: Task
    message: Message
    principal: Principal
    tools: AgentTools
    log: Logger
    abort: RunAbort
    extensions: readonly string[]
    contextHistory: (limit?: number) => Promise<Task[]>
  }) {
    this.task = opts.task
    this.message = opts.message
    this.principal = opts.principal
    this.tools = opts.tools
    this.log = new LazyChildLogger(opts.log, { taskId: opts.task.id })
    this.extensions = opts.extensions
    this.contextHistory = opts.contextHistory
    this.#abort = opts.abort
  }

  get signal (): AbortSignal {
    return this.#abort.signal
  }
}
