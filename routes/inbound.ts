import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify'
import { closeSignal, type Taken } from '../services/serving/answer-budget.js'
import { JsonRpcError, RpcCode } from '../services/kernel/errors.js'
import type { RequestBudget } from '../services/serving/request-budget.js'
import { connectionOf, gone } from '../plugins/answers.js'

// Request bodies within the request budget (services/serving/request-budget.ts) on the JSON-RPC and HTTP+JSON routes: a body
// takes its size before it is read, and gives it back once its operation has the message, or its response ended.

declare module 'fastify' {
  interface FastifyRequest {
    /** The bytes this request's body took from the request budget, until its operation has the message. */
    a2aInbound: Taken | null
  }
}

/**
 * How long a request waits for room before it is refused (and never past `server.request_timeout`): long enough for
 * the requests ahead of it to be handed to their operations, short enough that a refused client retries elsewhere.
 */
export const REQUEST_WAIT_MS = 2000

/** 503 with Retry-After, as a storage outage is answered (CONTRACT.md §8.1): the client may retry, here or elsewhere. */
export function requestBudgetFull (): JsonRpcError {
  return new JsonRpcError(RpcCode.internalError, 'Internal error', 'server busy: too many request bytes in flight (server.max_request_bytes)', 503, { 'retry-after': '1' })
}

/**
 * The preParsing hook: takes the body's size (its `content-length`; a chunked body counts as the limit) before the
 * body is read, waiting up to `waitMs` for room. A body larger than the limit is left to the 413 that refuses it
 * unread; a request with no body takes nothing. A hook with a callback, and no abort signal unless the request must
 * wait: an async hook with its signal on every request cost 7 us of CPU per `message/send` (2026-11-27, bench).
 */
export function takeRequestBytes (budget: RequestBudget, bodyLimit: number, waitMs: number): preParsingHookHandler {
  return function (request, reply, payload, done) {
    const header = request.headers['content-length']
    const chunked = header === undefined && request.headers['transfer-encoding'] !== undefined
    const length = chunked ? bodyLimit : Number(header ?? 0)
    if (!(length > 0 && length <= bodyLimit)) {
      done(null, payload)
      return
    }
    const res = reply.raw
    const connection = connectionOf(request.raw)
    const now = budget.tryTake(connection, length, false)
    if (now !== null) {
      hold(request, res, now)
      done(null, payload)
      return
    }
    const left = closeSignal(res, gone(res))
    budget.take(connection, length, waitMs, left.signal).then(taken => {
      left.stop()
      if (taken === null) {
        // Its body is left unread: the connection is closed once the refusal is sent, rather than kept for the body.
        if (request.raw.httpVersionMajor !== 2) reply.header('connection', 'close')
        done(requestBudgetFull())
        return
      }
      hold(request, res, taken)
      done(null, payload)
    }, done)
  }
}

/** The request holds `taken` until its operation has the message (`received`) or its response is done. */
function hold (request: FastifyRequest, res: FastifyReply['raw'], taken: Taken): void {
  request.a2aInbound = taken
  // A client gone before its bytes were taken (its `close` past): they are given back now, not held for good.
  if (gone(res)) taken.release()
  else res.once('close', taken.release)
}

/** The request's operation has its message (or failed): its body's bytes are given back. Idempotent. */
export function received (request: FastifyRequest): void {
  const taken = request.a2aInbound
  if (taken === null) return
  request.a2aInbound = null
  taken.release()
}
