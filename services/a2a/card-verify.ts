import { readFile } from 'node:fs/promises'
import { calculateJwkThumbprint, decodeProtectedHeader, errors, flattenedVerify, base64url, type JWK } from 'jose'
import { signedPayload } from './card-signing.js'
import { CARD_SIGNING_ALGS } from '../../schemas/config.js'

/** The outcome of one signature of a card. */
export interface SignatureCheck {
  /** The signature's `kid`, when its protected header could be read. */
  kid?: string
  alg?: string
  ok: boolean
  /** Why it failed. */
  reason?: string
}

export interface CardVerification {
  /** Every signature verified, and there is at least one. */
  ok: boolean
  checks: SignatureCheck[]
  /** Why the card as a whole failed (no signatures, not a card). */
  reason?: string
}

/** Finds the public key of a signature; throws `KeyLookupError` saying why there is none. */
export type KeyResolver = (kid: string, jku: string | undefined) => Promise<JWK>

/** No key for a signature: unknown kid, no jku, a JWK set that cannot be had. */
export class KeyLookupError extends Error {}

/** How long fetching a card or a JWK set may take. */
const FETCH_TIMEOUT_MS = 10_000

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Checks each signature of a card against the payload rebuilt from the card (`signedPayload`). */
export async function verifyCard (card: unknown, resolveKey: KeyResolver): Promise<CardVerification> {
  if (!isObject(card)) return { ok: false, checks: [], reason: 'not an agent card: not a JSON object' }
  const signatures = card.signatures
  if (!Array.isArray(signatures) || signatures.length === 0) return { ok: false, checks: [], reason: 'no signature: the card has no signatures' }
  const payload = base64url.encode(signedPayload(card))
  const checks = await Promise.all(signatures.map(entry => checkSignature(entry, payload, resolveKey)))
  return { ok: checks.every(check => check.ok), checks }
}

async function checkSignature (entry: unknown, payload: string, resolveKey: KeyResolver): Promise<SignatureCheck> {
  if (!isObject(entry) || typeof entry.protected !== 'string' || typeof entry.signature !== 'string') {
    return { ok: false, reason: 'malformed signature: protected and signature must be strings' }
  }
  let header
  try {
    header = decodeProtectedHeader({ protected: entry.protected })
  } catch {
    return { ok: false, reason: 'malformed signature: the protected header is not base64url JSON' }
  }
  const { kid, alg, typ, jku } = header
  const check: SignatureCheck = { ok: false, kid, alg }
  const missing = (['kid', 'alg', 'typ'] as const).filter(name => typeof header[name] !== 'string')
  if (missing.length > 0) return { ...check, reason: `malformed signature: the protected header has no ${missing.join(', ')}` }
  if (!(CARD_SIGNING_ALGS as readonly unknown[]).includes(alg)) return { ...check, reason: `unsupported alg ${alg} (supported: ${CARD_SIGNING_ALGS.join(', ')})` }
  if (typ !== 'JOSE') return { ...check, reason: `typ is ${typ}, not JOSE` }
  let key: JWK
  try {
    key = await resolveKey(kid as string, typeof jku === 'string' ? jku : undefined)
  } catch (err) {
    if (!(err instanceof KeyLookupError)) throw err
    return { ...check, reason: err.message }
  }
  try {
    await flattenedVerify({ protected: entry.protected, signature: entry.signature, payload, header: isObject(entry.header) ? entry.header : undefined },
      key, { algorithms: [alg as string] })
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) {
      return { ...check, reason: 'bad signature: the card was changed after it was signed, or another key signed it' }
    }
    return { ...check, reason: `the key of kid ${kid} cannot verify ${alg}: ${(err as Error).message}` }
  }
  return { ...check, ok: true }
}

