import type { FastifyError, FastifyRequest } from 'fastify'
import sjson from 'secure-json-parse'
import { JsonRpcError, RpcCode, invalidParams } from '../services/errors.js'
import { countItems } from '../services/json-rpc/body-scan.js'
import { toJsonRpcError, tooDeep } from '../services/json-rpc/dispatch.js'

// What the JSON-RPC and HTTP+JSON route contexts share: reading a JSON body, and the error a failure of the
// transport (a body too large, of another type, unreadable) or of authentication's storage comes to.

/** `application/json` and `application/*+json`, with or without parameters (CONTRACT.md §3). */
export const JSON_TYPE = /^application\/(?:[\w!#$&^.-]+\+)?json(?:\s*;|$)/i

const parseError = (data: string) => new JsonRpcError(RpcCode.parseError, 'Parse error', data, 400)

/**
 * Object keys and array items a body may carry beyond three times `tasks.max_keys`: the envelope, `configuration` and a
 * push config (a message's own keys are checked exactly after parsing, services/a2a/operations.ts).
 */
export const ENVELOPE_ITEMS = 1024

/**
 * The JSON body parser of the A2A routes, for a message of at most `maxKeys` object keys and array items
 * (`tasks.max_keys`). A body with more than three times that (the count before parsing is an upper bound within three
 * times the real one) plus `ENVELOPE_ITEMS` is refused unparsed with -32602: parsing it, walking it and answering it is what
 * blocked the event loop for seconds (services/json-rpc/body-scan.ts). `__proto__` and `constructor.prototype` keys
 * are dropped while parsing, so nothing downstream can be tricked into changing a prototype.
 */
export function jsonBodyParser (maxKeys: number): (req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => void {
  const maxItems = 3 * maxKeys + ENVELOPE_ITEMS
  return function parseJsonBody (_req, body, done) {
    if (countItems(body, maxItems) > maxItems) {
      done(Object.assign(invalidParams(`the request carries more object keys and array items than a message may (tasks.max_keys: ${maxKeys})`), { id: null }))
      return
    }
    let value: unknown
    try {
      value = sjson.parse(body, null, { protoAction: 'remove', constructorAction: 'remove' })
    } catch {
      done(parseError('the body is not valid JSON'))
      return
    }
    // Cheap now: the walk visits at most the items counted above.
    if (tooDeep(value)) {
      done(Object.assign(new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'nesting is deeper than 64 levels'), { id: null }))
      return
    }
    done(null, value)
  }
}

/** Transport-level refusals by Fastify itself, mapped to JSON-RPC bodies (CONTRACT.md §3 and §4). */
function frameworkError (err: FastifyError): JsonRpcError {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'the body is larger than the limit', 413)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'Content-Type must be application/json', 415)
    default:
      return new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'the request could not be read', 400)
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** An authentication refusal held until the body is read (routes/json-rpc.ts, `REFUSAL_READ_LIMIT`). */
    a2aRefusal: Error | null
  }
}

/**
 * The error a failure of an A2A route context answers with (its id, when it is known, is on the error). A refusal
 * held until the body was read is the answer, whatever reading the body then came to.
 */
export function routeError (failed: FastifyError | JsonRpcError, request: FastifyRequest): JsonRpcError {
  const err = (request.a2aRefusal as JsonRpcError | null) ?? failed
  if (err instanceof JsonRpcError) return err
  // Redis failing under the auth hook's limits: the documented 503 with Retry-After, as in a method (CONTRACT.md §8.1).
  if (err.code === 'A2A_ERR_STORAGE_UNAVAILABLE') return toJsonRpcError(err, request.log)
  if (typeof err.statusCode === 'number' && err.statusCode < 500) return frameworkError(err)
  request.log.error({ err }, 'json-rpc route failed')
  return new JsonRpcError(RpcCode.internalError, 'Internal error')
}
