// Webhook signatures, the Standard Webhooks scheme (CONTRACT.md §8.4).
// @see https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
import { createHmac, timingSafeEqual } from 'node:crypto'
import { InvalidPluginOptions } from '../kernel/errors.js'

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from `now`, either way, in seconds; default 300. */
  toleranceSeconds?: number
  /** The current time in unix seconds; default: the clock. */
  now?: number
}

const PREFIX = 'whsec_'
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
const DEFAULT_TOLERANCE_S = 300

/**
 * The HMAC key of a signing secret: `whsec_<base64>` is base64-decoded after the prefix, as Standard Webhooks does;
 * any other secret is used as its UTF-8 bytes. Throws A2A_ERR_INVALID_OPTIONS for an empty secret or bad base64.
 */
export function signingKey (secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) {
    if (secret === '') throw new InvalidPluginOptions('the signing secret is empty')
    return Buffer.from(secret, 'utf8')
  }
  const encoded = secret.slice(PREFIX.length)
  if (!BASE64.test(encoded)) {
    throw new InvalidPluginOptions('a whsec_ signing secret must be base64 after its prefix')
  }
  return Buffer.from(encoded, 'base64')
}

/** `v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>`. */
export function sign (key: Buffer, id: string, timestamp: number, body: string): string {
  return signText(key, id, String(timestamp), body)
}

// Signs the timestamp as its header text, so that verify judges exactly what was sent.
function signText (key: Buffer, id: string, timestamp: string, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The three headers of a signed delivery; `id` stays the same across the retries of one delivery. */
export function signatureHeaders (key: Buffer, id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(key, id, timestamp, body)
  }
}

// A header by name, case-insensitive; repeated headers are joined with a space (signatures are a list anyway).
function header (headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const key = Object.keys(headers).find(k => k.toLowerCase() === name)
  const value = key === undefined ? undefined : headers[key]
  return Array.isArray(value) ? value.join(' ') : value
}

/**
 * True when one of the `webhook-signature` entries (space-separated, `v1,<base64>`) signs this id, timestamp and body
 * with `key`, and the timestamp is within the tolerance. Signatures are compared in constant time.
 */
export function verify (
  key: Buffer,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  opts: VerifyOptions = {}
): boolean {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (id === undefined || timestamp === undefined || signatures === undefined || !/^\d{1,15}$/.test(timestamp)) return false
  const now = opts.now ?? Math.floor(Date.now() / 1000)
  if (Math.abs(now - Number(timestamp)) > (opts.toleranceSeconds ?? DEFAULT_TOLERANCE_S)) return false
  // Compared as the base64 text, so that a lenient decoder cannot make two spellings equal.
  const expected = Buffer.from(signText(key, id, timestamp, body))
  let valid = false
  for (const candidate of signatures.split(' ')) {
    const given = Buffer.from(candidate)
    // No early exit: every candidate costs the same.
    if (given.length === expected.length && timingSafeEqual(given, expected)) valid = true
  }
  return valid
}
