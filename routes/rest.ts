import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Principal } from '../services/auth/principal.js'
import { auditCall } from '../plugins/auth.js'
import {
  decodeCreatePushConfig03, decodeSendRequest03, decodeState03, encodePushConfig03
} from '../services/a2a/codec-v03-rest.js'
import type { TaskPushNotificationConfig } from '../schemas/push-config.js'
import { JsonRpcError, RpcCode } from '../services/kernel/errors.js'
import { resolveMethod, toJsonRpcError } from '../services/json-rpc/dispatch.js'
import type { MethodContext } from '../services/json-rpc/registry.js'
import { majorMinor, versionRefusal } from '../services/a2a/version.js'
import type { EventSource } from '../plugins/sse.js'
import { Outbox } from '../services/json-rpc/outbox.js'
import { JSON_TYPE, jsonBodyParser, routeError } from './body.js'
import { received } from './inbound.js'
import { echoExtensions, sendJson } from './answer.js'
import { restStatus, statusBody, v03ErrorBody } from './rest-errors.js'
import {
  type Params, bodyOf, configParams, queryParams, splitVerb, taskOf, unknownVerb, withMetadata
} from './rest-params.js'

export { restStatus, statusBody, v03ErrorBody } from './rest-errors.js'

// The HTTP+JSON (REST) binding (CONTRACT.md §12): A2A v1.0 routes at the prefix root (and under `/<tenant>/`), A2A
// v0.3 routes under `/v1/`. Each route is a thin frame around the JSON-RPC method of the same operation and version:
// it builds that method's params from its path, query and body; the method checks scopes, calls the operation and
// encodes, exactly as over JSON-RPC (a v0.3 route asks for the v0.3 proto's form, `wire: 'rest03'`). Registered
// inside the JSON-RPC route context, it shares its authentication, limits and refusals.

export interface RestRoutesOptions {
  /** `server.max_request_size`. */
  bodyLimit: number
  /** `tasks.max_keys`: object keys and array items of a message (routes/body.ts). */
  maxKeys: number
  /** Whether security is on: audit lines are written then. */
  secured: boolean
  /** `protocol.tenant`: the v1.0 routes are also served under `/<tenant>/`. */
  tenant?: string
  /** Answers the public card (as the well-known URL does): `GET /v1/card` without credentials. */
  card: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>
}

/** The answers' media type (CONTRACT.md §12). */
const A2A_JSON = 'application/a2a+json'

/** How a route answers: its success status (204: no body), and for v0.3 routes the proto form of the result. */
interface Answering {
  status?: number
  /** `rest03`: a `/v1` route, whose method answers in the v0.3 proto form. */
  wire?: 'rest03'
  /** Turns the method's result into the route's body (v0.3 push configs). */
  encode?: (result: unknown) => unknown
}

/** A v1.0 route: its method, its path after the prefix (and tenant), and how it builds the params. */
interface RestRoute {
  method: 'GET' | 'POST' | 'DELETE'
  url: string
  rpc: string
  params: Params
  status?: number
  streaming?: boolean
}

