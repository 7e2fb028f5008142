// The streams that resume (docs/architecture.md, "Resumable streams"), one per version and binding: how to open a message's
// stream and how to resume a task's, and what their events come to, for the resume tests on one instance and on two.
import type { Test } from 'tap'
import type { AgentExecutor } from '../../index.js'
import { parseSseBlock, rpc } from '../helper.js'

/** One SSE frame as it arrived: its `id:` and its `data:` JSON. */
export interface Frame { id: number | undefined, data: any }

/** Reads an SSE body a frame at a time, as a client reads a stream it may drop. */
export class Frames {
  readonly #reader: ReadableStreamDefaultReader<string>
  readonly #abort: AbortController | undefined
  #buffer = ''
  /** `abort`: the request's, so that `drop` closes the connection as a failing network does. */
  constructor (res: Response, abort?: AbortController) {
    this.#reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader()
    this.#abort = abort
  }

  /** The next frame, or null at the end of the stream. Comments (keep-alives) are skipped. */
  async next (): Promise<Frame | null> {
    for (;;) {
      const end = this.#buffer.indexOf('\n\n')
      if (end >= 0) {
        const block = this.#buffer.slice(0, end)
        this.#buffer = this.#buffer.slice(end + 2)
        if (block.startsWith(':')) continue
        const frame = parseSseBlock(block)
        if (frame === null) throw new Error(`not an SSE event: ${JSON.stringify(block)}`)
        return frame
      }
      const { value, done } = await this.#reader.read()
      if (done) return null
      this.#buffer += value
    }
  }

  /** Every frame up to the end. */
  async rest (): Promise<Frame[]> {
    const out: Frame[] = []
    for (let frame = await this.next(); frame !== null; frame = await this.next()) out.push(frame)
    return out
  }

  /** Drops the connection, as a client whose network fails. */
  async drop (): Promise<void> {
    this.#abort?.abort()
    await this.#reader.cancel().catch(() => {})
  }
}

/** What an event says, the same in every binding: `task <state>`, `status <state>`, or `artifact <text>`. */
export type Said = string

export interface ResumeBinding {
  name: string
  /** Config the server needs for this binding (the a2a dialect for JSON-RPC v0.3). */
  config: Record<string, unknown>
  /** Opens the stream of a new message with this text; `signal` aborts its request. */
  stream (url: string, text: string, signal?: AbortSignal): Promise<Response>
  /** Resumes a task's stream after `lastId`, by the `Last-Event-ID` header or (`metadata`) the params. */
  resume (url: string, taskId: string, lastId: string | number | undefined, how?: 'header' | 'metadata'): Promise<Response>
  /** What a frame's data says; the task id of a `task` frame. */
  said (data: any): Said
  taskId (data: any): string
  /** The JSON-RPC error of a frame, or (REST) undefined: REST refuses before streaming. */
  error? (data: any): { code: number, data?: unknown } | undefined
}

const json = { 'content-type': 'application/json' }
const V1 = { ...json, 'a2a-version': '1.0' }
const post = (url: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { accept: 'text/event-stream', ...headers }, body: JSON.stringify(body), signal })
const lastEventId = (id: string | number | undefined, how: 'header' | 'metadata'): Record<string, string> =>
  id === undefined || how !== 'header' ? {} : { 'last-event-id': String(id) }
const metadataOf = (id: string | number | undefined, how: 'header' | 'metadata') =>
  id === undefined || how !== 'metadata' ? {} : { metadata: { lastEventId: id } }

