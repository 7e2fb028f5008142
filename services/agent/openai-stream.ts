// The server-sent events of a streamed OpenAI-compatible chat completion (`stream: true`): `data: <chunk JSON>`
// events, each chunk's `choices[0].delta` holding content and tool-call fragments, ended by `data: [DONE]`. Asked with
// `stream_options.include_usage`, a last chunk with no choices carries the token `usage`.
// @see https://platform.openai.com/docs/api-reference/chat-streaming

/** A tool call the model asked for; `arguments` is the JSON text it streamed, not yet parsed. */
export interface ModelToolCall {
  id: string
  name: string
  arguments: string
}

/** What one streamed chat completion amounted to. */
export interface ModelReply {
  content: string
  toolCalls: ModelToolCall[]
  /** `stop`, `length`, `tool_calls`, ...; null when the stream ended with `[DONE]` but gave none. */
  finishReason: string | null
  /** The completion's `id`, when the chunks carry one. */
  id?: string
  /** The model that answered, as the chunks name it. */
  model?: string
  /** The tokens counted, when the stream reported them. */
  usage?: ModelUsage
}

/** A completion's token counts (`usage.prompt_tokens` and `usage.completion_tokens`). */
export interface ModelUsage {
  inputTokens: number
  outputTokens: number
}

/**
 * A failed model request. `safeMessage` is what the task's status may say: it never holds the endpoint's answer
 * body, the key, or a header. `reason` and `status` are for the log.
 */
export class ModelError extends Error {
  readonly reason: string
  readonly safeMessage: string
  readonly status: number | undefined

  constructor (reason: string, safeMessage: string, status?: number) {
    super(`language model request failed: ${reason}`)
    this.name = 'ModelError'
    this.reason = reason
    this.safeMessage = safeMessage
    this.status = status
  }
}

export const UNREADABLE_MESSAGE = 'The language model sent an answer that could not be read.'
export const REPORTED_ERROR_MESSAGE = 'The language model reported an error.'

/** Tool calls one reply may hold: an index past this is taken as a broken stream, not a reason to allocate. */
const MAX_TOOL_CALLS = 64

/** Splits server-sent events into the data of each event (the WHATWG rules: any line ending, `data:` lines joined). */
export class SseDataParser {
  #buffer = ''
  #data: string[] = []

