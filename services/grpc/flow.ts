import { constants, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2'
import { stalledFor, type Stall } from '../serving/answer-budget.js'
import type { Logger } from '../kernel/logger.js'

// What a gRPC call's client has taken of what was written to it (issue 39 row 1). grpc-js writes each answer to the
// call's HTTP/2 stream, which keeps what its client has not taken (flow control) in its own buffer: that buffer's
// size is the call's untaken bytes, the stream's `close` says that the client took the last of them (or that the
// stream is gone), and a stream reset drops them. The HTTP/2 session is the connection the answer budget counts per.

/** How deep grpc-js 1.14 nests it: ServerUnaryCallImpl.call → ServerInterceptingCall.nextCall → BaseServerInterceptingCall.stream. */
const MAX_DEPTH = 8

/**
 * The HTTP/2 stream under a grpc-js server call. grpc-js (1.14) keeps it in its call objects and shows no way to
 * it; a grpc-js that moved it fails every call here (the gRPC tests would all say so), rather than answer unbounded.
 */
export function streamOf (call: object): ServerHttp2Stream {
  let at = (call as { call?: unknown }).call as { stream?: ServerHttp2Stream, nextCall?: unknown } | undefined
  for (let depth = 0; depth < MAX_DEPTH && at !== undefined && at !== null; depth++) {
    if (at.stream?.session !== undefined) return at.stream
    at = at.nextCall as typeof at
  }
  throw new Error('the HTTP/2 stream of a grpc-js call was not found: this grpc-js is not the one the binding knows')
}

/**
 * Drops what the stream holds for its client: RST_STREAM with ENHANCE_YOUR_CALM, which a grpc-js client reports as
 * RESOURCE_EXHAUSTED (a status in trailers would wait behind the bytes the client does not take).
 */
export function resetStream (stream: ServerHttp2Stream): void {
  stream.close(constants.NGHTTP2_ENHANCE_YOUR_CALM)
}

/** A watched connection: its streams, and what their untaken bytes last were. */
interface Watched extends Stall {
  readonly streams: Set<ServerHttp2Stream>
}

/** How often the watched connections are looked at: one is closed at most this much past `server.write_timeout`. */
const WATCH_TICK_MS = 1000

/**
 * The connections (HTTP/2 sessions) with answers in flight: one whose untaken bytes, all its watched streams
 * together, have not moved for `server.write_timeout` is destroyed, with everything it holds.
 */
export class SessionWatch {
  readonly #timeoutMs: number
  readonly #log: Logger
  readonly #sessions = new Map<ServerHttp2Session, Watched>()
  #timer: NodeJS.Timeout | undefined

  constructor (timeoutMs: number, log: Logger) {
    this.#timeoutMs = timeoutMs
    this.#log = log
  }

  /** Watches a call's stream until it closes. */
  watch (stream: ServerHttp2Stream): void {
    const session = stream.session as ServerHttp2Session
    let watched = this.#sessions.get(session)
    if (watched === undefined) {
      watched = { streams: new Set(), last: 0, since: Date.now() }
      this.#sessions.set(session, watched)
    }
    watched.streams.add(stream)
    const record = watched
    stream.once('close', () => {
      record.streams.delete(stream)
      if (record.streams.size === 0 && this.#sessions.get(session) === record) this.#sessions.delete(session)
    })
    this.#timer ??= setInterval(() => this.#look(), WATCH_TICK_MS).unref()
  }

  close (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #look (): void {
    const now = Date.now()
    for (const [session, watched] of this.#sessions) {
      let bytes = 0
      for (const stream of watched.streams) bytes += stream.writableLength
      if (stalledFor(watched, bytes, now, this.#timeoutMs)) {
        this.#sessions.delete(session)
        this.#log.info({ untaken: bytes }, 'gRPC connection closed: its client took nothing of what was written within server.write_timeout')
        session.destroy()
      }
    }
    if (this.#sessions.size === 0) this.close()
  }
}
