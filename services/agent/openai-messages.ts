import { RESULT_ARTIFACT_NAME, type Message, type Part, type Task } from '../../schemas/task.js'

/** A chat-completions message, as sent to the model. */
export type ChatMessage =
  | { role: 'system' | 'user', content: string }
  | { role: 'assistant', content: string | null, tool_calls?: ChatToolCall[] }
  | { role: 'tool', tool_call_id: string, content: string }

export interface ChatToolCall {
  id: string
  type: 'function'
  function: { name: string, arguments: string }
}

/** The function tool through which the model asks the user a question (docs/llm-executor.md, ask_user). */
export const ASK_USER = 'ask_user'

/** What the history records of a tool call (an agent message's data part): `{ tool_call: ToolCallRecord }`. */
export interface ToolCallRecord {
  id: string
  name: string
  /** The JSON text the model sent, as it sent it. */
  arguments: string
}

/** What the history records of a tool's outcome: `{ tool_result: ToolResultRecord }`. */
export interface ToolResultRecord {
  id: string
  name: string
  result?: unknown
  error?: { code: number, message: string }
}

/** The tokens a text costs, estimated as its characters divided by 4, rounded up (docs/llm-executor.md). */
export function estimateTokens (text: string): number {
  return Math.ceil(text.length / 4)
}

/**
 * Earlier exchanges of the context, from its earlier tasks (oldest first): each task's user messages, then its
 * `Agent-result` text. The newest exchanges are kept while their estimated tokens fit `budget`; an exchange is kept
 * whole or not at all.
 */
export function contextMessages (tasks: Task[], budget: number): ChatMessage[] {
  const kept: ChatMessage[][] = []
  let used = 0
  for (let i = tasks.length - 1; i >= 0; i--) {
    const exchange = exchangeOf(tasks[i])
    const cost = exchange.reduce((sum, m) => sum + estimateTokens(m.content as string), 0)
    if (used + cost > budget) break
    used += cost
    kept.unshift(exchange)
  }
  return kept.flat()
}

function exchangeOf (task: Task): ChatMessage[] {
  const out: ChatMessage[] = task.history
    .filter(m => m.role === 'user')
    .map(m => ({ role: 'user', content: textOf(m.parts) }))
  const answer = resultText(task)
  if (answer !== '') out.push({ role: 'assistant', content: answer })
  return out
}

/**
 * The task's own conversation up to `message`: its user messages, the tool calls and results its history records,
 * the text of its earlier turns, then `message`. A user message that follows an unanswered `ask_user` call is that
 * call's answer, sent as its tool result.
 */
export function taskMessages (task: Task, message: Message): ChatMessage[] {
  const end = task.history.findLastIndex(m => m.messageId === message.messageId)
  const replay = new Replay()
  for (const entry of end >= 0 ? task.history.slice(0, end) : task.history) replay.add(entry)
  replay.earlierText(resultText(task))
  replay.add(message)
  return replay.messages
}

/** Rebuilds chat messages from history entries, pairing `ask_user` calls with the user's answers. */
class Replay {
  readonly messages: ChatMessage[] = []
  /** `ask_user` calls with no answer yet, and the assistant message that made them. */
  readonly #pending: string[] = []
  #asking: Extract<ChatMessage, { role: 'assistant' }> | undefined

  add (entry: Message): void {
    if (entry.role === 'user') {
      const text = textOf(entry.parts)
      if (this.#pending.length === 0) this.messages.push({ role: 'user', content: text })
      for (const id of this.#pending.splice(0)) this.messages.push({ role: 'tool', tool_call_id: id, content: text })
      return
    }
    const calls: ChatToolCall[] = []
    for (const part of entry.parts) {
      const data = part.kind === 'data' ? part.data : {}
      const call = data.tool_call as ToolCallRecord | undefined
      const result = data.tool_result as ToolResultRecord | undefined
      if (call !== undefined) calls.push({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })
      if (result !== undefined) {
        this.#pending.splice(this.#pending.indexOf(result.id) >>> 0, 1)
        this.messages.push({ role: 'tool', tool_call_id: result.id, content: toolContent(result) })
      }
    }
    if (calls.length === 0) return
    const assistant: ChatMessage = { role: 'assistant', content: null, tool_calls: calls }
    this.messages.push(assistant)
    const asks = calls.filter(c => c.function.name === ASK_USER).map(c => c.id)
    if (asks.length > 0) this.#asking = assistant
    this.#pending.push(...asks)
  }

  /**
   * The text of the task's earlier turns: the content of the message that asked the pending question (tool results
   * must follow their call), else an assistant message of its own.
   */
  earlierText (text: string): void {
    if (text === '') return
    if (this.#pending.length > 0) (this.#asking as Extract<ChatMessage, { role: 'assistant' }>).content = text
    else this.messages.push({ role: 'assistant', content: text })
  }
}

/** What a tool result says to the model: `{result}` or `{error: {code, message}}`, as JSON. */
export function toolContent (record: ToolResultRecord): string {
  return JSON.stringify(record.error === undefined ? { result: record.result } : { error: record.error })
}

/** The text of a task's `Agent-result` artifacts, in order. */
export function resultText (task: Task): string {
  return task.artifacts.filter(a => a.name === RESULT_ARTIFACT_NAME).map(a => textOf(a.parts)).join('\n\n')
}

/** Text parts as they are; data parts as JSON; file parts are not sent. */
function textOf (parts: Part[]): string {
  return parts.map(p => p.kind === 'text' ? p.text : p.kind === 'data' ? JSON.stringify(p.data) : '').join('')
}
