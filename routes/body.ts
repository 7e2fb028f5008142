import type { FastifyError, FastifyRequest } from 'fastify'
import sjson from 'secure-json-parse'
import { JsonRpcError, RpcCode } from '../services/errors.js'
import { toJsonRpcError, tooDeep } from '../services/json-rpc/dispatch.js'

// What the JSON-RPC and HTTP+JSON route contexts share: reading a JSON body, and the error a failure of the
// transport (a body too large, of another type, unreadable) or of authentication's storage comes to.

/** `application/json` and `application/*+json`, with or without parameters (CONTRACT.md §3). */
export const JSON_TYPE = /^application\/(?:[\w!#$&^.-]+\+)?json(?:\s*;|$)/i

const parseError = (data: string) => new JsonRpcError(RpcCode.parseError, 'Parse error', data, 400)

/**
* Parses JSON bodies for the A2A routes only. `__proto__` and `constructor.prototype` keys are dropped while
 * parsing, so nothing downstream can be tricked into changing a prototype.
 */
export function parseJsonBody (_req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void): void {
  let value: unknown
  try {
    value = sjson.parse(body, null, { protoAction: 'remove', constructorAction: 'remove' })
  } catch {
    done(parseError('the body is not valid JSON'))
    return
  }
  if (tooDeep(value)) {
    done(Object.assign(new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'nesting is deeper than 64 levels'), { id: null }))
    return
  }
  done(null, value)
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
