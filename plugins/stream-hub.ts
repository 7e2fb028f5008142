// The hub of open SSE streams: opening, framing, flow control against the answer budget, heartbeats and shutdown.
import type { FastifyReply } from 'fastify'
import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { AnswerBudget, type Taken } from '../services/serving/answer-budget.js'
import { MAX_BEHIND_BYTES, MAX_QUEUED_BYTES } from '../services/tasks/task-stream.js'
import { HttpAnswers, connectionOf, gone, reset, untaken } from './answers.js'
import type { JsonRpcFailure } from '../services/json-rpc/dispatch.js'
import type { JsonRpcError } from '../services/kernel/errors.js'
import type { JsonRpcId } from '../services/json-rpc/registry.js'
import type { EventSource, SsePluginOptions, StreamClaim } from './sse-types.js'
import { StreamCaps } from './stream-caps.js'

const noop = (): void => {}

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
/**
 * A consumer is cut off for what waits for it (`maxQueuedBytes`) only once it has taken nothing for this long: one
 * that reads is never cut off for being behind, one that does not is found within it. Two seconds rather than one
 * tick, so that a reader on a machine too loaded to run it for a moment is not taken for one that stopped.
 */
const STILL_MS = 2000
/** After the shutdown has ended the streams, what one still has to flush gets this long before its socket is closed. */
const FLUSH_GRACE_MS = 1000
/** `server.write_timeout`'s default, for a hub with no answers of the agent's. */
const DEFAULT_WRITE_TIMEOUT_MS = 30_000

interface OpenStream {
  readonly res: ServerResponse
  /** The connection it is written on, for the answer budget. */
  readonly connection: object
  /** Gives the principal's stream slot back. */
  readonly release: () => void
  /** What goes before and after each result's JSON: the JSON-RPC envelope, or (REST) the bare `data:` line. */
  readonly prefix: string
  readonly suffix: string
  readonly source: EventSource
  lastWrite: number
  /** The socket whose writes are held until the end of this tick (see `#cork`); null when none are. */
  corked: Socket | null
  /** Room the answer budget granted after a wait, spent on the next write. */
  reserved: Taken | null
  /** A wait for room in the answer budget, given up when the stream goes. */
  waiting: AbortController | null
  /**
   * The size of the last write that found nothing untaken: the event being written, for which a consumer is never
   * cut off (an event larger than the limit reaches a client that reads).
   */
  exempt: number
  /** `untaken` at the last look, and since when it has not moved. */
  untaken: number
  still: number
}

/**
 * Lets the writes held by `#cork` go, once per cork: the tick's uncork finds nothing to do after a large event or the
 * end has let them go (a socket's uncork below zero does nothing).
 */
function uncork (stream: OpenStream): void {
  const socket = stream.corked
  if (socket === null) return
  stream.corked = null
  socket.uncork()
}

/** A write the answer budget had no room for: nothing was written (see `StreamSink.write`). */
const REFUSED = null

/** Tracks every open stream; one timer serves the heartbeats of all. */
export class StreamHub {
  readonly #streams = new Set<OpenStream>()
  /** Streams ended whose last bytes their client has not taken yet: they hold their slots until it has. */
  readonly #flushing = new Set<OpenStream>()
  /** The slots streams hold: `server.max_streams` and the principal's. */
  readonly #caps: StreamCaps
  readonly #heartbeatMs: number
  readonly #maxQueued: number
  readonly #answers: HttpAnswers
  readonly #budget: AnswerBudget
  #timer: NodeJS.Timeout | undefined
  /** When the streams were last looked at for consumers that stopped taking (every `STILL_MS / 2`). */
  #lookedAt = 0
  /** Set by `endAll` (shutdown): a stream opened later gets its snapshot and ends at once. */
  #ending = false

