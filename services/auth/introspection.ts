import http from 'node:http'
import https from 'node:https'
import type { Got } from 'got'
import type { LRUCache } from 'lru-cache'
import { boundedLru } from '../kernel/bounded-lru.js'
import { InvalidPluginOptions, JsonRpcError, RpcCode } from '../kernel/errors.js'
import { lazyGot } from '../kernel/lazy-got.js'
import type { Logger } from '../kernel/logger.js'
import { digest } from './credentials.js'
import { createPrincipal, missingScopes, type Principal, type ScopeHierarchy } from './principal.js'

export interface IntrospectionOptions {
  /** `security.auth.oauth2.introspection_endpoint`: an http(s) URL. */
  endpoint: string
  /** Our client credentials at the identity provider, sent as HTTP Basic (RFC 7662 §2.1). */
  clientId: string
  clientSecret: string
  /** Scopes every token must hold after expansion through `hierarchy`. */
  requiredScopes: string[]
  /** Seconds an active token's result is reused (never past its `exp`); 0: not cached. */
  cacheTtlSeconds: number
  /** Seconds one introspection request may take. Default 5. */
  timeoutSeconds?: number
  /** `security.scope_hierarchy`. */
  hierarchy: ScopeHierarchy
  /** Clock in ms (tests). Default `Date.now`. */
  now?: () => number
  /** Most results cached; the least recently used go first. Default 10 000. */
  maxCacheEntries?: number
  /** Told whether each lookup was answered from the cache (metrics); absent, nothing is called. */
  onCache?: (result: 'hit' | 'miss') => void
  /** `security.auth.oauth2.user_claim`: the introspection field that names the caller. Default `sub`. */
  userClaim?: string
  /** `security.auth.oauth2.principal_prefix`: put before that name to make the principal id. Default `oauth2:`. */
  principalPrefix?: string
}

export type IntrospectionResult =
  | { ok: true, principal: Principal }
  | { ok: false, reason: string, missingScopes?: readonly string[] }

interface CacheEntry {
  readonly result: IntrospectionResult
  /** Clock time (ms) from which the entry is no longer used. */
  readonly expiresAt: number
}

const DEFAULT_TIMEOUT_S = 5
const DEFAULT_MAX_ENTRIES = 10_000
/** CONTRACT.md §9: inactive (and otherwise invalid) tokens are remembered for 10 s. */
const NEGATIVE_TTL_MS = 10_000

/** RFC 6749 §2.3.1: the client id and secret are form-urlencoded before they are joined for HTTP Basic. */
function formEncode (value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1)
}

/** Fail closed (CONTRACT.md §9): when the identity provider cannot answer, nobody is let in. */
function idpUnavailable (): JsonRpcError {
  return new JsonRpcError(RpcCode.idpUnavailable, 'Identity provider unavailable', 'the identity provider did not answer',
    503, { 'retry-after': '1' })
}

/** RFC 7662 §2.2: `scope` is a space-separated string; some providers send a `scopes` array instead. */
function scopesOf (body: Record<string, unknown>): string[] {
  if (typeof body.scope === 'string') return body.scope.split(' ').filter(s => s !== '')
  if (Array.isArray(body.scopes)) return body.scopes.filter((s): s is string => typeof s === 'string' && s !== '')
  return []
}

