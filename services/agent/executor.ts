import type { Logger } from '../kernel/logger.js'
import type { Message, Part, Task } from '../../schemas/task.js'
import type { Principal } from '../auth/principal.js'

/** The tools of CONTRACT.md §5, callable by an agent with the same scope checks as the JSON-RPC methods. */
export interface AgentTools {
  /** Tool names the caller may use (its scopes allow them). */
  available (): string[]
  /**
   * Runs a tool as the task's principal. Throws a JsonRpcError: -32011 (insufficient scope) when the principal
   * lacks the method's scopes, -32602 for bad arguments.
   */
  call (name: string, args: Record<string, unknown>): Promise<unknown>
}

/** What an executor receives for each message handed to it (CONTRACT.md §6). */
export interface ExecutionContext {
  /** The task as it stands when the message is handed over (status `in_progress`). */
  readonly task: Task
  /** The message to answer; also the last entry of `task.history`. */
  readonly message: Message
  /** Aborted by `tasks/cancel`, and when the server stops before the task settles. */
  readonly signal: AbortSignal
  readonly principal: Principal
  readonly tools: AgentTools
  readonly log: Logger
  /**
   * The earlier tasks of this task's `contextId` and owner, oldest first: at most `limit` (default 20, at most 100)
   * of the newest. The task service provides it; a context built by other means may leave it out.
   */
  readonly contextHistory?: (limit?: number) => Promise<Task[]>
  /**
   * The extensions the request that sent this message activated: the URIs, among those the agent card declares, that
   * its `A2A-Extensions` header listed (docs/protocol.md, "Extensions"). Empty when none. The task service provides
   * it; a context built by other means may leave it out.
   */
  readonly extensions?: readonly string[]
}

/** Agent message content: text, or parts. */
export type MessageContent = string | Part[]

/**
 * What an executor yields (or returns):
 * - a string: text appended to this turn's `Agent-result` artifact (the first string creates it);
 * - `artifact`: a new artifact, or with `append: true` and an `artifactId`, parts appended to that artifact;
 * - `status`: a state change (`input_required`, `auth_required`, `completed`, `failed`, `rejected`) or, with
 *   `in_progress`, a progress message;
 * - `message`: an agent message appended to the history.
 */
export type ExecutorEvent =
  | string
  | {
    kind: 'artifact'
    parts: Part[]
    artifactId?: string
    name?: string
    description?: string
    append?: boolean
    lastChunk?: boolean
    metadata?: Record<string, unknown>
  }
  | { kind: 'status', state: 'in_progress' | 'input_required' | 'auth_required' | 'completed' | 'failed' | 'rejected', message?: MessageContent }
  | { kind: 'message', content: MessageContent, metadata?: Record<string, unknown> }

export type ExecutorResult = void | ExecutorEvent | ExecutorEvent[]

/**
 * The embedding interface: an async generator yielding ExecutorEvents, or a function returning them (at once, or
 * through a promise). When it settles without having set a state, the task completes. A throw makes the task
 * `failed`; the error text is logged, never sent. An executor that answers at once lets the task service finish the
 * turn without a tick.
 */
export type AgentExecutor = (ctx: ExecutionContext) => AsyncIterable<ExecutorEvent> | Promise<ExecutorResult> | ExecutorResult
