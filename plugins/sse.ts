import fp from 'fastify-plugin'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import type { ServerResponse } from 'node:http'
import type { StreamSlots } from '../services/auth/stream-slots.js'
import { MAX_QUEUED_BYTES, type StreamSink } from '../services/tasks/task-stream.js'
import type { JsonRpcFailure } from '../services/json-rpc/dispatch.js'
import { JsonRpcError, RpcCode } from '../services/errors.js'
import type { JsonRpcId } from '../services/json-rpc/registry.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Open Server-Sent Event streams: opening, heartbeats, backpressure and shutdown. */
    a2aStreams: StreamHub
  }
}

/** What the hub streams: a source of serialized JSON-RPC results (see services/tasks/task-stream.ts). */
export interface EventSource {
  attach (sink: StreamSink): void
  /** The consumer has caught up after a write returned false. */
  drain (): void
  /** Stops the source (client gone or stream cut); idempotent. */
  close (): void
  /** The current state, serialized, sent last when the server shuts down. */
  snapshot (): string
  /** The SSE event id of what `snapshot` shows, when the stream has ids. */
  snapshotId (): number | undefined
}

export interface SsePluginOptions {
  /** `server.max_streams`: open streams of this instance. */
  maxStreams: number
  /** `server.heartbeat_interval`, ms: a `: keep-alive` comment goes to a stream idle this long. */
  heartbeatMs: number
  /** A consumer that lets more than this queue up is cut off (CONTRACT.md §7: 1 MiB). */
  maxQueuedBytes?: number
  /** Open streams per principal (CONTRACT.md §9: 10 with security on, shared through Redis); no limit when absent. */
  slots?: StreamSlots
  /** Awaited in `preClose` before the streams are ended: the task drain, so streams see tasks finish. */
  beforeShutdown?: () => Promise<void>
}

const noop = (): void => {}

/** The slots of one stream (see `StreamHub.claim`). */
export interface StreamClaim {
  own (owner: string): Promise<void>
  release (): void
}

/** 429 with Retry-After: a stream refused by one of its caps. */
function tooManyStreams (data: string): JsonRpcError {
  return new JsonRpcError(RpcCode.rateLimited, 'Too many open streams', data, 429, { 'retry-after': '1' })
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no'
}
/** HTTP/1 only: HTTP/2 has no connection header (node drops one that is set, with a process warning). */
const KEEP_ALIVE_HEADERS = { ...SSE_HEADERS, connection: 'keep-alive' }
/** Once the server is closing, a stream ends with its connection: the close does not wait on an idle socket. */
const CLOSE_HEADERS = { ...SSE_HEADERS, connection: 'close' }

const KEEP_ALIVE = ': keep-alive\n\n'
/** How often idle streams are looked for: a keep-alive goes out at most this late. */
const HEARTBEAT_TICK_MS = 1000

interface OpenStream {
  readonly res: ServerResponse
  /** Gives the principal's stream slot back. */
  readonly release: () => void
  /** What goes before and after each result's JSON: the JSON-RPC envelope, or (REST) the bare `data:` line. */
  readonly prefix: string
  readonly suffix: string
  readonly source: EventSource
  lastWrite: number
  /** Writes are being held until the end of this tick (see `#cork`). */
  corked: boolean
}

/** The client has gone: the HTTP/1 response or the HTTP/2 stream under it is destroyed. */
function gone (res: ServerResponse): boolean {
  return res.destroyed || (res as { stream?: { destroyed: boolean } }).stream?.destroyed === true
}

function uncork (stream: OpenStream): void {
  stream.corked = false
  stream.res.uncork()
}

/** Tracks every open stream; one timer serves the heartbeats of all. */
export class StreamHub {
  readonly #streams = new Set<OpenStream>()
  readonly #slots: StreamSlots | undefined
  readonly #maxStreams: number
  readonly #heartbeatMs: number
  readonly #maxQueued: number
  #timer: NodeJS.Timeout | undefined
  /** Slots of `server.max_streams` taken: open streams and those whose request is still being served. */
  #taken = 0
  /** Set by `endAll` (shutdown): a stream opened later gets its snapshot and ends at once. */
  #ending = false

