import { setTimeout as delay } from 'node:timers/promises'
import type { LlmConfig } from '../../schemas/config.js'
import type { Logger } from '../kernel/logger.js'
import { activeSpanAttributes, activeSpanRecords, spanEvent, tracedStream, type Attributes } from '../kernel/tracing.js'
import type { ChatMessage } from './openai-messages.js'
import { ModelError, readChatStream, type ModelReply } from './openai-stream.js'
import type { FunctionTool } from './openai-tools.js'

export interface ChatRequest {
  messages: ChatMessage[]
  /** Empty: no `tools` are sent. */
  tools: FunctionTool[]
  /** `none` keeps the model from calling the tools it is shown (the last round). */
  toolChoice: 'auto' | 'none'
}

/** A Retry-After longer than this is not waited for; the backoff applies instead (as for webhooks, CONTRACT.md §8.3). */
const MAX_RETRY_AFTER_MS = 60_000

/** `server.port` when `base_url` names none (its scheme is http or https, checked with the config). */
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 }

export const UNREACHABLE_MESSAGE = 'The language model endpoint could not be reached.'

/**
 * One streamed chat completion from `agent.llm`: yields the content text as it arrives and returns the whole reply.
 * A 429 or 5xx answer is retried `max_retries` times, waiting `retry_delay` doubled each time, or the endpoint's
 * Retry-After. Each attempt is aborted when `signal` is (tasks/cancel), or when the model stays silent `timeout`
 * seconds. Failures are ModelErrors with a safe message; an abort by `signal` is thrown as it comes.
 * The API key goes in the Authorization header only, and nothing here logs a header or puts one in a span.
 *
 * The call is a span `chat <model>` with the attributes of the OpenTelemetry gen-AI conventions. Its retries stay
 * inside it, each an event: a trace reader expects one `chat` span per call of the model, as the OpenAI SDKs'
 * instrumentations make it (their clients retry inside the call too), with an HTTP instrumentation's spans, one per
 * attempt, as its children.
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/
 */
export function streamChat (llm: LlmConfig, request: ChatRequest, signal: AbortSignal,
  log: Logger): AsyncGenerator<string, ModelReply> {
  return tracedStream(`chat ${llm.model}`, () => requestAttributes(llm), () => retried(llm, request, signal, log),
    (span, reply) => { span.setAttributes(replyAttributes(reply)) })
}

async function * retried (llm: LlmConfig, request: ChatRequest, signal: AbortSignal,
  log: Logger): AsyncGenerator<string, ModelReply> {
  try {
    let attempt = 0
    let outcome = yield * attemptChat(llm, request, signal, llm.max_retries > 0)
    while ('retryInMs' in outcome) {
      const { status } = outcome
      const waitMs = outcome.retryInMs ?? llm.retry_delay * 1000 * 2 ** attempt
      log.info({ status, attempt: ++attempt, waitMs }, 'language model busy, retrying')
      spanEvent('a2a.llm.retry', () => ({ 'http.response.status_code': status, 'a2a.llm.attempt': attempt, 'a2a.llm.wait_ms': waitMs }))
      await delay(waitMs, undefined, { signal })
      outcome = yield * attemptChat(llm, request, signal, attempt < llm.max_retries)
    }
    return outcome
  } catch (err) {
    // The conventions' `error.type`: the answer's status, else the kind of failure (a fixed text, never the answer).
    if (err instanceof ModelError) {
      activeSpanAttributes(() => ({ 'error.type': err.status === undefined ? err.reason : String(err.status) }))
    }
    throw err
  }
}

interface Retry {
  status: number
  /** From Retry-After; undefined to use the backoff. */
  retryInMs: number | undefined
}

async function * attemptChat (llm: LlmConfig, request: ChatRequest, signal: AbortSignal,
  mayRetry: boolean): AsyncGenerator<string, ModelReply | Retry> {
  // Canceled between two rounds (during a tool call): no request at all.
  signal.throwIfAborted()
  const controller = new AbortController()
  const abort = (): void => controller.abort()
  signal.addEventListener('abort', abort, { once: true })
  let timedOut = false
  // An idle timeout: restarted by every read, so a long answer that keeps streaming is not cut.
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, llm.timeout * 1000)
  let failure: unknown
  try {
    const res = await fetch(endpoint(llm.base_url), {
      method: 'POST',
      headers: headers(llm.api_key),
      body: JSON.stringify(body(llm, request)),
      signal: controller.signal
    })
    if (!res.ok) {
      // The body is not read (it may echo the request); aborting the controller below releases the connection.
      if (mayRetry && (res.status === 429 || res.status >= 500)) {
        return { status: res.status, retryInMs: retryAfterMs(res.headers.get('retry-after')) }
      }
      throw new ModelError(`HTTP ${res.status}`, `The language model endpoint answered HTTP ${res.status}.`, res.status)
    }
    timer.refresh()
    return yield * readChatStream(res.body ?? [], () => timer.refresh())
  } catch (err) {
    failure = err
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', abort)
    // Releases the connection when the stream was left before its end (a malformed answer, or `[DONE]` early).
    controller.abort()
  }
  if (signal.aborted) throw failure
  if (timedOut) throw new ModelError('timeout', `The language model did not answer within ${llm.timeout} s.`)
  if (failure instanceof ModelError) throw failure
  throw new ModelError('connection failed', UNREACHABLE_MESSAGE)
}

function endpoint (baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/chat/completions`
}

function headers (apiKey: string): Record<string, string> {
  const out: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' }
  if (apiKey !== '') out.authorization = `Bearer ${apiKey}`
  return out
}

/** The request side of the call's span: the endpoint's host and port, never its key or a header. */
function requestAttributes (llm: LlmConfig): Attributes {
  const url = new URL(llm.base_url)
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    // The name gen_ai.provider.name replaced, which trace backends still read.
    'gen_ai.system': 'openai',
    'gen_ai.request.model': llm.model,
    'gen_ai.request.temperature': llm.temperature,
    'gen_ai.request.max_tokens': llm.max_tokens,
    'server.address': url.hostname.replace(/^\[(.*)\]$/, '$1'),
    'server.port': url.port === '' ? DEFAULT_PORTS[url.protocol] : Number(url.port)
  }
}

/** What the stream told of the completion; what it did not tell stays unset (an undefined attribute is no attribute). */
function replyAttributes (reply: ModelReply): Attributes {
  return {
    'gen_ai.response.id': reply.id,
    'gen_ai.response.model': reply.model,
    'gen_ai.response.finish_reasons': reply.finishReason === null ? undefined : [reply.finishReason],
    'gen_ai.usage.input_tokens': reply.usage?.inputTokens,
    'gen_ai.usage.output_tokens': reply.usage?.outputTokens
  }
}

function body (llm: LlmConfig, request: ChatRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {
    model: llm.model,
    messages: request.messages,
    stream: true,
    temperature: llm.temperature,
    max_tokens: llm.max_tokens
  }
  if (request.tools.length > 0) {
    out.tools = request.tools
    out.tool_choice = request.toolChoice
  }
  // Only while a trace records: a server that does not know the field may reject it, and nothing else reads the count.
  if (activeSpanRecords()) out.stream_options = { include_usage: true }
  return out
}

/** Retry-After in seconds or as an HTTP date (RFC 9110 §10.2.3); undefined when absent, unreadable or too long. */
function retryAfterMs (value: string | null): number | undefined {
  if (value === null) return undefined
  const ms = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - Date.now()
  if (Number.isNaN(ms) || ms > MAX_RETRY_AFTER_MS) return undefined
  return Math.max(0, ms)
}
