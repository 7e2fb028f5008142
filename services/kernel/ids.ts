import { randomFillSync } from 'node:crypto'

/** Random bytes for this many ids are drawn at once. */
const IDS_PER_FILL = 256
const pool = Buffer.allocUnsafeSlow(16 * IDS_PER_FILL)
let used = pool.length
/** The 36 characters of one id, written in place and read out as one string. */
const text = Buffer.allocUnsafeSlow(36)
text[8] = text[13] = text[18] = text[23] = 0x2d
/** Where each of the 16 bytes' two hex digits go, around the dashes. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]
const DIGITS = Buffer.from('0123456789abcdef', 'latin1')

/**
 * A random (version 4) UUID, as `crypto.randomUUID()` makes it: 122 bits from the same cryptographic source, drawn
 * for 256 ids at a time. It differs in how the string is made: one flat string, where node builds it from 20
 * concatenated pieces that V8 flattens again when the id first keys a Map. On the hot path (every task takes two or
 * three) that halves the time an id costs and leaves less for the garbage collector.
 */
export function newId (): string {
  if (used === pool.length) {
    randomFillSync(pool)
    used = 0
  }
  const at = used
  used += 16
  pool[at + 6] = (pool[at + 6] & 0x0f) | 0x40
  pool[at + 8] = (pool[at + 8] & 0x3f) | 0x80
  for (let i = 0; i < 16; i++) {
    const byte = pool[at + i]
    text[AT[i]] = DIGITS[byte >> 4]
    text[AT[i] + 1] = DIGITS[byte & 0x0f]
  }
  return text.toString('latin1', 0, 36)
}