/** The identity of the token: its `claim` (`sub` unless configured), never a name the token merely carries. */
function subjectOf (body: Record<string, unknown>, claim: string): string | undefined {
  const value = body[claim]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * An OAuth 2.0 token introspection client (RFC 7662; CONTRACT.md §9). Results are cached by the SHA-256 of the token,
 * concurrent lookups of one token share one request, and an identity provider that cannot answer makes `introspect`
 * throw a 503 JsonRpcError (-32013) that nothing is cached for.
 * @see https://www.rfc-editor.org/rfc/rfc7662
 */
export class IntrospectionClient {
  readonly #opts: IntrospectionOptions
  readonly #log: Logger
  readonly #now: () => number
  readonly #host: string
  readonly #authorization: string
  /** got, loaded with the first request to the identity provider. */
  readonly #client: () => Promise<Got>
  readonly #agents: { http: http.Agent, https: https.Agent }
  /** Keyed by the hex digest of the token, never by the token. */
  readonly #cache: LRUCache<string, CacheEntry>
  readonly #inFlight = new Map<string, Promise<IntrospectionResult>>()
  #calls = 0

  constructor (opts: IntrospectionOptions, log: Logger) {
    let url: URL
    try {
      url = new URL(opts.endpoint)
    } catch {
      throw new InvalidPluginOptions('security.auth.oauth2.introspection_endpoint must be an http(s) URL')
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new InvalidPluginOptions('security.auth.oauth2.introspection_endpoint must be an http(s) URL')
    }
    this.#opts = opts
    this.#host = url.host
    this.#log = log.child({ component: 'introspection' })
    this.#now = opts.now ?? Date.now
    this.#cache = boundedLru(opts.maxCacheEntries ?? DEFAULT_MAX_ENTRIES)
    const basic = `${formEncode(opts.clientId)}:${formEncode(opts.clientSecret)}`
    this.#authorization = `Basic ${Buffer.from(basic, 'utf8').toString('base64')}`
    this.#agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
    // One attempt per lookup: a retry would only hold the caller longer; the client retries after `Retry-After`.
    this.#client = lazyGot({
      retry: { limit: 0 },
      timeout: { request: (opts.timeoutSeconds ?? DEFAULT_TIMEOUT_S) * 1000 },
      throwHttpErrors: false,
      followRedirect: false,
      agent: this.#agents
    })
  }

  /** Requests made to the identity provider (metrics, tests). */
  get calls (): number {
    return this.#calls
  }

  /**
   * Whether the token is active, unexpired and holds the required scopes. Throws a 503 JsonRpcError (-32013) when
   * the identity provider is down, slow or answers something other than a 2xx JSON object.
   */
  async introspect (token: string): Promise<IntrospectionResult> {
    const key = digest(token).toString('hex')
    const hit = this.#hit(key)
    if (hit !== undefined) return hit
    this.#opts.onCache?.('miss')
    const pending = this.#inFlight.get(key)
    if (pending !== undefined) return pending
    const lookup = this.#lookup(token, key).finally(() => this.#inFlight.delete(key))
    this.#inFlight.set(key, lookup)
    return lookup
  }

  /**
   * The cached result for the token, at once, when there is one: what `introspect` would answer without asking the
   * identity provider. Undefined when it would have to ask.
   */
  cached (token: string): IntrospectionResult | undefined {
    return this.#hit(digest(token).toString('hex'))
  }

  #hit (key: string): IntrospectionResult | undefined {
    const hit = this.#cache.get(key)
    if (hit === undefined) return undefined
    if (this.#now() >= hit.expiresAt) {
      this.#cache.delete(key)
      return undefined
    }
    this.#opts.onCache?.('hit')
    return hit.result
  }

  /** Forgets cached results and closes kept-alive connections. */
  close (): void {
    this.#cache.clear()
    this.#agents.http.destroy()
    this.#agents.https.destroy()
  }

  async #lookup (token: string, key: string): Promise<IntrospectionResult> {
    const body = await this.#request(token)
    const now = this.#now()
    const { result, expMs } = this.#evaluate(body, now)
    const ttl = result.ok ? Math.min(this.#opts.cacheTtlSeconds * 1000, expMs - now) : NEGATIVE_TTL_MS
    if (ttl > 0) this.#cache.set(key, { result, expiresAt: now + ttl })
    return result
  }

  /** One RFC 7662 request. Logs carry the host and a code or status: never the token, never our secret. */
  async #request (token: string): Promise<Record<string, unknown>> {
    this.#calls++
    let response
    try {
      const client = await this.#client()
      response = await client.post(this.#opts.endpoint, {
        form: { token, token_type_hint: 'access_token' },
        headers: { authorization: this.#authorization, accept: 'application/json' }
      })
    } catch (err) {
      // Not `err` itself: a got error carries the request options, the token and our credentials among them.
      this.#log.warn({ host: this.#host, code: (err as { code?: unknown }).code }, 'token introspection failed')
      throw idpUnavailable()
    }
    const status = response.statusCode
    if (status < 200 || status > 299) {
      this.#log.warn({ host: this.#host, status }, 'token introspection failed')
      throw idpUnavailable()
    }
    let body: unknown
    try {
      body = JSON.parse(response.body)
    } catch {
      body = undefined
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      this.#log.warn({ host: this.#host, status, code: 'invalid_response' }, 'token introspection failed')
      throw idpUnavailable()
    }
    return body as Record<string, unknown>
  }

  /** RFC 7662 §2.2 plus CONTRACT.md §9. `expMs` bounds how long a valid result may be cached. */
  #evaluate (body: Record<string, unknown>, now: number): { result: IntrospectionResult, expMs: number } {
    const invalid = (reason: string, missing?: readonly string[]) => ({
      result: missing === undefined ? { ok: false as const, reason } : { ok: false as const, reason, missingScopes: missing },
      expMs: 0
    })
    if (body.active !== true) return invalid('token is not active')
    let expMs = Infinity
    if (body.exp !== undefined) {
      if (typeof body.exp !== 'number' || !Number.isFinite(body.exp)) return invalid('token has an invalid exp')
      expMs = body.exp * 1000
      if (expMs <= now) return invalid('token has expired')
    }
    const subject = subjectOf(body, this.#opts.userClaim ?? 'sub')
    if (subject === undefined) return invalid('token has no subject')
    // Namespaced: a token's subject never names the owner of an API key's or a static token's tasks unless the
    // config maps them together (`principal_prefix: ""`).
    const principal = createPrincipal((this.#opts.principalPrefix ?? 'oauth2:') + subject, 'oauth2', scopesOf(body), this.#opts.hierarchy)
    const missing = missingScopes(principal, this.#opts.requiredScopes)
    if (missing.length > 0) return invalid(`missing required scope ${missing.join(', ')}`, missing)
    return { result: { ok: true, principal }, expMs }
  }
}
