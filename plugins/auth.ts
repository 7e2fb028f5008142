import fp from 'fastify-plugin'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { ANONYMOUS, type Principal } from '../services/auth/principal.js'
import { CredentialVerifier } from '../services/auth/credentials.js'
import { IntrospectionClient } from '../services/auth/introspection.js'
import type { FailureWindows, LimitResult, TokenBuckets } from '../services/auth/limits.js'
import { JsonRpcError, RpcCode, unauthenticated } from '../services/kernel/errors.js'
import type { Logger } from '../services/kernel/logger.js'
import { writes } from '../services/kernel/lazy-logger.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The onRequest hook that authenticates a caller and sets `request.a2aPrincipal` (CONTRACT.md §9). It calls
     * `done` at once when the principal is known without I/O.
     */
    a2aAuthenticate: onRequestHookHandler
    /**
     * The principal of a caller of any binding (what the hook does, for gRPC): at once when it is known without I/O,
     * else a promise. Refusals (401, 429) are thrown or rejected as JsonRpcErrors; the request bucket is taken.
     */
    a2aIdentify: (caller: Caller) => Principal | Promise<Principal>
    /** The audit logger: one line per authentication success or failure and per scope denial. */
    a2aAudit: Logger
  }
  interface FastifyRequest {
    /** Who is calling; set by `a2aAuthenticate` before any handler runs. */
    a2aPrincipal: Principal | null
  }
}

/** What authentication reads of a call: its headers (gRPC: its metadata) and the client's address. */
export interface Caller {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly ip: string
}

/** A caller once authenticated, as the audit line names it. */
export interface AuditedCaller {
  readonly a2aPrincipal: Principal | null
  readonly ip: string
}

