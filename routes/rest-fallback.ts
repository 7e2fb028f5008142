import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { JsonRpcError, RpcCode } from '../services/kernel/errors.js'
import { restStatus, statusBody, v03ErrorBody } from './rest.js'

// What Fastify itself answers before any route of ours runs (CONTRACT.md §12): an unknown path (`//tasks/x` too),
// a path parameter over the router's `maxParamLength` (an id of over 1024 characters) and a path that is not valid
// percent-encoding. On the HTTP+JSON binding's paths they get its error body: `google.rpc.Status` on the v1.0
// routes, the JSON-RPC error object under `/v1/` (v0.3). The JSON-RPC endpoint (`POST /`) keeps Fastify's answers.
// Only the standalone server can install these (`frameworkErrors` is an option of the Fastify instance).

/** The answers' media type (CONTRACT.md §12). */
const A2A_JSON = 'application/a2a+json'
/** A path named in a 404 is cut to this many characters: the answer never grows with what the client sent. */
const PATH_SHOWN = 200
/** The v0.3 routes, and the JSON-RPC endpoint. */
const V03_PATHS = '/v1/'
const RPC_PATH = '/'

export interface RestFallbacks {
  /** The not-found handler of the standalone server. */
  notFound: (request: FastifyRequest, reply: FastifyReply) => FastifyReply
  /** Its `frameworkErrors`: a bad or overlong path parameter. */
  frameworkErrors: (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => FastifyReply
}

/** The fallbacks of the standalone server, whose binding's routes are at the root. */
export function restFallbacks (): RestFallbacks {
  function answer (request: FastifyRequest, reply: FastifyReply, error: JsonRpcError): FastifyReply {
    const body = request.url.startsWith(V03_PATHS) ? v03ErrorBody(error) : statusBody(error)
    return reply.code(restStatus(error)).type(A2A_JSON).send(JSON.stringify(body))
  }

  return {
    notFound (request, reply) {
      const path = request.url.split('?', 1)[0]
      if (path === RPC_PATH) {
        // The JSON-RPC endpoint keeps the answer Fastify gives.
        return reply.code(404).send({ message: `Route ${request.method}:${path} not found`, error: 'Not Found', statusCode: 404 })
      }
      const shown = path.length > PATH_SHOWN ? `${path.slice(0, PATH_SHOWN)}…` : path
      return answer(request, reply, new JsonRpcError(RpcCode.methodNotFound, 'Not found', `${request.method} ${shown} is not a route of this server`))
    },
    frameworkErrors (err, request, reply) {
      if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
        return answer(request, reply, new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'a path segment is longer than 1024 characters', 414))
      }
      if (err.code === 'FST_ERR_BAD_URL') {
        return answer(request, reply, new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', 'the path is not valid percent-encoding', 400))
      }
      /* c8 ignore start -- FST_ERR_ASYNC_CONSTRAINT: no route of ours has an asynchronous constraint */
      request.log.error({ err }, 'router failed')
      return answer(request, reply, new JsonRpcError(RpcCode.internalError, 'Internal error'))
    }
    /* c8 ignore stop */
  }
}