const v03Message = (text: string) => ({ kind: 'message', role: 'user', messageId: `m-${Math.random().toString(36).slice(2)}`, parts: [{ kind: 'text', text }] })
const v1Message = (text: string) => ({ messageId: `m-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', parts: [{ text }] })
const protoText = (parts: any[]): string => parts.map(p => p.text ?? '').join('')
const protoState = (state: string): string => state.replace(/^TASK_STATE_/, '').toLowerCase()

/** StreamResponse (v1.0 and the v0.3 proto's): `{task}`, `{statusUpdate}` or `{artifactUpdate}`. */
function saidProto (r: any): Said {
  if (r.task !== undefined) return `task ${protoState(r.task.status.state)}`
  if (r.statusUpdate !== undefined) return `status ${protoState(r.statusUpdate.status.state)}`
  return `artifact ${protoText(r.artifactUpdate.artifact.parts)}`
}

export const RESUME_BINDINGS: ResumeBinding[] = [
  {
    name: 'JSON-RPC v0.3 (a2a dialect)',
    config: { protocol: { dialect: 'a2a' } },
    stream: (url, text, signal) => post(url + '/', rpc('message/stream', { message: v03Message(text) }), json, signal),
    resume: (url, id, last, how = 'header') => post(url + '/', rpc('tasks/resubscribe', { id, ...metadataOf(last, how) }), { ...json, ...lastEventId(last, how) }),
    said: ({ result: r }) => r.kind === 'task'
      ? `task ${r.status.state}`
      : r.kind === 'status-update' ? `status ${r.status.state}` : `artifact ${r.artifact.parts.map((p: any) => p.text).join('')}`,
    taskId: ({ result: r }) => r.kind === 'task' ? r.id : r.taskId,
    error: data => data.error
  },
  {
    name: 'JSON-RPC v1.0',
    config: {},
    stream: (url, text, signal) => post(url + '/', rpc('SendStreamingMessage', { message: v1Message(text) }), V1, signal),
    resume: (url, id, last, how = 'header') => post(url + '/', rpc('SubscribeToTask', { id, ...metadataOf(last, how) }), { ...V1, ...lastEventId(last, how) }),
    said: ({ result }) => saidProto(result),
    taskId: ({ result }) => result.task.id,
    error: data => data.error
  },
  {
    name: 'HTTP+JSON v1.0',
    config: {},
    stream: (url, text, signal) => post(`${url}/message:stream`, { message: v1Message(text) }, V1, signal),
    resume: (url, id, last, how = 'header') => how === 'header'
      ? fetch(`${url}/tasks/${id}:subscribe`, { headers: { accept: 'text/event-stream', 'a2a-version': '1.0', ...lastEventId(last, how) } })
      : post(`${url}/tasks/${id}:subscribe`, metadataOf(last, how), V1),
    said: saidProto,
    taskId: r => r.task.id
  },
  {
    name: 'HTTP+JSON v0.3 (/v1)',
    config: {},
    stream: (url, text, signal) => post(`${url}/v1/message:stream`, { message: { messageId: `m-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', content: [{ text }] } }, json, signal),
    resume: (url, id, last, how = 'header') => how === 'header'
      ? fetch(`${url}/v1/tasks/${id}:subscribe`, { headers: { accept: 'text/event-stream', ...lastEventId(last, how) } })
      : post(`${url}/v1/tasks/${id}:subscribe`, metadataOf(last, how), json),
    said: saidProto,
    taskId: r => r.task.id
  }
]

/**
 * An agent whose tasks write `before` chunks, wait for their gate (`open(text)`), then write `after` more and
 * complete. Chunk i of a task is `c<i> `.
 */
export function gatedAgent (before: number, after: number): { executor: AgentExecutor, open: (text: string) => void } {
  const gates = new Map<string, { promise: Promise<void>, open: () => void }>()
  const gate = (text: string) => {
    let entry = gates.get(text)
    if (entry === undefined) {
      let open!: () => void
      const promise = new Promise<void>(resolve => { open = resolve })
      entry = { promise, open }
      gates.set(text, entry)
    }
    return entry
  }
  const executor: AgentExecutor = async function * (ctx) {
    const part = ctx.message.parts[0]
    const text = part.kind === 'text' ? part.text : ''
    for (let i = 0; i < before; i++) yield `c${i} `
    await gate(text).promise
    for (let i = before; i < before + after; i++) yield `c${i} `
  }
  return { executor, open: text => gate(text).open() }
}

/** The chunks' text from `from` (inclusive) to `to` (exclusive). */
export const chunks = (from: number, to: number): string => Array.from({ length: to - from }, (_, i) => `c${from + i} `).join('')

/** The stream of a new message, to be dropped mid-way. */
export async function dropping (binding: ResumeBinding, url: string, text: string): Promise<Frames> {
  const abort = new AbortController()
  return new Frames(await binding.stream(url, text, abort.signal), abort)
}

/** The metadata key that marks a snapshot sent in place of events no longer kept. */
export const RESYNC = 'fastify-a2a.resync'

/** Reads `count` frames of a stream, then drops its connection. */
export async function dropAfter (frames: Frames, count: number): Promise<Frame[]> {
  const got: Frame[] = []
  // A stream whose chunks were merged for a client that read slowly may end before `count`: it is had whole.
  for (let frame = await frames.next(); frame !== null; frame = got.length < count ? await frames.next() : null) got.push(frame)
  await frames.drop()
  return got
}

/** The artifact text the frames carry, in order. */
export const textOf = (binding: ResumeBinding, frames: Frame[]): string =>
  frames.map(f => binding.said(f.data)).filter(s => s.startsWith('artifact ')).map(s => s.slice('artifact '.length)).join('')

/** Waits until `url` reads the task as completed. */
export async function untilCompleted (url: string, taskId: string): Promise<void> {
  for (;;) {
    const got: any = await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('tasks/get', { id: taskId })) })).json()
    if (got.result.status.state === 'completed') return
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

/** A resumed stream that must be one frame, the completed task marked as a resync, then the end. */
export async function resyncThenEnd (t: Test, binding: ResumeBinding, res: Response, name: string): Promise<void> {
  t.equal(res.status, 200, name)
  const frames = await new Frames(res).rest()
  t.equal(frames.length, 1, `${name}: one frame, then the end`)
  t.equal(binding.said(frames[0].data), 'task completed', name)
  const task = frames[0].data.result?.task ?? frames[0].data.task
  t.equal((task.metadata as Record<string, unknown>)[RESYNC], true, `${name}: marked as a resync`)
}