/** A resolver over one JWK set (`--jwks`): the key whose `kid`, else whose RFC 7638 thumbprint, is the signature's. */
export function jwksResolver (jwks: unknown, origin: string): KeyResolver {
  const keys = jwkSet(jwks, origin)
  return async kid => {
    const named = keys.find(key => key.kid === kid)
    if (named !== undefined) return named
    for (const key of keys) {
      if (await calculateJwkThumbprint(key) === kid) return key
    }
    throw new KeyLookupError(`unknown kid: ${kid} is not in ${origin}`)
  }
}

/** A resolver that fetches each signature's `jku` (once per URL). */
export function jkuResolver (fetchJson: (source: string) => Promise<unknown> = readJson): KeyResolver {
  const sets = new Map<string, Promise<KeyResolver>>()
  return async (kid, jku) => {
    if (jku === undefined) throw new KeyLookupError('no key: the signature names no jku (give the JWK set with --jwks)')
    let resolver = sets.get(jku)
    if (resolver === undefined) {
      resolver = fetchJson(jku).then(jwks => jwksResolver(jwks, jku), err => { throw new KeyLookupError(`jwks unreachable: ${(err as Error).message}`) })
      sets.set(jku, resolver)
    }
    return (await resolver)(kid, jku)
  }
}

function jwkSet (jwks: unknown, origin: string): JWK[] {
  if (isObject(jwks) && Array.isArray(jwks.keys) && jwks.keys.every(isObject)) return jwks.keys as JWK[]
  if (isObject(jwks) && typeof jwks.kty === 'string') return [jwks as JWK]
  throw new KeyLookupError(`${origin} is not a JWK set ({"keys": [...]}) nor a JWK`)
}

/** JSON from an http(s) URL or a file. Throws an error saying which and why. */
export async function readJson (source: string): Promise<unknown> {
  let text: string
  if (/^https?:\/\//i.test(source)) {
    let response: Response
    try {
      response = await fetch(source, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: 'application/json' } })
    } catch (err) {
      // fetch's own message is "fetch failed": the cause says why (connection refused, bad port, ...).
      const reasons = [err, (err as Error).cause].filter(e => e instanceof Error).map(e => (e as Error).message)
      throw new Error(`cannot fetch ${source}: ${reasons[reasons.length - 1]}`)
    }
    if (!response.ok) throw new Error(`cannot fetch ${source}: HTTP ${response.status}`)
    text = await response.text()
  } else {
    try {
      text = await readFile(source, 'utf8')
    } catch (err) {
      throw new Error(`cannot read ${source}: ${(err as NodeJS.ErrnoException).code}`)
    }
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new Error(`${source} is not JSON`)
  }
}

/**
 * `fastify-a2a card --verify SOURCE [--jwks JWKS]`: reads the card (a URL or a file) and checks its signatures with
 * the keys of `jwks` (a URL or a file), else of each signature's `jku`. One line per signature, then the verdict.
 */
export async function verifyCardSource (source: string, jwks?: string): Promise<{ ok: boolean, lines: string[] }> {
  let card: unknown
  let resolver: KeyResolver
  try {
    card = await readJson(source)
    resolver = jwks === undefined ? jkuResolver() : jwksResolver(await readJson(jwks).catch(err => { throw new KeyLookupError(`jwks unreachable: ${(err as Error).message}`) }), jwks)
  } catch (err) {
    return { ok: false, lines: [(err as Error).message] }
  }
  const result = await verifyCard(card, resolver)
  const lines = result.checks.map((check, i) => {
    const named = check.kid === undefined ? '' : ` (kid ${check.kid}${check.alg === undefined ? '' : `, ${check.alg}`})`
    return `signature ${i + 1}${named}: ${check.ok ? 'ok' : `failed: ${check.reason}`}`
  })
  if (result.reason !== undefined) lines.push(result.reason)
  lines.push(result.ok ? `verified: ${source} (${result.checks.length} of ${result.checks.length} signatures)` : `not verified: ${source}`)
  return { ok: result.ok, lines }
}