  /** Takes more text; returns the data of every event it completes. */
  push (text: string): string[] {
    this.#buffer += text
    const events: string[] = []
    for (let i = this.#buffer.search(/[\r\n]/); i >= 0; i = this.#buffer.search(/[\r\n]/)) {
      // A CR at the very end may be the first half of a CRLF split across two reads.
      if (this.#buffer[i] === '\r' && i === this.#buffer.length - 1) break
      const line = this.#buffer.slice(0, i)
      this.#buffer = this.#buffer.slice(this.#buffer.startsWith('\r\n', i) ? i + 2 : i + 1)
      this.#line(line, events)
    }
    return events
  }

  /** The stream has ended: what is left counts as a last, complete event. */
  end (): string[] {
    const events: string[] = []
    const rest = this.#buffer.replace(/\r$/, '')
    this.#buffer = ''
    if (rest !== '') this.#line(rest, events)
    this.#line('', events)
    return events
  }

  #line (line: string, events: string[]): void {
    if (line === '') {
      if (this.#data.length > 0) events.push(this.#data.join('\n'))
      this.#data = []
      return
    }
    const colon = line.indexOf(':')
    // Comments (`: keep-alive`) have an empty field name; `event:`, `id:` and `retry:` say nothing we use.
    if (colon < 0 ? line !== 'data' : line.slice(0, colon) !== 'data') return
    const value = colon < 0 ? '' : line.slice(colon + 1)
    this.#data.push(value.startsWith(' ') ? value.slice(1) : value)
  }
}

/**
 * Reads the body of a streamed chat completion. Yields the content text of each read (the tokens of one network
 * chunk joined, so a burst is one artifact write) and returns the whole reply, its tool calls assembled from their
 * fragments by index. `onRead` is called for each read (the idle timeout restarts on it). Throws a ModelError for
 * data that is not a JSON object, an error the model reports in the stream, or a stream that ends with neither
 * `[DONE]` nor a finish reason.
 */
export async function * readChatStream (body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  onRead: () => void): AsyncGenerator<string, ModelReply> {
  const decoder = new TextDecoder()
  const parser = new SseDataParser()
  const state: StreamState = { content: '', calls: [], finishReason: null, done: false, about: {} }
  for await (const chunk of body) {
    onRead()
    const text = take(state, parser.push(decoder.decode(chunk, { stream: true })))
    if (text !== '') yield text
    if (state.done) break
  }
  if (!state.done) {
    const text = take(state, parser.end())
    if (text !== '') yield text
  }
  if (!state.done && state.finishReason === null) throw new ModelError('stream ended early', UNREADABLE_MESSAGE)
  const toolCalls = state.calls.filter(call => call !== undefined)
    .map((call, i) => call.id === '' ? { ...call, id: `call_${i}` } : call)
  return { content: state.content, toolCalls, finishReason: state.finishReason, ...state.about }
}

interface StreamState {
  content: string
  calls: ModelToolCall[]
  finishReason: string | null
  done: boolean
  /** What the chunks say about the completion (for its span): only what they said is set. */
  about: Pick<ModelReply, 'id' | 'model' | 'usage'>
}

/** Applies the events of one read; returns their content text. */
function take (state: StreamState, events: string[]): string {
  let text = ''
  for (const data of events) {
    if (data === '[DONE]') {
      state.done = true
      break
    }
    let chunk: unknown
    try {
      chunk = JSON.parse(data)
    } catch {
      throw new ModelError('stream data is not JSON', UNREADABLE_MESSAGE)
    }
    if (!isObject(chunk)) throw new ModelError('stream data is not an object', UNREADABLE_MESSAGE)
    if (chunk.error !== undefined) throw new ModelError('error reported in the stream', REPORTED_ERROR_MESSAGE)
    if (typeof chunk.id === 'string' && chunk.id !== '') state.about.id = chunk.id
    if (typeof chunk.model === 'string' && chunk.model !== '') state.about.model = chunk.model
    // `usage` is null in the other chunks of a stream that asked for it.
    const usage = isObject(chunk.usage) ? chunk.usage : {}
    if (isCount(usage.prompt_tokens) && isCount(usage.completion_tokens)) {
      state.about.usage = { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens }
    }
    // A usage-only chunk has no choices; with `n` left at 1 there is one choice.
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    if (!isObject(choice)) continue
    if (typeof choice.finish_reason === 'string') state.finishReason = choice.finish_reason
    const delta = isObject(choice.delta) ? choice.delta : {}
    if (typeof delta.content === 'string') text += delta.content
    if (Array.isArray(delta.tool_calls)) for (const fragment of delta.tool_calls) addFragment(state.calls, fragment)
  }
  state.content += text
  return text
}

/** One fragment of a streamed tool call: the id and name come once, the arguments in pieces to concatenate. */
function addFragment (calls: ModelToolCall[], fragment: unknown): void {
  if (!isObject(fragment)) throw new ModelError('tool call fragment is not an object', UNREADABLE_MESSAGE)
  // Servers that send each call whole may leave out the index: then each fragment is a call of its own.
  const index = fragment.index ?? calls.length
  if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= MAX_TOOL_CALLS) {
    throw new ModelError('tool call index out of range', UNREADABLE_MESSAGE)
  }
  const call = (calls[index as number] ??= { id: '', name: '', arguments: '' })
  if (typeof fragment.id === 'string' && fragment.id !== '') call.id = fragment.id
  const fn = isObject(fragment.function) ? fragment.function : {}
  if (typeof fn.name === 'string' && fn.name !== '') call.name = fn.name
  if (typeof fn.arguments === 'string') call.arguments += fn.arguments
}

function isCount (value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
