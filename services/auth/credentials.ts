import { hash, timingSafeEqual } from 'node:crypto'
import type { A2AConfig } from '../../schemas/config.js'
import { createPrincipal, type Principal } from './principal.js'

type Security = A2AConfig['security']

/** The part of the validated `security` section the verifier reads; the whole section fits it. */
export interface CredentialConfig {
  auth: {
    api_key: Pick<Security['auth']['api_key'], 'keys'>
    bearer: Pick<Security['auth']['bearer'], 'tokens'>
  }
  scope_hierarchy: Security['scope_hierarchy']
}

interface Candidate {
  readonly digest: Buffer
  readonly principal: Principal
}

/** SHA-256 of a secret: every secret is compared through its digest, so both sides always have the same length. */
export function digest (secret: string): Buffer {
  // The one-shot hash, on the path of every authenticated request: no Hash object per call, and its 32 bytes copied
  // into Buffer's shared pool rather than into an ArrayBuffer of their own, which costs more to make and to collect.
  return Buffer.from(hash('sha256', secret, 'binary'), 'binary')
}

/**
 * Constant-time comparison (CONTRACT.md §9). Meant for digests, which are always 32 bytes; buffers of different
 * lengths answer false instead of making `timingSafeEqual` throw.
 */
export function safeEqual (a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length) return false
  return timingSafeEqual(a, b)
}

/**
 * The principal of the first candidate whose digest equals the value's. Every candidate is compared, with no early
 * return on a match, so the time taken does not tell which entry (if any) matched.
 */
function find (candidates: readonly Candidate[], value: string): Principal | null {
  const wanted = digest(value)
  let found: Principal | null = null
  for (const candidate of candidates) {
    const equal = safeEqual(candidate.digest, wanted)
    found = equal && found === null ? candidate.principal : found
  }
  return found
}

/** A key's principal id: its `id`, else its `description`, else a fingerprint that reveals nothing usable. */
function apiKeyId (key: Security['auth']['api_key']['keys'][number], keyDigest: Buffer): string {
  if (key.id !== undefined) return key.id
  if (key.description !== undefined && key.description !== '') return key.description
  return `apikey:${keyDigest.toString('hex').slice(0, 8)}`
}

/**
 * Checks API keys and static bearer tokens of `security.auth` (CONTRACT.md §9). Digests and principals (scopes
 * expanded through `scope_hierarchy`) are computed once, here; a lookup hashes the presented value and compares it
 * with every configured one in constant time.
 */
export class CredentialVerifier {
  readonly #keys: readonly Candidate[]
  readonly #tokens: readonly Candidate[]

  constructor (security: CredentialConfig) {
    const hierarchy = security.scope_hierarchy
    this.#keys = security.auth.api_key.keys.map(key => {
      const keyDigest = digest(key.key)
      return { digest: keyDigest, principal: createPrincipal(apiKeyId(key, keyDigest), 'api_key', key.scopes, hierarchy) }
    })
    this.#tokens = security.auth.bearer.tokens.map(token => ({
      digest: digest(token.token),
      principal: createPrincipal(token.user, 'bearer', token.scopes, hierarchy)
    }))
  }

  /** The principal of a configured API key, or null. */
  apiKey (value: string): Principal | null {
    return find(this.#keys, value)
  }

  /** The principal of a configured static bearer token (`auth.bearer.tokens`), or null. */
  bearer (value: string): Principal | null {
    return find(this.#tokens, value)
  }
}
