import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Principal } from '../services/auth/principal.js'
import { auditCall } from '../plugins/auth.js'
import { errorData } from '../services/a2a/codec-v10.js'
import { JsonRpcError, RpcCode } from '../services/errors.js'
import { resolveMethod, toJsonRpcError } from '../services/json-rpc/dispatch.js'
import { versionRefusal } from '../services/a2a/version.js'
import type { EventSource } from '../plugins/sse.js'
import { Outbox } from '../services/json-rpc/outbox.js'
import { JSON_TYPE, parseJsonBody, routeError } from './body.js'

// The HTTP+JSON (REST) binding of A2A v1.0 (CONTRACT.md §12): routes at the prefix root, each a thin frame around
// the v1.0 method of the same operation. A route builds that method's params from its path, query and body; the
// method decodes, checks scopes, calls the operation and encodes, exactly as over JSON-RPC. Registered inside the
// JSON-RPC route context, it shares its authentication, limits and refusals.

export interface RestRoutesOptions {
  /** `server.max_request_size`. */
  bodyLimit: number
  /** Whether security is on: audit lines are written then. */
  secured: boolean
}

/** The answers' media type (CONTRACT.md §12). */
const A2A_JSON = 'application/a2a+json'

/** A route's params, from the request, for the v1.0 method it frames. */
type Params = (request: FastifyRequest) => Record<string, unknown>

/** A `google.rpc.Status` code name per HTTP status of a refusal (CONTRACT.md §12). */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE'
}

/** The HTTP status of an A2A error on a REST route (CONTRACT.md §12). */
export function restStatus (err: JsonRpcError): number {
  if (err.httpStatus !== 200) return err.httpStatus
  switch (err.code) {
    case RpcCode.taskNotFound:
    case RpcCode.methodNotFound:
      return 404
    case RpcCode.internalError:
    case RpcCode.invalidAgentResponse:
      return 500
    default:
      return 400
  }
}

/** An A2A error as the `google.rpc.Status` body of a v1.0 REST answer. */
export function statusBody (err: JsonRpcError): { error: { code: number, status: string, message: string, details: unknown[] } } {
  const http = restStatus(err)
  // -32002..-32005 and -32007..-32009 are preconditions the request did not meet; bad input is INVALID_ARGUMENT.
  const status = http === 400 && !BAD_INPUT.has(err.code) ? 'FAILED_PRECONDITION' : STATUS_NAMES[http] ?? 'INTERNAL'
  const detail = typeof err.data === 'string' ? `: ${err.data}` : ''
  return { error: { code: http, status, message: err.message + detail, details: errorData(err) } }
}

const BAD_INPUT: ReadonlySet<number> = new Set([RpcCode.invalidParams, RpcCode.invalidRequest, RpcCode.parseError])

/** Query parameters that are numbers or booleans in the method's params; others stay strings (and fail there). */
const INTEGERS = new Set(['historyLength', 'pageSize'])
const BOOLEANS = new Set(['includeArtifacts'])

