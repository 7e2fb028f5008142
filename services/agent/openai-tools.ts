import { JsonRpcError, RpcCode } from '../kernel/errors.js'
import type { ExecutionContext } from './executor.js'
import { ASK_USER, type ToolResultRecord } from './openai-messages.js'
import type { ModelToolCall } from './openai-stream.js'

/** A function tool offered to the model (chat completions `tools`). */
export interface FunctionTool {
  type: 'function'
  function: { name: string, description: string, parameters: Record<string, unknown> }
}

const NO_PARAMETERS = { type: 'object', properties: {}, additionalProperties: false }

const fn = (name: string, description: string, parameters: Record<string, unknown> = NO_PARAMETERS): FunctionTool =>
  ({ type: 'function', function: { name, description, parameters } })

/** The tools of CONTRACT.md §5 as the model sees them, and ask_user (docs/llm-executor.md). */
const TOOL_SPECS: FunctionTool[] = [
  fn('status', "The agent server's status: its name, version and uptime."),
  fn('capabilities', "The agent's protocol capabilities, its methods (and which of them the caller may use) and its skills."),
  fn('list_directory', "Lists a directory of the agent's workspace: each entry's name, type, size and modification time.", {
    type: 'object',
    properties: { path: { type: 'string', description: 'A directory relative to the workspace root; "." is the root.' } },
    required: ['path'],
    additionalProperties: false
  }),
  fn(ASK_USER, 'Asks the user a question and ends your turn; the answer comes back as this call\'s result. ' +
    'Call it when you cannot go on without more information from the user.', {
    type: 'object',
    properties: { question: { type: 'string', description: 'The question, as the user will read it.' } },
    required: ['question'],
    additionalProperties: false
  })
]

/** What the system prompt gains when ask_user is offered: the convention of docs/llm-executor.md. */
export const ASK_USER_PROMPT = 'When you need more information from the user to go on, call the ask_user tool with ' +
  'your question instead of asking it in your answer.'

/** The tools to offer: those of `available` (the caller's scopes allow them), and ask_user. */
export function offeredTools (available: string[]): FunctionTool[] {
  return TOOL_SPECS.filter(spec => spec.function.name === ASK_USER || available.includes(spec.function.name))
}

/**
 * Runs one tool call as the task's principal, through the same registry entry, scope check and root jail as the
 * JSON-RPC method. A JSON-RPC error (insufficient scope, bad params, unknown tool) is the call's result, for the
 * model to read; anything else is thrown, and fails the task.
 */
export async function runToolCall (ctx: ExecutionContext, call: ModelToolCall): Promise<ToolResultRecord> {
  const record = { id: call.id, name: call.name }
  const args = parseArguments(call.arguments)
  if (args === undefined) return { ...record, error: { code: RpcCode.invalidParams, message: 'the arguments must be a JSON object' } }
  try {
    return { ...record, result: await ctx.tools.call(call.name, args) }
  } catch (err) {
    if (!(err instanceof JsonRpcError)) throw err
    // Our JSON-RPC errors carry client-facing text in `data` (e.g. "needs scope files:read").
    const message = typeof err.data === 'string' && err.data !== '' ? err.data : err.message
    return { ...record, error: { code: err.code, message } }
  }
}

/** The question of an ask_user call, or undefined when its arguments hold none. */
export function questionOf (call: ModelToolCall): string | undefined {
  const question = parseArguments(call.arguments)?.question
  return typeof question === 'string' && question.trim() !== '' ? question.trim() : undefined
}

/** A call's arguments as an object; an empty text counts as `{}` (models send it for tools without parameters). */
function parseArguments (text: string): Record<string, unknown> | undefined {
  let value: unknown
  try {
    value = text.trim() === '' ? {} : JSON.parse(text)
  } catch {
    return undefined
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
}