export interface AuthPluginOptions {
  config: A2AConfig
  /** Per-principal request buckets; none when rate limiting is off. */
  buckets?: TokenBuckets
  /** Failed authentications per client IP. */
  failures: FailureWindows
  /** Told whether each introspection lookup hit the cache (metrics). */
  onIntrospectionCache?: (result: 'hit' | 'miss') => void
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/**
 * The audit line of an authenticated call once its method (or route) is known (CONTRACT.md §9): `scope denied` with
 * its reason when `denied` is given, else `auth success`. Whole literals, not a spread of shared fields (a spread
 * followed by new fields is V8's slow path); the success line, written once per request, is not even gathered
 * when `info` is not written.
 */
export function auditCall (audit: Logger, request: AuditedCaller, method: string, denied?: unknown): void {
  const principal = request.a2aPrincipal as Principal
  if (denied !== undefined) {
    audit.warn({ principal: principal.id, scheme: principal.scheme, method, ip: request.ip, outcome: 'denied', reason: denied }, 'scope denied')
  } else if (writes(audit, 'info')) {
    audit.info({ principal: principal.id, scheme: principal.scheme, method, ip: request.ip, outcome: 'success' }, 'auth success')
  }
}

/** 429 with Retry-After in whole seconds, at least 1 (CONTRACT.md §9). */
export function rateLimited (retryAfterMs: number, data: string): JsonRpcError {
  const seconds = String(Math.max(1, Math.ceil(retryAfterMs / 1000)))
  return new JsonRpcError(RpcCode.rateLimited, 'Rate limited', data, 429, { 'retry-after': seconds })
}

/**
 * Authentication for the JSON-RPC route context (never a global hook). Credentials are tried in the contract's
 * order: `X-API-Key`, then `Authorization: Bearer` against the static bearer tokens, the API keys, and OAuth2
 * introspection. Failures are limited per client IP before any credential is checked; requests per principal go
 * through a token bucket, taken in the same hook once the principal is known: one lookup in memory, one script in
 * Redis, and no plugin between them.
 */
const authPlugin: FastifyPluginAsync<AuthPluginOptions> = async (fastify, opts) => {
  const security = opts.config.security
  const audit = fastify.log.child({ audit: true })
  fastify.decorate('a2aAudit', audit)
  fastify.decorateRequest('a2aPrincipal', null)

  if (!security.enabled) {
    // Synchronous: a promise and a tick on every request, only to set a constant, cost more than the rest of it.
    fastify.decorate('a2aAuthenticate', function (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
      request.a2aPrincipal = ANONYMOUS
      done()
    })
    fastify.decorate('a2aIdentify', () => ANONYMOUS)
    return
  }

  const verifier = new CredentialVerifier(security)
  const oauth2 = security.auth.oauth2
  const introspection = oauth2 === undefined
    ? undefined
    : new IntrospectionClient({
      endpoint: oauth2.introspection_endpoint,
      clientId: oauth2.client_id,
      clientSecret: oauth2.client_secret,
      requiredScopes: oauth2.required_scopes,
      cacheTtlSeconds: oauth2.cache_ttl,
      timeoutSeconds: oauth2.timeout,
      hierarchy: security.scope_hierarchy,
      userClaim: oauth2.user_claim,
      principalPrefix: oauth2.principal_prefix,
      onCache: opts.onIntrospectionCache
    }, fastify.log.child({ component: 'introspection' }))
  const apiKeyHeader = security.auth.api_key.header.toLowerCase()
  const { failures } = opts

  /** 401, audited; counted against the address unless it was counted already (`reserve` before an introspection). */
  async function refuse (request: Caller, scheme: string, reason: string, sent: boolean, counted = false): Promise<never> {
    if (!counted) await failures.fail(request.ip)
    audit.warn({ principal: null, scheme, method: null, outcome: 'failure', reason, ip: request.ip }, 'auth failure')
    throw unauthenticated(reason, sent)
  }

  /**
   * The caller's principal: at once when all it takes is in this process (API keys, static bearer tokens, failure
   * windows in memory), else a promise (Redis, introspection). A refusal is thrown or rejected.
   */
  function authenticate (request: Caller): Principal | Promise<Principal> {
    const apiKey = request.headers[apiKeyHeader]
    const authorization = request.headers.authorization as string | undefined
    if (apiKey === undefined && authorization === undefined) return refuse(request, 'none', 'credentials required', false)
    // A flood of bad credentials from one IP is cut off before any of them is checked or introspected.
    const wait = failures.blocked(request.ip)
    return typeof wait === 'number'
      ? identifyUnlessBlocked(request, wait, apiKey, authorization)
      : wait.then(ms => identifyUnlessBlocked(request, ms, apiKey, authorization))
  }

  /** 429 for an address past its failed authentications (CONTRACT.md §9), audited. */
  function tooManyFailures (request: Caller, wait: number, scheme: string | null): never {
    audit.warn({ principal: null, scheme, method: null, outcome: 'failure', reason: 'too many failed authentications', ip: request.ip }, 'auth failure')
    throw rateLimited(wait, 'too many failed authentications from this address')
  }

  function identifyUnlessBlocked (request: Caller, wait: number, apiKey: unknown, authorization: string | undefined): Principal | Promise<Principal> {
    if (wait > 0) tooManyFailures(request, wait, null)
    return identify(request, apiKey, authorization)
  }

  /**
   * The principal of the credentials sent (there are some). Every credential presented must verify: one that does
   * not is refused (401) and counted against the address, whatever else the request carries, so that a valid
   * credential cannot shelter guesses of another. With both, the API key names the principal (CONTRACT.md §9 order).
   */
  function identify (request: Caller, apiKey: unknown, authorization: string | undefined): Principal | Promise<Principal> {
    let keyed: Principal | null = null
    if (apiKey !== undefined) {
      // Node joins a repeated header into one string ("a, b"), which matches no key.
      keyed = verifier.apiKey(apiKey as string)
      if (keyed === null) return refuse(request, 'api_key', 'invalid credentials', true)
      if (authorization === undefined) return keyed
    }
    const token = BEARER.exec(authorization as string)?.[1]
    if (token === undefined) return refuse(request, 'bearer', 'the Authorization header is not a Bearer token', true)
    const known = verifier.bearer(token) ?? verifier.apiKey(token)
    if (known !== null) return keyed ?? known
    if (introspection === undefined) return refuse(request, 'bearer', 'invalid credentials', true)
    return introspect(request, token).then(principal => keyed ?? principal)
  }

  /**
   * A token checked at the identity provider. A lookup that has to ask it is counted as a failed attempt first and
   * forgiven once the token proves good: concurrent guesses cannot all pass the failure limit before any of them
   * fails, so at most `failed_auth_per_minute` of an address's lookups reach the provider in a window.
   */
  async function introspect (request: Caller, token: string): Promise<Principal> {
    const client = introspection as IntrospectionClient
    const known = client.cached(token)
    if (known !== undefined) return known.ok ? known.principal : refuse(request, 'oauth2', known.reason, true)
    const wait = await failures.reserve(request.ip)
    if (wait > 0) tooManyFailures(request, wait, 'oauth2')
    let result
    try {
      result = await client.introspect(token)
    } catch (err) {
      // The provider failed, not the caller: the attempt is not held against the address.
      await failures.forgive(request.ip)
      throw err
    }
    if (!result.ok) return refuse(request, 'oauth2', result.reason, true, true)
    await failures.forgive(request.ip)
    return result.principal
  }

  const buckets = opts.buckets

  /** The principal once it has taken a token from its bucket (CONTRACT.md §9); a 429 when the bucket is empty. */
  function admit (principal: Principal): Principal | Promise<Principal> {
    if (buckets === undefined) return principal
    const taken = buckets.take(principal.id)
    return taken instanceof Promise ? taken.then(result => admitted(principal, result)) : admitted(principal, taken)
  }

  /** The caller's principal once it has taken a token from its bucket. */
  function identified (caller: Caller): Principal | Promise<Principal> {
    const principal = authenticate(caller)
    return principal instanceof Promise ? principal.then(admit) : admit(principal)
  }
  fastify.decorate('a2aIdentify', identified)

  // Synchronous when the principal is known at once: an async hook costs a promise and a tick on every request.
  fastify.decorate('a2aAuthenticate', function (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
    let result: Principal | Promise<Principal>
    try {
      result = identified(request)
    } catch (err) {
      done(err as Error)
      return
    }
    if (result instanceof Promise) {
      result.then(principal => {
        request.a2aPrincipal = principal
        done()
      }, done)
      return
    }
    request.a2aPrincipal = result
    done()
  })
}

function admitted (principal: Principal, result: LimitResult): Principal {
  if (result.allowed) return principal
  throw rateLimited(result.retryAfterMs, 'too many requests for this principal')
}

export default fp(authPlugin, { name: 'a2a-auth', fastify: '5.x' })