const restRoutes: FastifyPluginAsync<RestRoutesOptions> = async (fastify, opts) => {
  // JSON in both spellings; an empty body is no body (`:cancel`, `:subscribe` and the GETs need none).
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(JSON_TYPE, jsonBodyParser(opts.maxKeys, opts.bodyLimit, true))

  const registry = fastify.a2aMethods
  const streams = fastify.a2aStreams
  const audit = fastify.a2aAudit
  // A `/v1` route is known by its path: Fastify builds `request.routeOptions` afresh on each read.
  const v03Paths = `${fastify.prefix}/v1/`
  const isV03 = (request: FastifyRequest): boolean => request.url.startsWith(v03Paths)

  fastify.setErrorHandler(async function (err: FastifyError | JsonRpcError, request, reply) {
    return answerError(request, reply, routeError(err, request))
  })

  /** An error in the route's form: `google.rpc.Status` (v1.0), the JSON-RPC error object (`/v1`, v0.3). */
  function answerError (request: FastifyRequest, reply: FastifyReply, error: JsonRpcError): FastifyReply {
    const v03 = isV03(request)
    const status = restStatus(error)
    if (error.headers !== undefined) reply.headers(error.headers)
    observe(reply, error.code)
    if (error.code === RpcCode.insufficientScope) audited(request, error)
    return reply.code(status).type(A2A_JSON).send(JSON.stringify(v03 ? v03ErrorBody(error) : statusBody(error)))
  }

  /** Counts the call in the metrics, under its method name (unknown until the route has named it). */
  function observe (reply: FastifyReply, code: number): void {
    fastify.a2aMetrics?.rpc(reply.request.a2aRest ?? undefined, code, reply.elapsedTime / 1000)
  }

  /** The audit line of an authenticated call, under the method the route runs (CONTRACT.md §9). */
  function audited (request: FastifyRequest, error?: JsonRpcError): void {
    if (opts.secured) auditCall(audit, request, request.a2aRest as string, error?.data)
  }

  fastify.decorateRequest('a2aRest', null)
  fastify.addHook('onRequest', function (request, _reply, done) {
    // CONTRACT.md §11.1: an A2A-Version this server does not speak is refused (HTTP 400 FAILED_PRECONDITION). The
    // `/v1` routes serve v0.3: a v1.0 client is sent to the root.
    const refusal = versionRefusal(request.headers['a2a-version'], request.query)
    if (refusal === undefined && majorMinor(request.headers['a2a-version']) === '1.0' && isV03(request)) {
      done(new JsonRpcError(RpcCode.versionNotSupported, 'Version not supported',
        'the /v1 routes serve A2A 0.3; the A2A 1.0 routes are at the root (POST /message:send, ...)'))
      return
    }
    done(refusal)
  })

  // Answers leave together at the end of the event loop's turn, as JSON-RPC answers do (services/json-rpc/outbox.ts:
  // a client woken once per turn, not once per answer). One that cannot be sent becomes its request's error.
  // A body goes out within the answer budget (plugins/answers.ts): serialized when it is sent, again after a wait.
  const replies = fastify.a2aReplies
  function answer ({ reply, status, body }: { reply: FastifyReply, status: number, body?: { value: unknown } }): void {
    reply.code(status)
    if (body === undefined) reply.send()
    else sendJson(replies, reply, body.value, A2A_JSON)
  }
  const outbox = new Outbox(answer, ({ reply }, err) => reply.send(err))

  /**
   * The method's context for a call of this request, with the extensions it activates (docs/protocol.md,
   * "Extensions"), which the answer's header says back.
   */
  function contextOf (request: FastifyRequest, reply: FastifyReply, name: string, principal: Principal, wire?: 'rest03'): MethodContext {
    const extensions = registry.extensions.activate(request.headers, name)
    echoExtensions(reply, extensions, name)
    const ctx: { -readonly [K in keyof MethodContext]: MethodContext[K] } = { principal, log: request.log, id: null, binding: 'http+json', headers: request.headers, extensions }
    if (wire !== undefined) ctx.wire = wire
    const lastEventId = request.headers['last-event-id']
    if (lastEventId !== undefined) ctx.lastEventId = String(lastEventId)
    return ctx
  }

  /** Runs the method `name` with `params` and answers its result (CONTRACT.md §12: 200, 201 on create, 204 on delete). */
  async function call (request: FastifyRequest, reply: FastifyReply, name: string, params: Record<string, unknown>, answering: Answering = {}): Promise<FastifyReply> {
    request.a2aRest = name
    const principal = request.a2aPrincipal as Principal
    const resolved = resolveMethod(registry, { id: null, method: name, params }, principal)
    audited(request)
    let result: unknown
    try {
      result = await resolved.method.handler(resolved.params, contextOf(request, reply, name, principal, answering.wire))
    } finally {
      // The operation has the message: its body's bytes leave the request budget (routes/inbound.ts).
      received(request)
    }
    observe(reply, 0)
    const status = answering.status ?? 200
    const body = status === 204 ? undefined : { value: answering.encode === undefined ? result : answering.encode(result) }
    outbox.push({ reply, status, body })
    // The reply itself tells Fastify that the answer is on its way: it sends nothing in its place.
    return reply
  }

  /**
   * Runs a streaming method: SSE `data: <StreamResponse>` events (no JSON-RPC envelope). Refusals and errors found
   * before the first event are plain HTTP errors (CONTRACT.md §12).
   */
  async function stream (request: FastifyRequest, reply: FastifyReply, name: string, params: Record<string, unknown>, wire?: 'rest03'): Promise<FastifyReply> {
    request.a2aRest = name
    const principal = request.a2aPrincipal as Principal
    const claim = streams.claim()
    let source: EventSource
    try {
      const resolved = resolveMethod(registry, { id: null, method: name, params }, principal)
      await claim.own(principal.id)
      audited(request)
      source = await resolved.method.handler(resolved.params, contextOf(request, reply, name, principal, wire)) as EventSource
    } catch (err) {
      claim.release()
      throw toJsonRpcError(err, request.log, name)
    } finally {
      received(request)
    }
    observe(reply, 0)
    // CONTRACT.md §12: an error after the first event is one `event: error` with the route's error body.
    const body = (error: JsonRpcError) => JSON.stringify(isV03(request) ? v03ErrorBody(error) : statusBody(error))
    streams.open(reply, undefined, source, claim.release, error => `event: error\ndata: ${body(error)}\n\n`)
    return reply
  }

  // -------------------------------------------------------------------------------------------------------------
  // A2A v1.0, at the root and, with a tenant, under `/<tenant>/` (the path's tenant goes into the params).

  const routes: RestRoute[] = [
    { method: 'POST', url: '/message::send', rpc: 'SendMessage', params: bodyOf },
    { method: 'POST', url: '/message::stream', rpc: 'SendStreamingMessage', params: bodyOf, streaming: true },
    { method: 'GET', url: '/tasks', rpc: 'ListTasks', params: queryParams },
    {
      method: 'POST',
      url: '/tasks/:task/pushNotificationConfigs',
      rpc: 'CreateTaskPushNotificationConfig',
      params: request => ({ ...bodyOf(request), taskId: taskOf(request) }),
      status: 201
    },
    {
      method: 'GET',
      url: '/tasks/:task/pushNotificationConfigs',
      rpc: 'ListTaskPushNotificationConfigs',
      params: request => ({ ...queryParams(request), taskId: taskOf(request) })
    },
    { method: 'GET', url: '/tasks/:task/pushNotificationConfigs/:config', rpc: 'GetTaskPushNotificationConfig', params: configParams },
    { method: 'DELETE', url: '/tasks/:task/pushNotificationConfigs/:config', rpc: 'DeleteTaskPushNotificationConfig', params: configParams, status: 204 },
    { method: 'GET', url: '/extendedAgentCard', rpc: 'GetExtendedAgentCard', params: () => ({}) }
  ]
  const tenants = opts.tenant === undefined ? [undefined] : [undefined, opts.tenant]
  for (const tenant of tenants) {
    const at = tenant === undefined ? '' : `/${tenant}`
    const withTenant = (params: Record<string, unknown>): Record<string, unknown> => tenant === undefined ? params : { ...params, tenant }
    for (const route of routes) {
      fastify.route({
        method: route.method,
        url: at + route.url,
        bodyLimit: opts.bodyLimit,
        handler (request, reply) {
          const params = withTenant(route.params(request))
          return route.streaming === true ? stream(request, reply, route.rpc, params) : call(request, reply, route.rpc, params, { status: route.status })
        }
      })
    }
    // `/tasks/{id}` (GET: GetTask), `/tasks/{id}:cancel` (POST), `/tasks/{id}:subscribe` (GET and POST): one route
    // per method, the verb split off the segment. Fastify would read `/tasks/:id::cancel` as one parameter named
    // `id::cancel`, and `GET /tasks/:id::subscribe` clashes with `GET /tasks/:id` (CONTRACT.md §12).
    fastify.route({
      method: ['GET', 'POST'],
      url: at + '/tasks/:task',
      bodyLimit: opts.bodyLimit,
      handler (request, reply) {
        const { id, verb } = splitVerb(taskOf(request))
        if (verb === 'subscribe') return stream(request, reply, 'SubscribeToTask', withTenant(withMetadata(request, { id })))
        if (request.method === 'GET' && verb === undefined) return call(request, reply, 'GetTask', withTenant({ ...queryParams(request), id }))
        if (request.method === 'POST' && verb === 'cancel') {
          const body = bodyOf(request)
          return call(request, reply, 'CancelTask', withTenant(body.metadata === undefined ? { id } : { id, metadata: body.metadata }))
        }
        throw unknownVerb(request, verb)
      }
    })
  }

  // The OpenAPI 3.1 document of these routes, for any authenticated caller (as the card's extended form is).
  fastify.get('/openapi.json', async function (request, reply) {
    if (opts.secured) auditCall(audit, request, 'GET /openapi.json')
    return reply.type('application/json; charset=utf-8').send((await fastify.a2aOpenApi()).json)
  })

  // -------------------------------------------------------------------------------------------------------------
  // A2A v0.3, under `/v1/`: the v0.3 methods with the v0.3 proto's ProtoJSON bodies. Push configs made here are
  // stored as v0.3 ones (their deliveries are the v0.3 Task, CONTRACT.md §11.6).

  const rest03 = { wire: 'rest03' } as const
  const pushConfig03 = (result: unknown): unknown => encodePushConfig03(result as TaskPushNotificationConfig)

  fastify.post('/v1/message::send', function (request, reply) {
    // SendMessageResponse: the `task` of its oneof.
    return call(request, reply, 'message/send', decodeSendRequest03(bodyOf(request)), { wire: 'rest03', encode: task => ({ task }) })
  })
  fastify.post('/v1/message::stream', function (request, reply) {
    return stream(request, reply, 'message/stream', decodeSendRequest03(bodyOf(request)), 'rest03')
  })
  fastify.get('/v1/tasks', function (request, reply) {
    const params = queryParams(request)
    if (typeof params.state === 'string') params.state = decodeState03(params.state)
    return call(request, reply, 'tasks/list', params, rest03)
  })
  fastify.route({
    method: ['GET', 'POST'],
    url: '/v1/tasks/:task',
    handler (request, reply) {
      const { id, verb } = splitVerb(taskOf(request))
      if (verb === 'subscribe') return stream(request, reply, 'tasks/resubscribe', withMetadata(request, { id }), 'rest03')
      if (request.method === 'GET' && verb === undefined) return call(request, reply, 'tasks/get', { ...queryParams(request), id }, rest03)
      if (request.method === 'POST' && verb === 'cancel') {
        bodyOf(request)
        return call(request, reply, 'tasks/cancel', { id }, rest03)
      }
      throw unknownVerb(request, verb, '/v1')
    }
  })
  fastify.post('/v1/tasks/:task/pushNotificationConfigs', function (request, reply) {
    const params = decodeCreatePushConfig03(bodyOf(request), taskOf(request))
    return call(request, reply, 'tasks/pushNotificationConfig/set', params, { status: 201, encode: pushConfig03 })
  })
  fastify.get('/v1/tasks/:task/pushNotificationConfigs', function (request, reply) {
    return call(request, reply, 'tasks/pushNotificationConfig/list', { id: taskOf(request) }, {
      encode: result => ({ configs: (result as TaskPushNotificationConfig[]).map(encodePushConfig03), nextPageToken: '' })
    })
  })
  fastify.get('/v1/tasks/:task/pushNotificationConfigs/:config', function (request, reply) {
    const { taskId, id } = configParams(request)
    return call(request, reply, 'tasks/pushNotificationConfig/get', { id: taskId, pushNotificationConfigId: id }, { encode: pushConfig03 })
  })
  fastify.delete('/v1/tasks/:task/pushNotificationConfigs/:config', function (request, reply) {
    const { taskId, id } = configParams(request)
    return call(request, reply, 'tasks/pushNotificationConfig/delete', { id: taskId, pushNotificationConfigId: id }, { status: 204 })
  })
  // The public card without credentials (as the well-known URL answers); with them, the caller's extended card.
  fastify.get('/v1/card', { config: { a2aCredentialsOptional: true } }, function (request, reply) {
    const principal = request.a2aPrincipal as Principal
    if (principal.scheme === 'anonymous') {
      request.a2aRest = 'GET /v1/card'
      observe(reply, 0)
      return opts.card(request, reply)
    }
    return call(request, reply, 'agent/getAuthenticatedExtendedCard', {})
  })
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The method a REST call runs, once known (metrics, audit). */
    a2aRest: string | null
  }
  interface FastifyContextConfig {
    /** A route that answers callers without credentials too (`GET /v1/card`); credentials given are checked. */
    a2aCredentialsOptional?: boolean
  }
}

export default restRoutes