  constructor (opts: SsePluginOptions) {
    this.#maxStreams = opts.maxStreams
    this.#heartbeatMs = opts.heartbeatMs
    this.#maxQueued = opts.maxQueuedBytes ?? MAX_QUEUED_BYTES
    this.#slots = opts.slots
  }

  get size (): number {
    return this.#streams.size
  }

  /**
   * Takes one of this instance's `server.max_streams` slots, at once: the function that gives it back, or null when
   * all are taken. Taken before anything is awaited, so that concurrent requests cannot all pass one check and
   * open more streams than the cap.
   */
  take (): (() => void) | null {
    if (this.#taken >= this.#maxStreams) return null
    this.#taken++
    let held = true
    return () => {
      if (!held) return
      held = false
      this.#taken--
    }
  }

  /**
   * Takes one of the principal's stream slots: the function that gives it back (pass it to `open`), or null when
   * the principal has all its streams open. Throws StorageUnavailable when the shared count cannot be read.
   */
  async reserve (owner: string): Promise<(() => void) | null> {
    return this.#slots === undefined ? noop : await this.#slots.take(owner)
  }

  /**
   * What a stream holds while it is prepared and open, for every binding: one of `server.max_streams`, taken now
   * (before anything is awaited, so that concurrent requests cannot all pass one check), and with `own(owner)`
   * one of the principal's. Either refusal is the 429 of CONTRACT.md §7 and §9; `release` (for `open`) gives back
   * whatever was taken.
   */
  claim (): StreamClaim {
    const local = this.take()
    if (local === null) throw tooManyStreams('server.max_streams reached')
    let own: (() => void) | null = null
    return {
      own: async owner => {
        own = await this.reserve(owner)
        if (own === null) throw tooManyStreams('too many open streams for this principal')
      },
      release: () => {
        local()
        own?.()
      }
    }
  }

  /**
   * Takes over the reply and streams the source's events, each `data: <JSON-RPC response>\n\n` with the id, or
   * with `id` undefined (the HTTP+JSON binding) each `data: <result>\n\n`; an event the source gives an id goes
   * out with its `id:` line first. `release` (from `reserve`) is called once
   * the stream is gone.
   */
  open (reply: FastifyReply, id: JsonRpcId | undefined, source: EventSource, release: () => void = noop): void {
    reply.hijack()
    const res = reply.raw
    // The client left while the stream was being prepared (Redis I/O, say): its `close` has fired already and would
    // never reach a listener added now. Nothing is written; the slots and the subscription are given back at once.
    if (gone(res)) {
      release()
      source.close()
      return
    }
    const stream: OpenStream = id === undefined
      ? { res, release, prefix: 'data: ', suffix: '\n\n', source, lastWrite: Date.now(), corked: false }
      : { res, release, prefix: `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`, suffix: '}\n\n', source, lastWrite: Date.now(), corked: false }
    this.#cork(stream)
    res.writeHead(200, this.#headers(reply))
    res.flushHeaders()
    this.#streams.add(stream)
    this.#ensureTimer()
    // A client that goes away only ends its stream: the task goes on (CONTRACT.md §6).
    res.once('close', () => this.#drop(stream))
    res.on('drain', () => source.drain())
    source.attach({
      write: (json, id) => this.#write(stream, (id === undefined ? '' : `id: ${id}\n`) + stream.prefix + json + stream.suffix),
      end: () => this.#end(stream),
      queued: () => res.writableLength,
      abort: () => this.#cut(stream)
    })
    // Opened after the shutdown ended the others (its request was in flight then): nobody would end it later.
    if (this.#ending) this.#finish(stream)
  }

  /** A stream of one JSON-RPC error event (bad params, unknown task), then the end (CONTRACT.md §7). */
  error (reply: FastifyReply, response: JsonRpcFailure): void {
    reply.hijack()
    reply.raw.writeHead(200, this.#headers(reply))
    reply.raw.end(`data: ${JSON.stringify(response)}\n\n`)
  }

  /** Sends every open stream its current snapshot and ends it (shutdown); streams opened later end at once. */
  endAll (): void {
    this.#ending = true
    for (const stream of [...this.#streams]) this.#finish(stream)
  }

  #headers (reply: FastifyReply): Record<string, string> {
    if (reply.request.raw.httpVersionMajor === 2) return SSE_HEADERS
    return this.#ending ? CLOSE_HEADERS : KEEP_ALIVE_HEADERS
  }

  /** The stream's current snapshot, then its end. */
  #finish (stream: OpenStream): void {
    const id = stream.source.snapshotId()
    this.#write(stream, (id === undefined ? '' : `id: ${id}\n`) + stream.prefix + stream.source.snapshot() + stream.suffix)
    this.#end(stream)
  }

  close (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #write (stream: OpenStream, chunk: string): boolean {
    if (!this.#streams.has(stream)) return false
    // A socket destroyed before its `close` event is delivered: end the stream now rather than hold for a drain.
    if (gone(stream.res)) {
      this.#drop(stream)
      return false
    }
    // Small events wait for the end of the tick and leave together; a large one goes out at once, after what waits.
    if (chunk.length < stream.res.writableHighWaterMark) this.#cork(stream)
    else if (stream.corked) uncork(stream)
    const ok = stream.res.write(chunk)
    stream.lastWrite = Date.now()
    if (!ok && stream.res.writableLength > this.#maxQueued) {
      this.#cut(stream)
      return false
    }
    return ok
  }

  /**
   * Holds the stream's writes until this tick ends, then sends them as one: the headers with the first events, and
   * the events a task makes in one go (a fast agent's whole run) in one socket write instead of one each.
   */
  #cork (stream: OpenStream): void {
    if (stream.corked) return
    stream.corked = true
    stream.res.cork()
    process.nextTick(uncork, stream)
  }

  /** The consumer is not reading: cut it off rather than buffer without bound. The task continues. */
  #cut (stream: OpenStream): void {
    stream.res.destroy()
    this.#drop(stream)
  }

  #end (stream: OpenStream): void {
    if (!this.#streams.has(stream)) return
    this.#drop(stream)
    stream.res.end()
  }

  #drop (stream: OpenStream): void {
    if (!this.#streams.delete(stream)) return
    stream.release()
    stream.source.close()
    if (this.#streams.size === 0) this.close()
  }

  #ensureTimer (): void {
    if (this.#timer !== undefined) return
    this.#timer = setInterval(() => this.#heartbeat(), Math.max(1, Math.min(this.#heartbeatMs, HEARTBEAT_TICK_MS))).unref()
  }

  #heartbeat (): void {
    const idleSince = Date.now() - this.#heartbeatMs
    for (const stream of this.#streams) {
      if (stream.lastWrite <= idleSince) this.#write(stream, KEEP_ALIVE)
    }
  }
}

/**
 * Server-Sent Events for the streaming methods (CONTRACT.md §7). Register it inside the route context that
 * streams; on close, open streams get their current snapshot and are ended.
 */
const ssePlugin: FastifyPluginAsync<SsePluginOptions> = async (fastify, opts) => {
  const hub = new StreamHub(opts)
  fastify.decorate('a2aStreams', hub)
  fastify.addHook('preClose', async () => {
    if (opts.beforeShutdown !== undefined) await opts.beforeShutdown()
    hub.endAll()
    hub.close()
  })
  fastify.addHook('onClose', async () => {
    await opts.slots?.close()
  })
}

export default fp(ssePlugin, { name: 'a2a-sse', fastify: '5.x' })
