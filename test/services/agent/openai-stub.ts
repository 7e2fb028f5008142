import Fastify from 'fastify'
import type { Teardown } from '../../helper.js'

/** A request the stub received. */
export interface StubRequest {
  headers: Record<string, string | string[] | undefined>
  body: any
}

/** How the stub answers one request. */
export interface StubAnswer {
  /** Default 200. */
  status?: number
  headers?: Record<string, string>
  /** A plain body (no SSE). */
  body?: string
  /** SSE: objects are sent as `data: <json>`, strings as written. */
  chunks?: unknown[]
  /** SSE: end with `data: [DONE]`. Default true. */
  done?: boolean
  /** Awaited before chunk `i` (from 1) is written: lets a test see each chunk arrive on its own. */
  before?: (i: number) => Promise<void>
  /** Keep the response open after the chunks, until the client goes away. */
  hang?: boolean
  /** Never answer at all, until the client goes away. */
  silent?: boolean
}

export interface Stub {
  /** `http://127.0.0.1:<port>/v1`, as `agent.llm.base_url`. */
  baseUrl: string
  requests: StubRequest[]
  /** Requests whose client went away before the answer was finished. */
  aborted: number
  /** The answers to the next requests, in order; the last one repeats. */
  script (...answers: StubAnswer[]): void
}

/** A local OpenAI-compatible chat-completions endpoint on 127.0.0.1, answering as scripted; closed with the test. */
export async function openaiStub (t: Teardown): Promise<Stub> {
  const app = Fastify({ logger: false, forceCloseConnections: true })
  let answers: StubAnswer[] = [{ chunks: [text('hello'), finish()] }]
  const stub: Stub = {
    baseUrl: '',
    requests: [],
    aborted: 0,
    script: (...a) => { answers = a }
  }
  app.post('/v1/chat/completions', async (request, reply) => {
    stub.requests.push({ headers: request.headers, body: request.body })
    const answer = answers.length > 1 ? answers.shift() as StubAnswer : answers[0]
    if (answer.chunks === undefined && answer.silent !== true) {
      return reply.code(answer.status ?? 200).headers(answer.headers ?? {}).send(answer.body ?? '')
    }
    reply.hijack()
    const res = reply.raw
    let finished = false
    const gone = new Promise<void>(resolve => res.on('close', () => {
      if (!finished) stub.aborted++
      resolve()
    }))
    if (answer.silent === true) return
    res.writeHead(answer.status ?? 200, { 'content-type': 'text/event-stream', ...answer.headers })
    for (const [i, chunk] of answer.chunks!.entries()) {
      if (i > 0 && answer.before !== undefined) await answer.before(i)
      res.write(typeof chunk === 'string' ? chunk : `data: ${JSON.stringify(chunk)}\n\n`)
    }
    if (answer.hang === true) return gone
    if (answer.done !== false) res.write('data: [DONE]\n\n')
    finished = true
    res.end()
  })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  stub.baseUrl = `${address}/v1`
  return stub
}

/** A chunk carrying content text. */
export function text (content: string): Record<string, unknown> {
  return { id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }] }
}

/** The last chunk of a choice. */
export function finish (reason = 'stop'): Record<string, unknown> {
  return { id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: reason }] }
}

/** A whole tool call in one chunk. */
export function toolCall (index: number, id: string, name: string, args: unknown): Record<string, unknown> {
  const fn = { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }
  return { id: 'c', choices: [{ index: 0, delta: { tool_calls: [{ index, id, type: 'function', function: fn }] }, finish_reason: null }] }
}

/** An answer calling the given tools, then finishing with `tool_calls`. */
export function calls (...list: Array<[string, unknown]>): StubAnswer {
  return { chunks: [...list.map(([name, args], i) => toolCall(i, `call_${name}_${i}`, name, args)), finish('tool_calls')] }
}

/** An answer of text chunks, then `stop`. */
export function says (...parts: string[]): StubAnswer {
  return { chunks: [...parts.map(text), finish()] }
}
