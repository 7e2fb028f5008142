// How a REST route reads its method's params from the request: the query string, the body and the path's segments.
import type { FastifyRequest } from 'fastify'
import { JsonRpcError, RpcCode } from '../services/kernel/errors.js'

/** A route's params, from the request, for the v1.0 method it frames. */
export type Params = (request: FastifyRequest) => Record<string, unknown>

/** Query parameters that are numbers or booleans in the method's params; others stay strings (and fail there). */
const INTEGERS = new Set(['historyLength', 'pageSize'])
const BOOLEANS = new Set(['includeArtifacts'])

/** The query string as the method's params: integers and booleans read from their text, the rest as sent. */
export function queryParams (request: FastifyRequest): Record<string, unknown> {
  const query = request.query as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(query)) {
    if (key === 'A2A-Version') continue
    const value = query[key]
    if (typeof value === 'string' && INTEGERS.has(key) && /^-?\d{1,9}$/.test(value)) out[key] = Number(value)
    else if (typeof value === 'string' && BOOLEANS.has(key) && (value === 'true' || value === 'false')) out[key] = value === 'true'
    else out[key] = value
  }
  return out
}

/** The request body as an object: absent, empty and `null` are `{}` (no body needed, CONTRACT.md §12). */
export function bodyOf (request: FastifyRequest): Record<string, unknown> {
  const body = request.body
  if (body === undefined || body === null) return {}
  if (typeof body !== 'object' || Array.isArray(body)) throw new JsonRpcError(RpcCode.invalidParams, 'Invalid params', 'params: the body must be a JSON object')
  return body as Record<string, unknown>
}

/** A POST's params with the `metadata` of its body, when it has one (`:subscribe`: `metadata.lastEventId`). */
export function withMetadata (request: FastifyRequest, params: Record<string, unknown>): Record<string, unknown> {
  if (request.method !== 'POST') return params
  const { metadata } = bodyOf(request)
  return metadata === undefined ? params : { ...params, metadata }
}

const notFound = (what: string) => new JsonRpcError(RpcCode.methodNotFound, 'Not found', what)

/** `/tasks/{id}`, `/tasks/{id}:cancel`, `/tasks/{id}:subscribe`: one route, the verb after the last colon (ids never hold one). */
export function splitVerb (segment: string): { id: string, verb: string | undefined } {
  const colon = segment.lastIndexOf(':')
  return colon < 0 ? { id: segment, verb: undefined } : { id: segment.slice(0, colon), verb: segment.slice(colon + 1) }
}

/** The task id of a `/tasks/:task/...` route. */
export function taskOf (request: FastifyRequest): string {
  return (request.params as { task: string }).task
}

/** The params of a route naming one push config of a task. */
export function configParams (request: FastifyRequest): Record<string, unknown> {
  const { task, config } = request.params as { task: string, config: string }
  return { taskId: task, id: config }
}

/** 404 for a verb or method that `/tasks/{id}` does not serve. */
export function unknownVerb (request: FastifyRequest, verb: string | undefined, at = ''): JsonRpcError {
  return notFound(`${request.method} ${at}/tasks/{id}${verb === undefined ? '' : ':' + verb} is not a route of this server`)
}
