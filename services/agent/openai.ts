import type { LlmConfig } from '../../schemas/config.js'
import type { Part } from '../../schemas/task.js'
import { RpcCode } from '../kernel/errors.js'
import { activeSpanAttributes } from '../kernel/tracing.js'
import type { AgentExecutor, ExecutionContext, ExecutorEvent } from './executor.js'
import { streamChat } from './openai-client.js'
import { ASK_USER, contextMessages, taskMessages, toolContent, type ChatMessage, type ToolResultRecord } from './openai-messages.js'
import { ModelError, type ModelReply, type ModelUsage } from './openai-stream.js'
import { ASK_USER_PROMPT, offeredTools, questionOf, runToolCall } from './openai-tools.js'

export interface OpenAIExecutorOptions {
  /** `agent.llm`, validated. */
  llm: LlmConfig
}

/** Earlier tasks of the context read for its history; the token budget usually keeps fewer. */
const CONTEXT_TASKS = 50
/** The most characters of one tool result sent to the model; the task history keeps the result whole. */
export const MAX_TOOL_RESULT_CHARS = 16_000

/**
 * The executor of `agent.executor: openai` (docs/llm-executor.md): each message goes to an OpenAI-compatible
 * chat-completions endpoint with the context's earlier exchanges and the task's own conversation. The streamed
 * tokens become the turn's `Agent-result` artifact as they arrive. The model may call the caller's tools (scope
 * checks and root jail as the JSON-RPC methods), each call and result recorded in the history as agent data
 * messages, and may ask the user a question (ask_user), which puts the task in `input_required`. A model failure
 * fails the task with a safe status message; the endpoint's answer and the key are never shown or logged.
 */
export function createOpenAIExecutor (opts: OpenAIExecutorOptions): AgentExecutor {
  const { llm } = opts
  const host = new URL(llm.base_url).host
  return async function * openaiAgent (ctx: ExecutionContext): AsyncGenerator<ExecutorEvent> {
    try {
      yield * converse(ctx, llm)
    } catch (err) {
      // A cancel ends the run quietly; anything but a model failure is a fault, which the task service logs.
      if (ctx.signal.aborted || !(err instanceof ModelError)) throw err
      ctx.log.warn({ reason: err.reason, status: err.status, host, model: llm.model }, 'language model request failed')
      yield { kind: 'status', state: 'failed', message: err.safeMessage }
    }
  }
}

async function * converse (ctx: ExecutionContext, llm: LlmConfig): AsyncGenerator<ExecutorEvent> {
  const tools = llm.max_tool_rounds > 0 ? offeredTools(ctx.tools.available()) : []
  const system = tools.length > 0 ? `${llm.system_prompt}\n\n${ASK_USER_PROMPT}`.trim() : llm.system_prompt
  const earlier = llm.history_tokens > 0 ? await ctx.contextHistory?.(CONTEXT_TASKS) : undefined
  const messages: ChatMessage[] = [
    ...(system === '' ? [] : [{ role: 'system', content: system } as const]),
    ...contextMessages(earlier ?? [], llm.history_tokens),
    ...taskMessages(ctx.task, ctx.message)
  ]
  // The turn's span (`invoke_agent`, gen-AI agent conventions): the model, and the tokens of its calls so far.
  activeSpanAttributes(() => ({ 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': llm.model }))
  const usage: ModelUsage = { inputTokens: 0, outputTokens: 0 }
  // The last round shows the tools but lets the model call none (it has seen their results already).
  const ask = (round: number, separate: boolean) => relay(streamChat(llm, {
    messages, tools, toolChoice: round < llm.max_tool_rounds ? 'auto' : 'none'
  }, ctx.signal, ctx.log), separate)
  let round = 0
  let reply = yield * ask(round, false)
  countUsage(usage, reply)
  let wrote = reply.content !== ''
  while (reply.toolCalls.length > 0) {
    if (round >= llm.max_tool_rounds) {
      throw new ModelError('tool calls past max_tool_rounds',
        `The language model asked for tools past the limit of ${llm.max_tool_rounds} round(s).`)
    }
    const question = yield * toolRound(ctx, reply, messages)
    if (question !== undefined) {
      yield { kind: 'status', state: 'input_required', message: question }
      return
    }
    reply = yield * ask(++round, wrote)
    countUsage(usage, reply)
    wrote ||= reply.content !== ''
  }
}

/** Adds a reply's tokens to the turn's, and sets the sums on the turn's span when it records. */
function countUsage (usage: ModelUsage, reply: ModelReply): void {
  if (reply.usage === undefined) return
  usage.inputTokens += reply.usage.inputTokens
  usage.outputTokens += reply.usage.outputTokens
  activeSpanAttributes(() => ({ 'gen_ai.usage.input_tokens': usage.inputTokens, 'gen_ai.usage.output_tokens': usage.outputTokens }))
}

/** Passes the text on, a blank line before a round's first text when an earlier round of this turn wrote some. */
async function * relay (stream: AsyncGenerator<string, ModelReply>, separate: boolean): AsyncGenerator<string, ModelReply> {
  try {
    let first = separate
    let next = await stream.next()
    while (next.done !== true) {
      yield first ? `\n\n${next.value}` : next.value
      first = false
      next = await stream.next()
    }
    return next.value
  } finally {
    // Left early (cancel): end the request too.
    await stream.return(undefined as never)
  }
}

/**
 * Records the round's calls, runs them and records their results, in the history and for the next request.
 * Returns the question of the round's first valid ask_user call; another ask_user call gets an error result.
 */
async function * toolRound (ctx: ExecutionContext, reply: ModelReply,
  messages: ChatMessage[]): AsyncGenerator<ExecutorEvent, string | undefined> {
  const calls = reply.toolCalls
  yield { kind: 'message', content: calls.map(call => ({ kind: 'data', data: { tool_call: { ...call } } }) satisfies Part) }
  messages.push({
    role: 'assistant',
    content: reply.content === '' ? null : reply.content,
    tool_calls: calls.map(call => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }))
  })
  let question: string | undefined
  for (const call of calls) {
    let record: ToolResultRecord
    if (call.name === ASK_USER) {
      const asked = question === undefined ? questionOf(call) : undefined
      if (asked !== undefined) {
        question = asked
        continue
      }
      const message = question === undefined ? 'ask_user needs a question' : 'ask_user takes one question at a time'
      record = { id: call.id, name: call.name, error: { code: RpcCode.invalidParams, message } }
    } else {
      record = await runToolCall(ctx, call)
    }
    yield { kind: 'message', content: [{ kind: 'data', data: { tool_result: record } }] }
    const content = toolContent(record)
    messages.push({
      role: 'tool',
      tool_call_id: call.id,
      content: content.length > MAX_TOOL_RESULT_CHARS ? `${content.slice(0, MAX_TOOL_RESULT_CHARS)} …(truncated)` : content
    })
  }
  return question
}
