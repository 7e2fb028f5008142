import { generateKeyPairSync, type KeyObject } from 'node:crypto'

// Keys for the signed-card tests, made fresh per run (no key is checked in): PEM and JWK texts as the configuration
// takes them.

export type Alg = 'ES256' | 'RS256' | 'EdDSA'

function pair (alg: Alg): KeyObject {
  switch (alg) {
    case 'ES256': return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
    case 'RS256': return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
    case 'EdDSA': return generateKeyPairSync('ed25519').privateKey
  }
}

const made = new Map<Alg, KeyObject>()

/** One private key per algorithm for the whole file (RSA keys are slow to make). */
export function keyOf (alg: Alg): KeyObject {
  let key = made.get(alg)
  if (key === undefined) {
    key = pair(alg)
    made.set(alg, key)
  }
  return key
}

/** The key as a PKCS#8 PEM. */
export function pemOf (alg: Alg): string {
  return keyOf(alg).export({ type: 'pkcs8', format: 'pem' }) as string
}

/** The private key as a JWK text. */
export function jwkOf (alg: Alg): string {
  return JSON.stringify(keyOf(alg).export({ format: 'jwk' }))
}

export const ALGS: readonly Alg[] = ['ES256', 'RS256', 'EdDSA']
