import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { CardSigning } from '../../schemas/config.js'

/** An algorithm the card may be signed with (`agent.card_signing.alg`). */
export type CardSigningAlg = CardSigning['alg']

/** The card-signing key, read and checked once: the private key and its public JWK. */
export interface SigningKey {
  alg: CardSigningAlg
  privateKey: KeyObject
  /** The public half, as a JWK (`kty` and its members only). */
  publicJwk: JsonWebKey
}

/** A key that cannot sign the card. Its message never holds the key, nor text that could be part of it. */
export class SigningKeyError extends Error {}

/** What each algorithm needs of a key, and how a key of the wrong kind is named. */
const FITS: Record<CardSigningAlg, { fits: (key: KeyObject) => boolean, needs: string }> = {
  ES256: { fits: key => key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1', needs: 'an EC P-256 key' },
  RS256: { fits: key => key.asymmetricKeyType === 'rsa' && Number(key.asymmetricKeyDetails?.modulusLength) >= 2048, needs: 'an RSA key of 2048 bits or more' },
  EdDSA: { fits: key => key.asymmetricKeyType === 'ed25519', needs: 'an Ed25519 key' }
}

const KIND: Record<string, string> = { ec: 'an EC key', rsa: 'an RSA key', ed25519: 'an Ed25519 key' }

/** Keys already read, by the configuration object that names them: the key is read once however many users it has. */
const loaded = new WeakMap<CardSigning, SigningKey>()

/**
 * The key of `agent.card_signing`: `key` is a PEM or JWK text, or else the path of a file holding one (relative to
 * `cwd`). Throws `SigningKeyError` when it cannot be read, is not a private key, or does not fit `alg`.
 */
export function signingKeyOf (signing: CardSigning, cwd = process.cwd()): SigningKey {
  const known = loaded.get(signing)
  if (known !== undefined) return known
  const { alg } = signing
  const privateKey = parseKey(keyText(signing.key, cwd))
  const fit = FITS[alg]
  if (!fit.fits(privateKey)) {
    const type = privateKey.asymmetricKeyType as string
    const kind = KIND[type] ?? `a key of type ${type}`
    const detail = type === 'ec' ? ` on curve ${privateKey.asymmetricKeyDetails?.namedCurve}` : type === 'rsa' ? ` of ${privateKey.asymmetricKeyDetails?.modulusLength} bits` : ''
    throw new SigningKeyError(`${kind}${detail} does not fit alg ${alg}, which needs ${fit.needs}`)
  }
  const { kty, crv, x, y, n, e } = createPublicKey(privateKey).export({ format: 'jwk' })
  const publicJwk = Object.fromEntries(Object.entries({ kty, crv, x, y, n, e }).filter(([, v]) => v !== undefined)) as JsonWebKey
  const key = { alg, privateKey, publicJwk }
  loaded.set(signing, key)
  return key
}

/** The key's text: the value itself when it is a PEM or a JWK, else the content of the file it names. */
function keyText (value: string, cwd: string): string {
  if (isKeyText(value)) return value
  let text
  try {
    text = readFileSync(resolve(cwd, value), 'utf8')
  } catch (err) {
    // The value is not echoed: a key pasted wrongly would be printed.
    throw new SigningKeyError(`not a PEM or JWK key, nor a file that can be read (${String((err as NodeJS.ErrnoException).code)})`)
  }
  if (!isKeyText(text)) throw new SigningKeyError('the key file holds no PEM or JWK key')
  return text
}

function isKeyText (value: string): boolean {
  const text = value.trimStart()
  return text.startsWith('-----BEGIN') || text.startsWith('{')
}

/** A private key from a PEM or JWK text. */
function parseKey (text: string): KeyObject {
  const trimmed = text.trim()
  if (trimmed.startsWith('{')) {
    let jwk: JsonWebKey
    try {
      jwk = JSON.parse(trimmed) as JsonWebKey
    } catch {
      throw new SigningKeyError('the JWK is not valid JSON')
    }
    if (jwk.d === undefined) throw new SigningKeyError('the JWK is a public key: the private key (with "d") is needed to sign')
    try {
      return createPrivateKey({ key: jwk, format: 'jwk' })
    } catch {
      throw new SigningKeyError('the JWK is not a usable private key')
    }
  }
  if (/^-----BEGIN (?:RSA )?PUBLIC KEY-----/.test(trimmed) || trimmed.startsWith('-----BEGIN CERTIFICATE-----')) {
    throw new SigningKeyError('the PEM is a public key or a certificate: the private key is needed to sign')
  }
  if (trimmed.startsWith('-----BEGIN ENCRYPTED PRIVATE KEY-----')) {
    throw new SigningKeyError('the PEM key is encrypted: give it unencrypted (openssl pkey -in key.pem -out plain.pem)')
  }
  try {
    return createPrivateKey({ key: trimmed, format: 'pem' })
  } catch {
    throw new SigningKeyError('the PEM is not a usable private key')
  }
}
