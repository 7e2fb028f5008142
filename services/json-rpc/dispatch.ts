import type { Logger } from '../kernel/logger.js'
import { isThenable, type MaybePromise } from '../kernel/maybe-promise.js'
import type { Principal } from '../auth/principal.js'
import { missingScopes } from '../auth/principal.js'
import { JsonRpcError, RpcCode, invalidParams, invalidRequest, methodNotFound } from '../kernel/errors.js'
import type { JsonRpcId, MethodRegistry, RegisteredMethod } from './registry.js'
import { errorData } from '../a2a/codec-v10.js'
import { isV10Method } from '../a2a/version.js'

/** A JSON-RPC request whose envelope passed CONTRACT.md §4. */
export interface JsonRpcRequest {
  readonly id: JsonRpcId
  readonly method: string
  readonly params: unknown
}

export interface JsonRpcSuccess { jsonrpc: '2.0', id: JsonRpcId, result: unknown }
export interface JsonRpcFailure { jsonrpc: '2.0', id: JsonRpcId, error: { code: number, message: string, data?: unknown } }
export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure

/** Nesting deeper than this is an invalid request (CONTRACT.md §4). */
export const MAX_DEPTH = 64

/**
 * Checks the envelope. Throws a -32600 JsonRpcError carrying the id when it can be trusted (`err.id`), else null.
 */
export function parseEnvelope (body: unknown): JsonRpcRequest {
  if (Array.isArray(body)) throw withId(invalidRequest('batch requests are not supported'), null)
  if (typeof body !== 'object' || body === null) throw withId(invalidRequest('the request must be a JSON object'), null)
  const req = body as Record<string, unknown>
  const id = Object.hasOwn(req, 'id') ? req.id : null
  if (!(id === null || typeof id === 'string' || Number.isSafeInteger(id))) {
    throw withId(invalidRequest('id: must be a string, an integer or null'), null)
  }
  const rid = id as JsonRpcId
  if (req.jsonrpc !== '2.0') throw withId(invalidRequest('jsonrpc: must be "2.0"'), rid)
  if (typeof req.method !== 'string') throw withId(invalidRequest('method: must be a string'), rid)
  const params = req.params
  if (params !== undefined && (typeof params !== 'object' || params === null)) {
    throw withId(invalidRequest('params: must be an object'), rid)
  }
  return { id: rid, method: req.method, params }
}

/** True when a parsed JSON value nests deeper than `max` (arrays and objects both count). */
export function tooDeep (value: unknown, max = MAX_DEPTH): boolean {
  return depthExceeds(value, max)
}

function depthExceeds (value: unknown, left: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (left === 0) return true
  if (Array.isArray(value)) {
    for (const item of value) if (depthExceeds(item, left - 1)) return true
    return false
  }
  for (const key in value) {
    if (depthExceeds((value as Record<string, unknown>)[key], left - 1)) return true
  }
  return false
}

/** An error that knows which request id to answer with. */
export type IdentifiedError = JsonRpcError & { id: JsonRpcId }

function withId (err: JsonRpcError, id: JsonRpcId): IdentifiedError {
  return Object.assign(err, { id })
}

/** A method found for a request, and its params as the handler takes them (decoded and validated). */
export interface Resolved {
  method: RegisteredMethod
  params: unknown
}

/**
 * Looks up the method, checks the caller's scopes and the params, and validates them. Throws JsonRpcErrors.
 * The insufficient-scope answer is the transport-level 403 of CONTRACT.md §9.
 */
export function resolveMethod (registry: MethodRegistry, req: JsonRpcRequest, principal: Principal): Resolved {
  const method = registry.get(req.method)
  if (method === undefined) throw methodNotFound(req.method)
  const missing = missingScopes(principal, method.scopes)
  if (missing.length > 0) throw insufficientScope(missing)
  if (method.validate !== undefined) return { method, params: method.validate(req.params) }
  if (Array.isArray(req.params)) throw invalidParams('params: must be an object')
  return { method, params: req.params }
}

export function insufficientScope (needed: readonly string[]): JsonRpcError {
  return new JsonRpcError(RpcCode.insufficientScope, 'Insufficient scope', `needs scope ${needed.join(' ')}`, 403, {
    'www-authenticate': `Bearer error="insufficient_scope", scope="${needed.join(' ')}"`
  })
}

export function success (id: JsonRpcId, result: unknown): JsonRpcSuccess {
  return { jsonrpc: '2.0', id, result }
}

/**
 * The error answer to a request. `method` is the request's method name, when known: a v1.0 method's errors carry
 * the v1.0 `data` (CONTRACT.md §11.4); every other method's keep the v0.3 form.
 */
export function failure (id: JsonRpcId, err: JsonRpcError, method?: string): JsonRpcFailure {
  const error: JsonRpcFailure['error'] = { code: err.code, message: err.message }
  if (method !== undefined && isV10Method(method)) error.data = errorData(err)
  else if (err.data !== undefined) error.data = err.data
  return { jsonrpc: '2.0', id, error }
}

/**
 * Any thrown value as the JsonRpcError the client sees. Unexpected errors become a generic -32603; their detail is
 * logged here, never sent (CONTRACT.md §4).
 */
export function toJsonRpcError (err: unknown, log: Logger, method?: string): JsonRpcError {
  if (err instanceof JsonRpcError) return err
  const code = (err as { code?: unknown } | null)?.code
  if (code === 'A2A_ERR_TASK_STORE_FULL' || code === 'A2A_ERR_STORAGE_UNAVAILABLE') {
    log.warn({ err, method }, 'storage refused a request')
    const data = code === 'A2A_ERR_TASK_STORE_FULL' ? 'task store is full' : 'storage unavailable'
    return new JsonRpcError(RpcCode.internalError, 'Internal error', data, 503, { 'retry-after': '1' })
  }
  if (code === 'A2A_ERR_LIVE_TASK_LIMIT') {
    return new JsonRpcError(RpcCode.rateLimited, 'Too many unfinished tasks', 'tasks.max_live_per_principal reached', 429, { 'retry-after': '1' })
  }
  log.error({ err, method }, 'method failed')
  return new JsonRpcError(RpcCode.internalError, 'Internal error')
}

/** What a request came to: its response, and the error it answers with, if any. */
export interface Outcome {
  response: JsonRpcResponse
  error?: JsonRpcError
}

/**
 * Runs one request to its response. Errors never escape: they become the response. A handler that answers at once
 * (not through a promise) is answered at once, with no promise made on the way. `headers`: the HTTP request's (its
 * trace context); `extensions`: the ones it activated (docs/protocol.md, "Extensions").
 */
export function dispatch (registry: MethodRegistry, req: JsonRpcRequest, principal: Principal, log: Logger, headers?: object,
  extensions?: readonly string[]): MaybePromise<Outcome> {
  let result: unknown
  try {
    const { method, params } = resolveMethod(registry, req, principal)
    result = method.handler(params, headers === undefined ? { principal, log, id: req.id } : { principal, log, id: req.id, headers, extensions })
  } catch (err) {
    return failed(req, err, log)
  }
  if (isThenable(result)) return Promise.resolve(result).then(value => succeeded(req.id, value), (err: unknown) => failed(req, err, log))
  return succeeded(req.id, result)
}

function succeeded (id: JsonRpcId, result: unknown): Outcome {
  return { response: success(id, result === undefined ? null : result) }
}

function failed (req: JsonRpcRequest, err: unknown, log: Logger): Outcome {
  const error = toJsonRpcError(err, log, req.method)
  return { response: failure(req.id, error, req.method), error }
}
