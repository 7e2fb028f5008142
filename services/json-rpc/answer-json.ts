/*
 * A large answer serialized a piece a turn (issue 39 row 4: one request's synchronous work under 100 ms). The echo
 * answer to a full 16 MiB text message holds the text twice: `JSON.stringify` of it took 80 to 120 ms and its UTF-8
 * encoding 30 to 90 ms more, in one turn (2-core machine, 2026-11-27). Here the same JSON is made as `JSON.stringify`
 * makes it, in pieces of about `PIECE` characters, each encoded at once and followed by a turn of the event loop:
 * about 5 ms a piece. Answers under `LARGE` characters are stringified at once, as before (under 5 ms).
 */

/** Characters of JSON made and encoded in one turn: 1M took 3 to 8 ms (with the string's own escaping). */
export const PIECE = 1 << 20

/** An answer's size, in characters of its strings and keys (plus 4 for any other value), from which it is made in pieces. */
export const LARGE = 1 << 20

/**
 * Whether `value`'s JSON is about more than `limit` characters: the characters of its strings and keys, 4 for any
 * other value. Stops as soon as it knows, so a large answer is not walked whole.
 */
export function largerThan (value: unknown, limit: number): boolean {
  let size = 0
  const over = (v: unknown): boolean => {
    if (typeof v === 'string') return (size += v.length) > limit
    if (typeof v !== 'object' || v === null) return (size += 4) > limit
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) if (over(v[i])) return true
      return false
    }
    for (const key in v) {
      size += key.length + 4
      if (over((v as Record<string, unknown>)[key])) return true
    }
    return false
  }
  return over(value)
}

/** What `JSON.stringify` leaves out of an object and writes as `null` in an array. */
function absent (v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol'
}

/** A string's JSON, a slice of at most `PIECE` characters at a time (never between the two halves of a surrogate pair). */
function * stringPieces (text: string): Generator<string> {
  if (text.length <= PIECE) {
    yield JSON.stringify(text)
    return
  }
  yield '"'
  for (let at = 0; at < text.length;) {
    let end = Math.min(at + PIECE, text.length)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--
    yield JSON.stringify(text.slice(at, end)).slice(1, -1)
    at = end
  }
  yield '"'
}

/** The JSON of `value` in order, in pieces; as `JSON.stringify` writes it. */
function * pieces (value: unknown): Generator<string> {
  if (typeof value === 'string') {
    yield * stringPieces(value)
  } else if (typeof value !== 'object' || value === null || typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    yield JSON.stringify(value)
  } else if (Array.isArray(value)) {
    yield '['
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ','
      if (absent(value[i])) yield 'null'
      else yield * pieces(value[i])
    }
    yield ']'
  } else {
    let first = true
    yield '{'
    for (const key of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[key]
      if (absent(v)) continue
      yield (first ? '' : ',') + JSON.stringify(key) + ':'
      first = false
      yield * pieces(v)
    }
    yield '}'
  }
}

/** `JSON.stringify(value)` as UTF-8, made `PIECE` characters a turn: the pieces, in order. */
export async function jsonPieces (value: unknown): Promise<Buffer[]> {
  const out: Buffer[] = []
  let text = ''
  for (const piece of pieces(value)) {
    text += piece
    if (text.length >= PIECE) {
      out.push(Buffer.from(text))
      text = ''
      await new Promise(resolve => setImmediate(resolve))
    }
  }
  out.push(Buffer.from(text))
  return out
}
