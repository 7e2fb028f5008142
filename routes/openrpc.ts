import type { FastifyPluginAsync } from 'fastify'
import { missingScopes, type Principal } from '../services/auth/principal.js'
import { auditCall } from '../plugins/auth.js'
import { insufficientScope } from '../services/json-rpc/dispatch.js'
import { DISCOVER_METHOD } from '../services/json-rpc/discover.js'
import type { RegisteredMethod } from '../services/json-rpc/registry.js'

export interface OpenRpcRoutesOptions {
  /** `security.enabled`: callers are then audited as JSON-RPC callers are. */
  secured: boolean
}

/** What the audit log names the route as, in its `method` field. */
const AUDIT_METHOD = 'GET /openrpc.json'

/**
 * `GET /openrpc.json`: the OpenRPC document, the same as the result of `rpc.discover` (CONTRACT.md §3). Register it
 * inside the JSON-RPC route context, so that it is authenticated, rate limited and refused exactly as `POST /` is,
 * and guarded by the scopes `rpc.discover` needs.
 */
const openRpcRoutes: FastifyPluginAsync<OpenRpcRoutesOptions> = async (fastify, opts) => {
  const render = fastify.a2aOpenRpc
  const discover = fastify.a2aMethods.get(DISCOVER_METHOD) as RegisteredMethod
  const audit = fastify.a2aAudit

  fastify.get('/openrpc.json', async function (request, reply) {
    const principal = request.a2aPrincipal as Principal
    const missing = missingScopes(principal, discover.scopes)
    const refusal = missing.length > 0 ? insufficientScope(missing) : undefined
    if (opts.secured) auditCall(audit, request, AUDIT_METHOD, refusal?.data)
    if (refusal !== undefined) throw refusal
    return reply.type('application/json; charset=utf-8').send((await render()).json)
  })
}

export default openRpcRoutes
