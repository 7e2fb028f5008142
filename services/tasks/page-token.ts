import { invalidParams } from '../kernel/errors.js'

/**
 * `list`'s page tokens: the insertion sequence of the last task of a page, tagged with a letter of the store that
 * issued it (`m` memory, `r` Redis, `p` PostgreSQL), base64url. Opaque to clients.
 */
export function encodePageToken (tag: string, seq: string | number): string {
  return Buffer.from(`${tag}:${seq}`).toString('base64url')
}

/** The sequence a token of the store tagged `tag` carries; a token it did not issue is -32602. */
export function decodePageToken (tag: string, token: string, maxDigits: number): string {
  const text = Buffer.from(token, 'base64url').toString()
  const digits = text.startsWith(`${tag}:`) ? text.slice(tag.length + 1) : ''
  if (digits.length === 0 || digits.length > maxDigits || !/^\d+$/.test(digits)) {
    throw invalidParams('params.pageToken: is not a token this server issued')
  }
  return digits
}
