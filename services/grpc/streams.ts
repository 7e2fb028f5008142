import type { ServerHttp2Stream } from 'node:http2'
import type { ServerWritableStream } from '@grpc/grpc-js'
import type protobuf from 'protobufjs'
import type { AnswerBudget, Taken } from '../serving/answer-budget.js'
import type { EventSource } from '../../plugins/sse.js'
import type { ProtoCodec } from './codec.js'
import { MAX_BEHIND_BYTES, MAX_QUEUED_BYTES } from '../tasks/task-stream.js'
import { resetStream, type SessionWatch } from './flow.js'

// The gRPC binding's server streams (docs/protocol.md, "The gRPC binding"): each event serialized, within the answer budget
// (per HTTP/2 session) until the client's flow control has taken it; the stream's slots held until its HTTP/2
// stream closes; a client that lets too much pile up reset.

type Json = Record<string, unknown>

export interface GrpcStreamsOptions {
  codec: ProtoCodec
  budget: AnswerBudget
  watch: SessionWatch
  /**
   * How long a stream goes without an event before its source looks at its task (`server.heartbeat_interval`, as
   * SSE streams look at each heartbeat): one that vanished, or moved on past events lost on the way, ends the stream.
   */
  idleCheckMs: number
}

/** A stream being written: its call, its HTTP/2 stream, its source and the slots it holds. */
interface OpenStream {
  readonly call: ServerWritableStream<Json, unknown>
  readonly stream: ServerHttp2Stream
  /** The answer budget's connection: the HTTP/2 session. */
  readonly connection: object
  /** The message type its events are written as. */
  readonly type: protobuf.Type
  readonly source: EventSource
  /** Bytes handed to the call and not yet taken by the client's flow control. */
  queued: number
  /** The source was told to wait (more than HIGH_WATER queued): it is told when the client has taken enough. */
  blocked: boolean
  /** The budget's bytes of the events written and not yet taken; given back as they are, or when the stream closes. */
  readonly taken: Set<Taken>
  /** Room the answer budget granted after a wait, spent on the next write. */
  reserved: Taken | null
  /** A wait for room in the answer budget, given up when the stream goes. */
  waiting: AbortController | null
  /** The size of the last event written when nothing was queued: a client is never cut off for the event being written. */
  exempt: number
  /** `queued` at the last look, and since when it has not moved. */
  last: number
  still: number
  /** When an event was last written, or the source last asked to look at its task. */
  active: number
}

/**
 * Bytes a stream may have handed to grpc-js and not yet sent before its source holds (and coalesces) events; past
 * CONTRACT.md §7's 1 MiB held and queued, the client is cut off. (grpc-js counts messages, not bytes.)
 */
const HIGH_WATER = 64 * 1024

const noop = (): void => {}

/** How often open streams are looked at for clients that stopped taking. */
const LOOK_MS = 1000
/**
 * A client is cut off for what waits for it only once it has taken nothing for this long, as over SSE
 * (plugins/sse.ts `STILL_MS`): one that reads is never cut off for being behind, nor one whose stream waits for
 * room in the answer budget (nothing of it is then in flight).
 */
const STILL_MS = 2000

export class GrpcStreams {
  readonly #codec: ProtoCodec
  readonly #budget: AnswerBudget
  readonly #watch: SessionWatch
  readonly #idleCheckMs: number
  readonly #open = new Set<OpenStream>()
  /** Streams ended whose client has not taken their last bytes yet: they hold their slots until it has. */
  readonly #flushing = new Set<OpenStream>()
  /** Set by `endAll` (shutdown): a stream opened later gets its snapshot and ends at once. */
  #ending = false
  #timer: NodeJS.Timeout | undefined

  constructor (opts: GrpcStreamsOptions) {
    this.#codec = opts.codec
    this.#budget = opts.budget
    this.#watch = opts.watch
    this.#idleCheckMs = opts.idleCheckMs
  }

  /** Open streams, and ended ones whose client has not taken their last bytes yet. */
  get size (): number {
    return this.#open.size + this.#flushing.size
  }

