import type { IncomingMessage } from 'node:http'
import { StringDecoder } from 'node:string_decoder'
import { errorCodes, type FastifyError, type FastifyRequest } from 'fastify'
import sjson from 'secure-json-parse'
import { JsonRpcError, RpcCode, invalidParams } from '../services/kernel/errors.js'
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
export function jsonTextParser (maxKeys: number): (req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => void {
  const maxItems = 3 * maxKeys + ENVELOPE_ITEMS
  return function parseJsonBody (_req, body, done) {
    // Each item counted is a character of the body: one of no more characters than the limit needs no count.
    if (body.length > maxItems && countItems(body, maxItems) > maxItems) {
      done(Object.assign(invalidParams(`the request carries more object keys and array items than a message may (tasks.max_keys: ${maxKeys})`), { id: null }))
      return
    }
    if (body.length > SPLIT_AT) afterIo(() => parse(body, done))
    else parse(body, done)
  }
}

/**
 * A body of more characters than this is parsed in a later turn than the one that counted its items, with the I/O of
 * a turn between: 16 MiB of escapes took 19 to 40 ms to count and 35 to 76 ms to parse (2-core machine, 2026-11-27).
 */
const SPLIT_AT = 1 << 20

/** Runs `fn` once the event loop has handled the I/O that came meanwhile (the second `setImmediate` comes after it). */
function afterIo (fn: () => void): void {
  setImmediate(() => setImmediate(fn))
}

/** What secure-json-parse does with `__proto__` and `constructor.prototype` keys: drops them. */
const DROP_PROTO = { protoAction: 'remove', constructorAction: 'remove' } as const

/**
 * Parses a counted body, dropping `__proto__` and `constructor.prototype` keys. Up to `SPLIT_AT` characters by
 * secure-json-parse's `parse`: `JSON.parse`, then two regular expressions over the text, and the walk that drops the
 * keys only where they found one (walking every body cost 2 us of CPU per `message/send`, 2026-11-27). Larger, by
 * `JSON.parse` and the walk: the regular expressions took 17 ms over 16 MiB of escapes, while the walk visits at
 * most the items counted, under 1 ms for 10,000. A byte order mark is dropped either way.
 */
function parse (body: string, done: (err: Error | null, value?: unknown) => void): void {
  const large = body.length > SPLIT_AT
  let value: unknown
  try {
    value = large ? JSON.parse(body.charCodeAt(0) === 0xfeff ? body.slice(1) : body) : sjson.parse(body, undefined, DROP_PROTO)
  } catch {
    done(parseError('the body is not valid JSON'))
    return
  }
  if (large && value !== null && typeof value === 'object') sjson.scan(value, DROP_PROTO)
  // Cheap now: the walk visits at most the items counted above.
  if (tooDeep(value)) {
    done(Object.assign(new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'nesting is deeper than 64 levels'), { id: null }))
    return
  }
  done(null, value)
}

/**
 * The JSON body parser of the A2A routes as Fastify takes a parser of the request's stream: the body read up to
 * `bodyLimit` bytes (`server.max_request_size`) and decoded as it comes, then parsed by `jsonTextParser`. With
 * `emptyIsNone` (REST: `:cancel`, `:subscribe` and the GETs need no body) an empty body is `undefined`, else it is
 * not valid JSON. Decoded a chunk at a time because Fastify's `parseAs: 'string'` decodes the whole body at the
 * end, in the turn that then parses it: 16 MiB of three-byte characters took 85 ms to decode at once, well under
 * 1 ms a 64 KiB chunk (2-core machine, 2026-11-27). Refusals are Fastify's own errors, answered as before.
 */
export function jsonBodyParser (maxKeys: number, bodyLimit: number, emptyIsNone = false): (req: FastifyRequest, payload: IncomingMessage, done: (err: Error | null, value?: unknown) => void) => void {
  const parse = jsonTextParser(maxKeys)
  return function readJsonBody (request, payload, done) {
    const length = Number(request.headers['content-length'])
    if (length > bodyLimit) {
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())
      return
    }
    const decoder = new StringDecoder('utf8')
    let text = ''
    let received = 0
    const stop = (): void => {
      payload.off('data', onData)
      payload.off('end', onEnd)
      payload.off('error', onError)
    }
    function onData (chunk: Buffer): void {
      received += chunk.length
      if (received > bodyLimit) {
        stop()
        done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())
        return
      }
      text += decoder.write(chunk)
    }
    function onEnd (): void {
      stop()
      if (!Number.isNaN(length) && received !== length) {
        done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH())
        return
      }
      text += decoder.end()
      if (emptyIsNone && text === '') done(null, undefined)
      else parse(request, text, done)
    }
    // The client left, or its body broke off: answered (if anyone still listens) as a body that could not be read.
    function onError (err: Error): void {
      stop()
      done(Object.assign(err, { statusCode: 400 }))
    }
    payload.on('data', onData)
    payload.on('end', onEnd)
    payload.on('error', onError)
    payload.resume()
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
