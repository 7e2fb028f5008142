import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { StorageUnavailable } from '../kernel/errors.js'

/**
 * Push configs sealed at rest (`push_notifications.encryption_key`, docs/push-notifications.md, "Credentials at
 * rest"): AES-256-GCM from node's crypto, a fresh 12-byte IV per value, the 16-byte tag checked on opening. A sealed
 * value is `<key id>:<base64 of IV, tag, ciphertext>`, the key id the first 8 hex digits of the key's SHA-256: a value
 * names the key it was sealed with, so that a key can be rotated (new writes use the current key; a value sealed
 * with a previous one is still opened while that key is listed). A value without a key id prefix is plain JSON, as
 * written before a key was set.
 */
export class Sealing {
  readonly #current: { id: string, key: Buffer }
  readonly #keys = new Map<string, Buffer>()

  /** `current` and `previous` are 32-byte keys in base64 (validateConfig checks them). */
  constructor (current: string, previous: readonly string[] = []) {
    const [first, ...rest] = [current, ...previous].map(encoded => {
      const key = Buffer.from(encoded, 'base64')
      return { id: keyId(key), key }
    })
    this.#current = first
    for (const { id, key } of [first, ...rest]) this.#keys.set(id, key)
  }

  seal (plain: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#current.key, iv)
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `${this.#current.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`
  }

  /** The plain text of a sealed value (or of one stored plain). Throws StorageUnavailable when it cannot be opened. */
  open (stored: string): string {
    if (stored.startsWith('{')) return stored
    const key = this.#keys.get(stored.slice(0, 8))
    if (key === undefined || stored[8] !== ':') throw new StorageUnavailable('push config sealed with a key this server does not have')
    const raw = Buffer.from(stored.slice(9), 'base64')
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
      decipher.setAuthTag(raw.subarray(12, 28))
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
    } catch {
      throw new StorageUnavailable('push config does not open with its key')
    }
  }
}

function keyId (key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8)
}

/** Whether `encoded` is a key `Sealing` takes: 32 bytes in base64 (`openssl rand -base64 32`). */
export function isSealingKey (encoded: string): boolean {
  return /^[A-Za-z0-9+/]{43}=$/.test(encoded) && Buffer.from(encoded, 'base64').length === 32
}