  /** Sends every open stream its task's current snapshot and ends it (shutdown); streams opened later end at once. */
  endAll (): void {
    this.#ending = true
    for (const open of [...this.#open]) this.#finish(open)
  }

  /** Writes the source's events to the call until the task settles, the client goes, or the server shuts down. */
  attach (call: ServerWritableStream<Json, unknown>, stream: ServerHttp2Stream, type: protobuf.Type, source: EventSource, release: () => void): void {
    // The client left (or its deadline passed) while the stream was being prepared: nothing is written.
    if (call.cancelled) {
      release()
      source.close()
      return
    }
    const open: OpenStream = {
      call, stream, connection: stream.session as object, type, source, queued: 0, blocked: false, taken: new Set(), reserved: null, waiting: null, exempt: 0, last: 0, still: Date.now(), active: Date.now()
    }
    this.#open.add(open)
    this.#timer ??= setInterval(() => this.#look(), LOOK_MS).unref()
    // A client that goes away, or whose deadline passes, only ends its stream: the task goes on (CONTRACT.md §6).
    call.once('cancelled', () => this.#drop(open))
    // The slots and the budget's bytes are given back once the HTTP/2 stream is closed: its client has taken the
    // last bytes and the trailers, or the stream is gone.
    stream.once('close', () => {
      this.#drop(open)
      this.#flushing.delete(open)
      for (const taken of open.taken) taken.release()
      release()
    })
    this.#watch.watch(stream)
    source.attach({
      write: json => this.#write(open, json),
      end: () => this.#end(open),
      queued: () => Math.max(0, open.queued - open.exempt),
      // The consumer let more than a reader ever may pile up: its stream is reset, the task goes on.
      abort: () => this.#cut(open),
      // One that stops reading is found by `#look`; one that reads may fall this far behind.
      limit: MAX_BEHIND_BYTES
    })
    if (this.#ending) this.#finish(open)
  }

  /**
   * Writes one event within the answer budget: true when the client keeps up, false when the source should wait
   * for `drain`, null when the budget had no room and nothing was written (the stream waits for room, then drains).
   * `force` writes whatever the room (the last snapshot at shutdown).
   */
  #write (open: OpenStream, json: string, force = false): boolean | null {
    const bytes = this.#codec.write(open.type, JSON.parse(json))
    const budget = this.#budget
    const reserved = open.reserved
    open.reserved = null
    const taken = reserved !== null
      ? budget.exchange(reserved, open.connection, bytes.length)
      : force ? budget.takeNow(open.connection, bytes.length) : budget.tryTake(open.connection, bytes.length)
    if (taken === null) {
      this.#wait(open, bytes.length)
      return null
    }
    if (open.queued === 0) open.exempt = bytes.length
    open.taken.add(taken)
    open.queued += bytes.length
    open.active = Date.now()
    open.call.write(bytes, () => this.#sent(open, taken))
    open.blocked = open.queued > HIGH_WATER
    return !open.blocked
  }

  /** The client's flow control has taken an event: its room goes back, and a waiting source writes what it held. */
  #sent (open: OpenStream, taken: Taken): void {
    open.queued -= taken.bytes
    if (open.queued === 0) open.exempt = 0
    open.taken.delete(taken)
    taken.release()
    if (open.blocked && open.queued <= HIGH_WATER && this.#open.has(open)) {
      open.blocked = false
      open.source.drain()
    }
  }

  /** Waits for room for `bytes` in the answer budget, then lets the source write what it held meanwhile. */
  #wait (open: OpenStream, bytes: number): void {
    // (Called once per refusal: the source holds its events until it is drained.)
    const waiting = new AbortController()
    open.waiting = waiting
    this.#budget.take(open.connection, bytes, waiting.signal).then(taken => {
      open.waiting = null
      open.reserved = taken
      open.source.drain()
      // Spent on the source's next write, or (nothing left to write) given back: releasing twice is a no-op.
      open.reserved = null
      taken.release()
    }, noop)
  }

  #finish (open: OpenStream): void {
    this.#write(open, open.source.snapshot(), true)
    this.#end(open)
  }

  /** Ends the stream; its slots are given back once its client has taken the last bytes (the stream's `close`). */
  #end (open: OpenStream): void {
    this.#flushing.add(open)
    this.#drop(open)
    open.call.end()
  }

  /** The client is not reading: its HTTP/2 stream is reset (what it holds is dropped; RESOURCE_EXHAUSTED). */
  #cut (open: OpenStream): void {
    this.#drop(open)
    resetStream(open.stream)
  }

  /** Stops writing the stream: it leaves the open ones, its source and any wait for room go. */
  #drop (open: OpenStream): void {
    if (!this.#open.delete(open)) return
    open.waiting?.abort()
    open.source.close()
    if (this.#open.size === 0) {
      clearInterval(this.#timer)
      this.#timer = undefined
    }
  }

  /**
   * CONTRACT.md §7: a client that does not read may have at most 1 MiB waiting for it. Cut off once it has taken
   * nothing for `STILL_MS` with more than that in flight and held, beyond the event being written. A stream with
   * nothing in flight and no event for `idleCheckMs` has its source look at its task.
   */
  #look (): void {
    const now = Date.now()
    for (const open of [...this.#open]) {
      if (open.queued === 0 || open.queued !== open.last) {
        open.last = open.queued
        open.still = now
      } else if (now - open.still >= STILL_MS && open.queued - open.exempt + heldBy(open.source) > MAX_QUEUED_BYTES) {
        this.#cut(open)
        continue
      }
      if (open.queued === 0 && now - open.active >= this.#idleCheckMs) {
        open.active = now
        open.source.check?.()
      }
    }
  }
}

/** What the source holds for its client: the methods' streams (TaskEventStream) all say. */
function heldBy (source: EventSource): number {
  return (source as Required<EventSource>).held()
}
