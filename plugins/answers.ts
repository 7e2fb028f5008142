import type { IncomingMessage, ServerResponse } from 'node:http'
import { constants, type ServerHttp2Stream } from 'node:http2'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyReply } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { AnswerBudget, closeSignal, stalledFor, type Stall, type Taken } from '../services/serving/answer-budget.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Bytes of answers in flight, bounded over every binding (`server.max_answer_bytes`, services/serving/answer-budget.ts). */
    a2aAnswers: AnswerBudget
    /** The HTTP side of it: answers sent within the budget, and responses whose client stopped taking them closed. */
    a2aReplies: HttpAnswers
  }
}

export interface AnswersPluginOptions {
  config: A2AConfig
}

/** How often responses with untaken bytes are looked at: one is closed at most this much past `server.write_timeout`. */
const WATCH_TICK_MS = 1000

/** The connection an HTTP request came on: its socket (HTTP/1), or its HTTP/2 session. */
export function connectionOf (req: IncomingMessage): object {
  const stream = (req as { stream?: { session?: object } }).stream
  return stream?.session ?? req.socket
}

/**
 * The client has gone: the HTTP/1 response or the HTTP/2 stream under it is destroyed. Its `close` has been emitted,
 * or is about to be: a listener added now may never run, so what it would give back is given back at once instead.
 */
export function gone (res: ServerResponse): boolean {
  return res.destroyed || (res as { stream?: { destroyed: boolean } }).stream?.destroyed === true
}

/** What `untaken` reads of an HTTP/1 socket: its handle's queue, and the write under way in its stream state. */
interface SocketInternals {
  _handle?: { writeQueueSize?: number } | null
  _writableState?: { writing?: boolean, writelen?: number }
}

/**
 * Bytes written to a response that its client has not taken yet: what waits in the response and its socket. On
 * HTTP/1 a write under way counts only what the socket's handle still holds of it (which shrinks as the client
 * reads), not its whole length: the socket's `writableLength` keeps the whole write until it is done, and counting
 * both counted a 24 MiB event twice (46 MB), so that a stream whose only untaken bytes were the event being written
 * was cut as a consumer too far behind (test/plugins/sse.test.ts, "a stream whose client takes nothing...").
 */
export function untaken (res: ServerResponse): number {
  if (res.req.httpVersionMajor === 2) return res.writableLength
  const socket = res.socket as SocketInternals | null
  const state = socket?._writableState
  const underWay = state?.writing === true ? state.writelen as number : 0
  return res.writableLength - underWay + (socket?._handle?.writeQueueSize ?? 0)
}

/**
 * Closes a response's connection at once, dropping what the client has not taken: an HTTP/1 socket is reset (a
 * closed one would keep its unsent bytes in the kernel, and its client would never see the end behind them); an
 * HTTP/2 stream is reset on its own.
 */
export function reset (res: ServerResponse): void {
  const h2 = (res as { stream?: ServerHttp2Stream }).stream
  if (h2 !== undefined) {
    h2.close(constants.NGHTTP2_CANCEL)
    return
  }
  const socket = res.socket as (Socket | null)
  if (socket !== null && !socket.destroyed) socket.resetAndDestroy()
  else res.destroy()
}

/**
 * The HTTP routes' answers within the answer budget, and the watch on responses whose client stopped taking them.
 */
export class HttpAnswers {
  readonly budget: AnswerBudget
  readonly #writeTimeoutMs: number
  readonly #log: FastifyBaseLogger
  readonly #watched = new Map<ServerResponse, Stall>()
  #timer: NodeJS.Timeout | undefined

  constructor (budget: AnswerBudget, writeTimeoutMs: number, log: FastifyBaseLogger) {
    this.budget = budget
    this.#writeTimeoutMs = writeTimeoutMs
    this.#log = log
  }

  /** Responses being watched. */
  get watching (): number {
    return this.#watched.size
  }

  /**
   * Sends a JSON answer once the budget has room for it, and gives the room back once the response is done (taken
   * by the client, or its connection gone). `serialize` runs again after a wait: a waiting answer holds its result,
   * not its bytes. `write` sends the JSON it is given (or what stands for it: its `length` is what it takes).
   */
  send<T extends { length: number } = string> (reply: FastifyReply, serialize: () => T, write: (json: T) => void): void {
    const res = reply.raw
    // The client left before its answer was ready (a request aborted mid-body is answered after its socket closed):
    // nothing is taken, or the room would be held for good, its response's `close` being past.
    if (gone(res)) return
    const connection = connectionOf(reply.request.raw)
    const json = serialize()
    const taken = this.budget.tryTake(connection, json.length)
    if (taken !== null) {
      this.#write(res, taken, json, write)
      return
    }
    const left = closeSignal(res, false)
    this.budget.take(connection, json.length, left.signal).then(taken => {
      left.stop()
      this.#write(res, taken, serialize(), write)
    }, () => {
      // The client left while its answer waited: nothing to send, and nothing was taken.
    })
  }

  #write<T> (res: ServerResponse, taken: Taken, json: T, write: (json: T) => void): void {
    /* c8 ignore next 4 -- the client leaving between its wait's grant and this write, within one turn: a race a test cannot time */
    if (gone(res)) {
      taken.release()
      return
    }
    write(json)
    // Taken whole by the kernel in this turn, as most answers are: nothing is in flight, nothing to watch. (A listener
    // and a watch for every answer cost 4 us of CPU per `message/send`, 2026-11-27.)
    if (res.writableEnded && untaken(res) === 0) {
      taken.release()
      return
    }
    res.once('close', taken.release)
    this.watch(res)
  }

  /**
   * Watches a response until it is done: once what was written to it stops moving for `server.write_timeout`, its
   * connection is closed (a client that stopped reading holds no socket and no memory). A stream's heartbeats must
   * not be written while it has untaken bytes, or they would count as moving.
   */
  watch (res: ServerResponse): void {
    if (res.writableFinished || res.destroyed || this.#watched.has(res)) return
    this.#watched.set(res, { last: untaken(res), since: Date.now() })
    res.once('close', () => this.#watched.delete(res))
    this.#timer ??= setInterval(() => this.#look(), WATCH_TICK_MS).unref()
  }

  #look (): void {
    const now = Date.now()
    for (const [res, watched] of this.#watched) {
      const bytes = untaken(res)
      if (stalledFor(watched, bytes, now, this.#writeTimeoutMs)) {
        this.#watched.delete(res)
        this.#log.info({ untaken: bytes }, 'connection closed: its client took nothing of what was written within server.write_timeout')
        reset(res)
      }
    }
    if (this.#watched.size === 0) this.close()
  }

  close (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }
}

/** The one answer budget of this agent, which the HTTP routes, the SSE hub and the gRPC binding share. */
const answersPlugin: FastifyPluginAsync<AnswersPluginOptions> = async (fastify, opts) => {
  const { server } = opts.config
  const budget = new AnswerBudget({
    maxBytes: server.max_answer_bytes,
    maxBytesPerConnection: server.max_answer_bytes_per_connection
  })
  const replies = new HttpAnswers(budget, server.write_timeout * 1000, fastify.log.child({ component: 'answers' }))
  fastify.decorate('a2aAnswers', budget)
  fastify.decorate('a2aReplies', replies)
  fastify.addHook('onClose', async () => replies.close())
}

export default fp(answersPlugin, { name: 'a2a-answers', fastify: '5.x' })
