import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Principal } from '../services/auth/principal.js'
import authPlugin, { auditCall, type AuthPluginOptions } from '../plugins/auth.js'
import { JsonRpcError, RpcCode } from '../services/kernel/errors.js'
import {
  dispatch, failure, parseEnvelope, resolveMethod, toJsonRpcError, type IdentifiedError, type JsonRpcRequest, type Outcome
} from '../services/json-rpc/dispatch.js'
import { Outbox } from '../services/json-rpc/outbox.js'
import type { RegisteredMethod } from '../services/json-rpc/registry.js'
import type { EventSource, StreamClaim } from '../plugins/sse.js'
import { versionRefusal } from '../services/a2a/version.js'
import openRpcRoutes from './openrpc.js'
import restRoutes from './rest.js'
import type { GrpcPluginOptions } from '../plugins/grpc.js'
import { cardResponder } from './well-known.js'
import { cardBindingsOf } from '../services/a2a/agent-card.js'
import { ANONYMOUS } from '../services/auth/principal.js'
import { JSON_TYPE, jsonBodyParser, routeError } from './body.js'
import { REQUEST_WAIT_MS, received, takeRequestBytes } from './inbound.js'
import { echoExtensions, sendJson } from './answer.js'

export interface JsonRpcRoutesOptions {
  /** `server.max_request_size`: bodies above it get HTTP 413. */
  bodyLimit: number
  /** Authentication and its limits, for this route context only. */
  auth: AuthPluginOptions
  /** `protocol.rest`: the HTTP+JSON binding's routes, in this context (its authentication and limits). */
  rest?: boolean
  /** The plugin prefix, for the card `GET /v1/card` answers with. */
  cardPrefix: string
  /** `protocol.grpc.enabled`: the gRPC server, in this context (its authentication and limits). */
  grpc?: Pick<GrpcPluginOptions, 'checks' | 'handle'>
}

/** A request's outcome, waiting in the outbox. */
interface Answer {
  request: FastifyRequest
  reply: FastifyReply
  method: string
  outcome: Outcome
}

/**
 * A request refused by authentication or its limits is answered once its body is read, when the body is this small
 * or smaller: the method name then says whether the refusal carries the v1.0 error data (CONTRACT.md §11.4). A larger
 * body, or one of unknown length, is refused unread, in the v0.3 form.
 */
const REFUSAL_READ_LIMIT = 64 * 1024

/** What Fastify would give an object body. */
const JSON_ANSWER = 'application/json; charset=utf-8'

/**
 * Counts an answered JSON-RPC request in the metrics, when they are on: by method, code (0 for a result) and
 * duration. `GET /openrpc.json` shares this context and its error answers, but is no JSON-RPC request.
 */
function observe (reply: FastifyReply, code: number): void {
  const metrics = reply.server.a2aMetrics
  if (metrics == null || reply.request.method !== 'POST') return
  const method = (reply.request.body as { method?: unknown } | null | undefined)?.method
  metrics.rpc(typeof method === 'string' ? method : undefined, code, reply.elapsedTime / 1000)
}

