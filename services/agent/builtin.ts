import { setTimeout as delay } from 'node:timers/promises'
import { RESULT_ARTIFACT_NAME, type Part } from '../../schemas/task.js'
import { JsonRpcError, RpcCode } from '../kernel/errors.js'
import type { AgentExecutor, ExecutionContext, ExecutorEvent } from './executor.js'

export interface BuiltinAgentOptions {
  /** `agent.delay_ms`: hold each task in `in_progress` this long before answering (demos, tests). */
  delayMs?: number
  /** Run `status`, `capabilities` and `list_directory` commands; false makes a plain echo. Default true. */
  tools?: boolean
}

interface ToolCommand {
  name: string
  args: Record<string, unknown>
}

const LIST_DIRECTORY = /^list_directory(?:\s+(.+))?$/s

/**
 * The built-in agent (CONTRACT.md §6). A message whose text is `status`, `capabilities` or `list_directory [path]`
 * runs that tool, as the task's principal, with the same scope check as the method; the result becomes the
 * `Agent-result` artifact. Any other message is echoed back as that artifact, all its parts included.
 */
export function createBuiltinAgent (opts: BuiltinAgentOptions = {}): AgentExecutor {
  const delayMs = opts.delayMs ?? 0
  const tools = opts.tools ?? true
  // An echo answers at once; a delay or a tool makes it wait.
  return function builtinAgent (ctx: ExecutionContext): ExecutorEvent | Promise<ExecutorEvent | undefined> {
    if (delayMs > 0) return delayed(ctx, delayMs, tools)
    return answer(ctx, tools)
  }
}

async function delayed (ctx: ExecutionContext, delayMs: number, tools: boolean): Promise<ExecutorEvent | undefined> {
  try {
    // Rejects at once on abort and clears its timer: a canceled task leaves nothing behind.
    await delay(delayMs, undefined, { signal: ctx.signal })
  } catch {
    return
  }
  return answer(ctx, tools)
}

function answer (ctx: ExecutionContext, tools: boolean): ExecutorEvent | Promise<ExecutorEvent> {
  const command = tools ? parseCommand(textOf(ctx.message.parts)) : undefined
  if (command === undefined) return { kind: 'artifact', name: RESULT_ARTIFACT_NAME, parts: [...ctx.message.parts] }
  return runTool(ctx, command)
}

/** The message's text parts joined by newlines, trimmed. */
function textOf (parts: readonly Part[]): string {
  let text: string | undefined
  for (const part of parts) {
    if (part.kind === 'text') text = text === undefined ? part.text : text + '\n' + part.text
  }
  return text === undefined ? '' : text.trim()
}

function parseCommand (text: string): ToolCommand | undefined {
  if (text === 'status' || text === 'capabilities') return { name: text, args: {} }
  const m = LIST_DIRECTORY.exec(text)
  return m === null ? undefined : { name: 'list_directory', args: { path: m[1] ?? '.' } }
}

async function runTool (ctx: ExecutionContext, command: ToolCommand): Promise<ExecutorEvent> {
  let result: unknown
  try {
    result = (await ctx.tools.call(command.name, command.args)) ?? null
  } catch (err) {
    // Our own JSON-RPC errors carry safe, client-facing text in `data`; anything else goes to the task service,
    // which logs it and fails the task with a generic message.
    if (!(err instanceof JsonRpcError)) throw err
    if (err.code === RpcCode.insufficientScope) {
      return {
        kind: 'status',
        state: 'rejected',
        message: `The ${command.name} tool needs a scope the caller does not hold (${detail(err)}).`
      }
    }
    return { kind: 'status', state: 'failed', message: `The ${command.name} tool failed: ${detail(err)}` }
  }
  // A data part holds an object; a tool result that is not one is wrapped.
  const data = typeof result === 'object' && result !== null && !Array.isArray(result)
    ? result as Record<string, unknown>
    : { result }
  const parts: Part[] = [{ kind: 'data', data }, { kind: 'text', text: JSON.stringify(result, null, 2) }]
  return { kind: 'artifact', name: RESULT_ARTIFACT_NAME, parts }
}

function detail (err: JsonRpcError): string {
  return typeof err.data === 'string' && err.data !== '' ? err.data : err.message
}