/** The query string as the method's params: integers and booleans read from their text, the rest as sent. */
function queryParams (request: FastifyRequest): Record<string, unknown> {
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
function bodyOf (request: FastifyRequest): Record<string, unknown> {
  const body = request.body
  if (body === undefined || body === null) return {}
  if (typeof body !== 'object' || Array.isArray(body)) throw new JsonRpcError(RpcCode.invalidParams, 'Invalid params', 'params: the body must be a JSON object')
  return body as Record<string, unknown>
}

const notFound = (what: string) => new JsonRpcError(RpcCode.methodNotFound, 'Not found', what)

/** `/tasks/{id}`, `/tasks/{id}:cancel`, `/tasks/{id}:subscribe`: one route, the verb after the last colon (ids never hold one). */
function splitVerb (segment: string): { id: string, verb: string | undefined } {
  const colon = segment.lastIndexOf(':')
  return colon < 0 ? { id: segment, verb: undefined } : { id: segment.slice(0, colon), verb: segment.slice(colon + 1) }
}

const restRoutes: FastifyPluginAsync<RestRoutesOptions> = async (fastify, opts) => {
  // JSON in both spellings; an empty body is no body (`:cancel`, `:subscribe` and the GETs need none).
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(JSON_TYPE, { parseAs: 'string', bodyLimit: opts.bodyLimit },
    (request, body, done) => {
      if (body === '') {
        done(null, undefined)
        return
      }
      parseJsonBody(request, body as string, done)
    })

  const registry = fastify.a2aMethods
  const streams = fastify.a2aStreams
  const audit = fastify.a2aAudit

  fastify.setErrorHandler(async function (err: FastifyError | JsonRpcError, request, reply) {
    return answerError(request, reply, routeError(err, request))
  })

  function answerError (request: FastifyRequest, reply: FastifyReply, error: JsonRpcError): FastifyReply {
    const body = statusBody(error)
    if (error.headers !== undefined) reply.headers(error.headers)
    observe(reply, error.code)
    if (error.code === RpcCode.insufficientScope) audited(request, error)
    return reply.code(body.error.code).type(A2A_JSON).send(JSON.stringify(body))
  }

  /** Counts the call in the metrics, under its v1.0 method name (unknown until the route has named it). */
  function observe (reply: FastifyReply, code: number): void {
    fastify.a2aMetrics?.rpc(reply.request.a2aRest ?? undefined, code, reply.elapsedTime / 1000)
  }

  /** The audit line of an authenticated call, under the v1.0 method the route runs (CONTRACT.md §9). */
  function audited (request: FastifyRequest, error?: JsonRpcError): void {
    if (opts.secured) auditCall(audit, request, request.a2aRest as string, error?.data)
  }

  fastify.decorateRequest('a2aRest', null)
  fastify.addHook('onRequest', function (request, _reply, done) {
    // CONTRACT.md §11.1: an A2A-Version this server does not speak is refused (HTTP 400 FAILED_PRECONDITION).
    done(versionRefusal(request.headers['a2a-version'], request.query))
  })

  // Answers leave together at the end of the event loop's turn, as JSON-RPC answers do (services/json-rpc/outbox.ts:
  // a client woken once per turn, not once per answer). One that cannot be sent becomes its request's error.
  const outbox = new Outbox<{ reply: FastifyReply, status: number, body: string | undefined }>(
    ({ reply, status, body }) => {
      if (body === undefined) reply.code(status).send()
      else reply.code(status).type(A2A_JSON).send(body)
    },
    ({ reply }, err) => reply.send(err))

  /** Runs the v1.0 method `name` with `params` and answers its result with `status` (204: no body). */
  async function call (request: FastifyRequest, reply: FastifyReply, name: string, params: Record<string, unknown>, status = 200): Promise<FastifyReply> {
    request.a2aRest = name
    const principal = request.a2aPrincipal as Principal
    const resolved = resolveMethod(registry, { id: null, method: name, params }, principal)
    audited(request)
    const result = await resolved.method.handler(resolved.params, { principal, log: request.log, id: null })
    observe(reply, 0)
    outbox.push({ reply, status, body: status === 204 ? undefined : JSON.stringify(result) })
    // The reply itself tells Fastify that the answer is on its way: it sends nothing in its place.
    return reply
  }

  /**
   * Runs a streaming v1.0 method: SSE `data: <StreamResponse>` events (no JSON-RPC envelope). Refusals and errors
   * found before the first event are plain HTTP errors (CONTRACT.md §12).
   */
  async function stream (request: FastifyRequest, reply: FastifyReply, name: string, params: Record<string, unknown>): Promise<FastifyReply> {
    request.a2aRest = name
    const principal = request.a2aPrincipal as Principal
    const claim = streams.claim()
    let source: EventSource
    try {
      const resolved = resolveMethod(registry, { id: null, method: name, params }, principal)
      await claim.own(principal.id)
      audited(request)
      source = await resolved.method.handler(resolved.params, { principal, log: request.log, id: null }) as EventSource
    } catch (err) {
      claim.release()
      throw toJsonRpcError(err, request.log, name)
    }
    observe(reply, 0)
    streams.open(reply, undefined, source, claim.release)
    return reply
  }

  const routes: Array<{ method: 'GET' | 'POST' | 'DELETE', url: string, rpc: string, params: Params, status?: number, streaming?: boolean }> = [
    { method: 'POST', url: '/message::send', rpc: 'SendMessage', params: bodyOf },
    { method: 'POST', url: '/message::stream', rpc: 'SendStreamingMessage', params: bodyOf, streaming: true },
    { method: 'GET', url: '/tasks', rpc: 'ListTasks', params: queryParams },
    {
      method: 'POST',
      url: '/tasks/:task/pushNotificationConfigs',
      rpc: 'CreateTaskPushNotificationConfig',
      params: request => ({ ...bodyOf(request), taskId: (request.params as { task: string }).task }),
      status: 201
    },
    {
      method: 'GET',
      url: '/tasks/:task/pushNotificationConfigs',
      rpc: 'ListTaskPushNotificationConfigs',
      params: request => ({ ...queryParams(request), taskId: (request.params as { task: string }).task })
    },
    {
      method: 'GET',
      url: '/tasks/:task/pushNotificationConfigs/:config',
      rpc: 'GetTaskPushNotificationConfig',
      params: request => configParams(request)
    },
    {
      method: 'DELETE',
      url: '/tasks/:task/pushNotificationConfigs/:config',
      rpc: 'DeleteTaskPushNotificationConfig',
      params: request => configParams(request),
      status: 204
    },
    { method: 'GET', url: '/extendedAgentCard', rpc: 'GetExtendedAgentCard', params: () => ({}) }
  ]
  for (const route of routes) {
    fastify.route({
      method: route.method,
      url: route.url,
      bodyLimit: opts.bodyLimit,
      handler (request, reply) {
        const params = route.params(request)
        return route.streaming === true ? stream(request, reply, route.rpc, params) : call(request, reply, route.rpc, params, route.status)
      }
    })
  }

  // The OpenAPI 3.1 document of these routes, for any authenticated caller (as the card's extended form is).
  fastify.get('/openapi.json', function (request, reply) {
    if (opts.secured) auditCall(audit, request, 'GET /openapi.json')
    reply.type('application/json; charset=utf-8').send(fastify.a2aOpenApi().json)
  })

  // `/tasks/{id}` (GET: GetTask), `/tasks/{id}:cancel` (POST), `/tasks/{id}:subscribe` (GET and POST): one route
  // per method, the verb split off the segment. Fastify would read `/tasks/:id::cancel` as one parameter named
  // `id::cancel`, and `GET /tasks/:id::subscribe` clashes with `GET /tasks/:id` (CONTRACT.md §12).
  fastify.route({
    method: ['GET', 'POST'],
    url: '/tasks/:task',
    bodyLimit: opts.bodyLimit,
    handler (request, reply) {
      const { id, verb } = splitVerb((request.params as { task: string }).task)
      if (verb === 'subscribe') return stream(request, reply, 'SubscribeToTask', { id })
      if (request.method === 'GET' && verb === undefined) return call(request, reply, 'GetTask', { ...queryParams(request), id })
      if (request.method === 'POST' && verb === 'cancel') {
        const body = bodyOf(request)
        return call(request, reply, 'CancelTask', body.metadata === undefined ? { id } : { id, metadata: body.metadata })
      }
      throw notFound(`${request.method} /tasks/{id}${verb === undefined ? '' : ':' + verb} is not a route of this server`)
    }
  })
}

/** The params of a route naming one push config of a task. */
function configParams (request: FastifyRequest): Record<string, unknown> {
  const { task, config } = request.params as { task: string, config: string }
  return { taskId: task, id: config }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The v1.0 method a REST call runs, once known (metrics, audit). */
    a2aRest: string | null
  }
}

export default restRoutes