  constructor (opts: SsePluginOptions) {
    this.#caps = new StreamCaps(opts.maxStreams, opts.slots)
    this.#heartbeatMs = opts.heartbeatMs
    this.#maxQueued = opts.maxQueuedBytes ?? MAX_QUEUED_BYTES
    this.#answers = opts.answers ?? new HttpAnswers(new AnswerBudget({ maxBytes: Infinity, maxBytesPerConnection: Infinity }),
      DEFAULT_WRITE_TIMEOUT_MS, { info: noop } as unknown as ConstructorParameters<typeof HttpAnswers>[2])
    this.#budget = this.#answers.budget
  }

  /** Open streams, and ended ones whose client has not taken their last bytes yet. */
  get size (): number {
    return this.#streams.size + this.#flushing.size
  }

  /** Takes one of this instance's `server.max_streams` slots, or null when all are taken (see `StreamCaps.take`). */
  take (): (() => void) | null {
    return this.#caps.take()
  }

  /** The slots a stream holds while it is prepared and open; throws the 429 when refused (see `StreamCaps.claim`). */
  claim (): StreamClaim {
    return this.#caps.claim()
  }

  /**
   * Takes over the reply and streams the source's events, each `data: <JSON-RPC response>\n\n` with the id, or
   * with `id` undefined (the HTTP+JSON binding) each `data: <result>\n\n`; an event the source gives an id goes
   * out with its `id:` line first. `release` (from `StreamCaps.reserve`) is called once the stream is gone and its client has
   * taken its last bytes. `errorFrame` writes an error that ends the stream (a task that vanished) in the binding's
   * form; without it such a stream just ends.
   */
  open (reply: FastifyReply, id: JsonRpcId | undefined, source: EventSource, release: () => void = noop,
    errorFrame?: (error: JsonRpcError) => string): void {
    reply.hijack()
    const res = reply.raw
    // The client left while the stream was being prepared (Redis I/O, say): its `close` has fired already and would
    // never reach a listener added now. Nothing is written; the slots and the subscription are given back at once.
    if (gone(res)) {
      release()
      source.close()
      return
    }
    const now = Date.now()
    const [prefix, suffix] = id === undefined ? ['data: ', '\n\n'] : [`data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`, '}\n\n']
    const stream: OpenStream = {
      res,
      connection: connectionOf(reply.request.raw),
      release,
      prefix,
      suffix,
      source,
      lastWrite: now,
      corked: null,
      reserved: null,
      waiting: null,
      exempt: 0,
      untaken: 0,
      still: now
    }
    this.#cork(stream)
    res.writeHead(200, this.#headers(reply))
    res.flushHeaders()
    this.#streams.add(stream)
    this.#ensureTimer()
    // A client that goes away only ends its stream: the task goes on (CONTRACT.md §6). The slots are given back once
    // the response is done: its client has taken the last bytes, or its connection is gone.
    res.once('close', () => {
      this.#drop(stream)
      if (this.#flushing.delete(stream) && this.size === 0) this.close()
      release()
    })
    res.on('drain', () => source.drain())
    // A consumer that takes nothing for server.write_timeout is closed, open or ended.
    this.#answers.watch(res)
    source.attach({
      write: (json, id) => this.#write(stream, (id === undefined ? '' : `id: ${id}\n`) + stream.prefix + json + stream.suffix),
      end: () => this.#end(stream),
      queued: () => Math.max(0, untaken(res) - stream.exempt),
      abort: () => this.#cut(stream),
      fail: error => {
        if (errorFrame !== undefined) this.#write(stream, errorFrame(error), true)
        this.#end(stream)
      },
      // A consumer that stops reading is found by `#look`; one that reads may fall this far behind.
      limit: MAX_BEHIND_BYTES
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

  /**
   * Sends every open stream its current snapshot and ends it (shutdown); streams opened later end at once. A client
   * that has not taken its last bytes within `FLUSH_GRACE_MS` has its connection closed, so the shutdown does not wait
   * on it.
   */
  endAll (): void {
    this.#ending = true
    for (const stream of [...this.#streams]) this.#finish(stream)
    if (this.#flushing.size === 0) return
    setTimeout(() => {
      for (const stream of this.#flushing) reset(stream.res)
    }, FLUSH_GRACE_MS).unref()
  }

  #headers (reply: FastifyReply): Record<string, string> {
    if (reply.request.raw.httpVersionMajor === 2) return SSE_HEADERS
    return this.#ending ? CLOSE_HEADERS : KEEP_ALIVE_HEADERS
  }

  /** The stream's current snapshot, then its end; written whatever the answer budget's room, as the last word. */
  #finish (stream: OpenStream): void {
    const id = stream.source.snapshotId()
    const chunk = (id === undefined ? '' : `id: ${id}\n`) + stream.prefix + stream.source.snapshot() + stream.suffix
    this.#write(stream, chunk, true)
    this.#end(stream)
  }

  close (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  /**
   * Writes one event: true when the consumer keeps up, false when it should wait for `drain`, null (REFUSED) when
   * the answer budget had no room and nothing was written (the stream waits for room, then drains). `force` writes
   * whatever the room.
   */
  #write (stream: OpenStream, chunk: string, force = false): boolean | null {
    if (!this.#streams.has(stream)) return false
    const { res } = stream
    // A socket destroyed before its `close` event is delivered: end the stream now rather than hold for a drain.
    if (gone(res)) {
      this.#drop(stream)
      return false
    }
    const reserved = stream.reserved
    stream.reserved = null
    const taken = reserved !== null
      ? this.#budget.exchange(reserved, stream.connection, chunk.length)
      : force ? this.#budget.takeNow(stream.connection, chunk.length) : this.#budget.tryTake(stream.connection, chunk.length)
    if (taken === null) {
      this.#wait(stream, chunk.length)
      return REFUSED
    }
    const before = untaken(res)
    // The event being written is spared the limits, whatever its size: the one written to an idle socket, or behind
    // no more than a socket write's worth (the headers, a keep-alive, small events the kernel has not taken yet),
    // which goes out with it. Sparing only an idle socket's cut a large first event whose headers were still queued.
    if (before <= res.writableHighWaterMark) stream.exempt = before + chunk.length
    // Small events wait for the end of the tick and leave together; a large one goes out at once, after what waits.
    if (chunk.length < res.writableHighWaterMark) this.#cork(stream)
    else uncork(stream)
    // The room is given back once the bytes have left for the client (the callback also runs when the socket goes).
    const ok = res.write(chunk, taken.release)
    stream.lastWrite = Date.now()
    if (!ok && before + chunk.length - stream.exempt > MAX_BEHIND_BYTES) {
      this.#cut(stream)
      return false
    }
    return ok
  }

  /** Waits for room for `bytes` in the answer budget, then lets the source write what it held meanwhile. */
  #wait (stream: OpenStream, bytes: number): void {
    if (stream.waiting !== null) return
    const waiting = new AbortController()
    stream.waiting = waiting
    this.#budget.take(stream.connection, bytes, waiting.signal).then(taken => {
      stream.waiting = null
      if (!this.#streams.has(stream)) {
        taken.release()
        return
      }
      stream.reserved = taken
      stream.source.drain()
      // The source had nothing left to write: the room goes back.
      stream.reserved?.release()
      stream.reserved = null
    }, noop)
  }

  /**
   * Holds the stream's writes until this tick ends, then sends them as one: the headers with the first events, and
   * the events a task makes in one go (a fast agent's whole run) in one socket write instead of one each.
   */
  #cork (stream: OpenStream): void {
    // The socket, not the response: from Node 22 a corked response keeps its writes itself and its end sends the
    // closing chunk before them, so a stream had to let them go first and its end cost a socket write of its own.
    const socket = stream.res.socket
    if (stream.corked !== null || socket === null) return
    stream.corked = socket
    socket.cork()
    process.nextTick(uncork, stream)
  }

  /** The consumer is not reading: cut it off rather than buffer without bound. The task continues. */
  #cut (stream: OpenStream): void {
    reset(stream.res)
    this.#drop(stream)
  }

  /** Ends the stream; its slots are given back once its client has taken the last bytes (the response's `close`). */
  #end (stream: OpenStream): void {
    if (!this.#streams.has(stream)) return
    this.#flushing.add(stream)
    this.#drop(stream)
    // The closing chunk joins what the socket holds (the last events, or all of a fast agent's stream with its
    // headers) and the end lets it all go in one socket write: its own write had cost a short stream 10 % of its CPU
    // (132 against 120 µs per message/stream, 8 rounds taking turns, lower in each; docs/architecture.md).
    stream.res.end()
    uncork(stream)
  }

  /** Stops writing the stream: it leaves the hub, its source and any wait for room go. */
  #drop (stream: OpenStream): void {
    if (!this.#streams.delete(stream)) return
    stream.waiting?.abort()
    /* c8 ignore next -- a reservation outlives the tick only when the stream goes during the drain its grant starts */
    stream.reserved?.release()
    stream.reserved = null
    stream.source.close()
    if (this.size === 0) this.close()
  }

  #ensureTimer (): void {
    if (this.#timer !== undefined) return
    this.#timer = setInterval(() => this.#tick(), Math.max(1, Math.min(this.#heartbeatMs, HEARTBEAT_TICK_MS))).unref()
  }

  #tick (): void {
    const now = Date.now()
    const look = now - this.#lookedAt >= STILL_MS / 2
    if (look) this.#lookedAt = now
    const idleSince = now - this.#heartbeatMs
    for (const stream of [...this.#streams]) {
      const bytes = untaken(stream.res)
      if (look) this.#look(stream, bytes, now)
      // A keep-alive goes only to a stream whose client has taken everything: it would not reach the others sooner,
      // and would count as their sockets moving.
      if (bytes === 0 && stream.lastWrite <= idleSince && this.#streams.has(stream)) this.#beat(stream)
    }
    // An ended stream whose client does not take its last bytes is cut off the same way.
    if (look) for (const stream of [...this.#flushing]) this.#look(stream, untaken(stream.res), now)
  }

  /** A keep-alive comment: a few bytes, outside the answer budget. */
  #beat (stream: OpenStream): void {
    /* c8 ignore next 4 -- a socket destroyed in the same turn as the tick, before its close event: not arrangeable */
    if (gone(stream.res)) {
      this.#drop(stream)
      return
    }
    stream.res.write(KEEP_ALIVE)
    stream.lastWrite = Date.now()
    stream.source.check?.()
  }

  /**
   * CONTRACT.md §7: a consumer that does not read may have at most `maxQueued` waiting for it. Cut off once it has
   * taken nothing for `STILL_MS` with more than that untaken and held, beyond the event being written.
   */
  #look (stream: OpenStream, bytes: number, now: number): void {
    if (bytes === 0 || bytes !== stream.untaken) {
      stream.untaken = bytes
      stream.still = now
      if (bytes === 0) stream.exempt = 0
      return
    }
    // (An ended stream holds nothing more; a source without `held` counts nothing held.)
    /* c8 ignore next -- every source of the bindings has `held`: the fallback is for custom sources */
    const behind = bytes - stream.exempt + (this.#streams.has(stream) ? stream.source.held?.() ?? 0 : 0)
    if (now - stream.still >= STILL_MS && behind > this.#maxQueued) this.#cut(stream)
  }
}