/** `POST /`: the JSON-RPC 2.0 endpoint (CONTRACT.md §4). Encapsulated: parsers and hooks stay in here. */
const jsonRpcRoutes: FastifyPluginAsync<JsonRpcRoutesOptions> = async (fastify, opts) => {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(JSON_TYPE, jsonBodyParser(opts.auth.config.tasks.max_keys, opts.bodyLimit))

  // Once the server is closing, an answer also closes its connection: sent after Fastify has closed the idle ones,
  // it would otherwise leave a kept-alive socket holding the close up. (HTTP/2 has no such header.)
  let closing = false
  fastify.addHook('preClose', function (done) {
    closing = true
    done()
  })

  const replies = fastify.a2aReplies
  /** Every JSON answer of this context, result or error, goes out through here (streams go through the hub). */
  function send (reply: FastifyReply, body: unknown, err?: JsonRpcError): FastifyReply {
    if (err !== undefined && err.httpStatus !== 200) {
      reply.code(err.httpStatus)
      if (err.headers !== undefined) reply.headers(err.headers)
    }
    if (closing && reply.request.raw.httpVersionMajor !== 2) reply.header('connection', 'close')
    // Counted once its status is set: an answer refused there is counted as the error it then becomes.
    observe(reply, err?.code ?? 0)
    // Within the answer budget: an answer waits for room rather than pile up unread (plugins/answers.ts).
    // A large one is made a piece a turn (routes/answer.ts).
    sendJson(replies, reply, body, JSON_ANSWER)
    return reply
  }

  fastify.setErrorHandler(async function (err: FastifyError | JsonRpcError, request, reply) {
    const rpc = routeError(err, request)
    // A refusal of a v1.0 method (403, 429, 503 and the like) carries the v1.0 error data (CONTRACT.md §11.4).
    const method = (request.body as { method?: unknown } | null | undefined)?.method
    return send(reply, failure((err as Partial<IdentifiedError>).id ?? null, rpc, typeof method === 'string' ? method : undefined), rpc)
  })
  // Auth lives in this context only: the card, /health and /ready stay public, and host routes are untouched.
  await fastify.register(authPlugin, opts.auth)
  fastify.decorateRequest('a2aRefusal', null)
  const authenticate = fastify.a2aAuthenticate
  // The API key comes under the configured header (`security.auth.api_key.header`), not only `X-API-Key`.
  const apiKeyHeader = opts.auth.config.security.auth.api_key.header.toLowerCase()
  fastify.addHook('onRequest', function (request, reply, done) {
    // A route that answers anonymous callers too (`GET /v1/card`) checks credentials only when some are given.
    // (Fastify builds `routeOptions` afresh on each read: the cheap tests go first, and POST / never reads it.)
    if (request.method === 'GET' && request.headers.authorization === undefined && request.headers[apiKeyHeader] === undefined &&
      request.routeOptions.config.a2aCredentialsOptional === true) {
      request.a2aPrincipal = ANONYMOUS
      done()
      return
    }
    authenticate.call(this, request, reply, err => {
      const length = Number(request.headers['content-length'])
      if (err != null && request.method === 'POST' && length <= REFUSAL_READ_LIMIT) {
        request.a2aRefusal = err
        done()
        return
      }
      done(err)
    })
  })
  // Request bodies within the request budget (server.max_request_bytes): taken before the body is read, given back
  // once the operation has the message or the response ended (routes/inbound.ts). Here, so REST shares it.
  fastify.decorateRequest('a2aInbound', null)
  const { server } = opts.auth.config
  fastify.addHook('preParsing', takeRequestBytes(fastify.a2aRequests, opts.bodyLimit, Math.min(REQUEST_WAIT_MS, server.request_timeout * 1000)))
  fastify.addHook('preValidation', function (request, _reply, done) {
    done(request.a2aRefusal ?? undefined)
  })
  const audit = fastify.a2aAudit
  const secured = opts.auth.config.security.enabled
  // GET /openrpc.json shares this context: the same authentication, limits and error answers as POST /.
  await fastify.register(openRpcRoutes, { secured })
  if (opts.rest === true) {
    const { config } = opts.auth
    await fastify.register(restRoutes, {
      bodyLimit: opts.bodyLimit,
      maxKeys: config.tasks.max_keys,
      secured,
      tenant: config.protocol.tenant,
      card: cardResponder(config, opts.cardPrefix, cardBindingsOf(config))
    })
  }

  if (opts.grpc !== undefined) {
    // grpc-js, protobufjs and the protos are loaded only when the binding is on: 110 modules and about 150 ms of
    // CPU that every other process would spend at import (2026-11-28).
    const { default: grpcPlugin } = await import('../plugins/grpc.js')
    await fastify.register(grpcPlugin, { ...opts.grpc, config: opts.auth.config, cardPrefix: opts.cardPrefix })
  }

  /** The audit lines written once the method is known (CONTRACT.md §9, audit log). */
  function audited (request: FastifyRequest, method: string, error?: JsonRpcError): void {
    if (secured) auditCall(audit, request, method, error?.code === RpcCode.insufficientScope ? error.data : undefined)
  }

  const registry = fastify.a2aMethods
  const streams = fastify.a2aStreams

  /**
   * A streaming method answers with SSE. Transport-level refusals (401, 403, 429, 503) are plain JSON before any
   * SSE byte; errors after that (bad params, unknown task) are one SSE error event (CONTRACT.md §7).
   */
  async function stream (request: FastifyRequest, reply: FastifyReply, req: JsonRpcRequest, method: RegisteredMethod, extensions: readonly string[]) {
    const principal = request.a2aPrincipal as Principal
    let claim: StreamClaim
    try {
      claim = streams.claim()
    } catch (err) {
      throw Object.assign(err as JsonRpcError, { id: req.id })
    }
    let source: EventSource
    try {
      const { params } = resolveMethod(registry, req, principal)
      await claim.own(principal.id)
      audited(request, req.method)
      const lastEventId = request.headers['last-event-id']
      const ctx = lastEventId === undefined
        ? { principal, log: request.log, id: req.id, headers: request.headers, extensions }
        : { principal, log: request.log, id: req.id, headers: request.headers, extensions, lastEventId: String(lastEventId) }
      source = await method.handler(params, ctx) as EventSource
      received(request)
    } catch (err) {
      received(request)
      claim.release()
      const error = toJsonRpcError(err, request.log, req.method)
      if (error.code === RpcCode.insufficientScope) audited(request, req.method, error)
      if (error.httpStatus !== 200) throw Object.assign(error, { id: req.id })
      observe(reply, error.code)
      streams.error(reply, failure(req.id, error, req.method))
      return reply
    }
    observe(reply, 0)
    streams.open(reply, req.id, source, claim.release, error => `data: ${JSON.stringify(failure(req.id, error, req.method))}\n\n`)
    return reply
  }

  /** Sends what a request came to, with its audit line. */
  function answer ({ request, reply, method, outcome: { response, error } }: Answer): void {
    audited(request, method, error)
    send(reply, response, error)
  }

  // Answers leave at the end of the event loop's turn, together (see Outbox). One that cannot be sent (a status
  // code Fastify refuses) becomes this request's error, answered with its id.
  const outbox = new Outbox<Answer>(answer, ({ reply, outcome }, err) => reply.send(Object.assign(err as Error, { id: outcome.response.id })))

  // Not async: a method that answers at once (message/send over the memory store) is queued at once, with no promise.
  fastify.post('/', { bodyLimit: opts.bodyLimit }, function (request, reply) {
    if (request.headers['content-type'] === undefined) {
      throw new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'Content-Type must be application/json', 415)
    }
    const req = parseEnvelope(request.body)
    const method = registry.get(req.method)
    // CONTRACT.md §11.1: a version named that this server does not speak is refused; the method name decides the rest.
    const refusal = versionRefusal(request.headers['a2a-version'], request.query)
    if (refusal !== undefined) {
      if (method?.streaming === true) {
        observe(reply, refusal.code)
        streams.error(reply, failure(req.id, refusal, req.method))
        return reply
      }
      outbox.push({ request, reply, method: req.method, outcome: { response: failure(req.id, refusal, req.method), error: refusal } })
      return
    }
    // The extensions the request activates (docs/protocol.md, "Extensions"), said back in the answer's header.
    const extensions = registry.extensions.activate(request.headers, req.method)
    echoExtensions(reply, extensions, req.method)
    if (method?.streaming === true) return stream(request, reply, req, method, extensions)
    const outcome = dispatch(registry, req, request.a2aPrincipal as Principal, request.log, request.headers, extensions)
    if (outcome instanceof Promise) {
      return outcome.then(done => {
        // The operation has the message: its body's bytes leave the request budget (routes/inbound.ts).
        received(request)
        outbox.push({ request, reply, method: req.method, outcome: done })
        // The reply itself tells Fastify that the answer is on its way: it sends nothing in its place.
        return reply
      })
    }
    received(request)
    outbox.push({ request, reply, method: req.method, outcome })
  })
}

export default jsonRpcRoutes
