/*
 * One pass over a JSON body's text before it is parsed, for the limit that parsing itself would break: V8's
 * JSON.parse of a 16 MiB body of keys (`{"k0":0,…}`, 1.3M keys in one object) took 1.25 s on the 2-core machine
 * (2026-11-27), walking the result for its depth 1.0 s more, and the size estimate and the answer as much again.
 * Counting keys and array items here costs 1 ms for that body (it stops at the limit) and 15 to 35 ms for 16 MiB of
 * text, whitespace or digits; the worst is a string of nothing but escapes (`\"` 8M times), 75 ms. Both loops are
 * regular expressions, which skip what does not count natively.
 */

/** Outside strings: what counts (`{` `[` a container, `:` a key, `,` a next item) and the quote that opens a string. */
const OUTSIDE = /[":,[{]/g
/**
 * Inside a string: up to the closing quote, at most 256 escapes at a time (a repeat without a bound overflows the
 * regular expression's stack on a string of escapes, as `\"` 8M times does).
 */
const INSIDE = /[^"\\]*(?:\\[\s\S][^"\\]*){0,256}/y

/**
 * An upper bound of the object keys and array items in a JSON text, counted up to `max`: more than `max` returns
 * `max + 1`. It counts each `{`, `[`, `:` and `,` outside strings: an array of n items counts n, an object of n keys
 * 2n, so the count is at most three times the keys and items (each object or array being itself one of them) plus
 * one. Text that is not JSON is counted as well as it goes; the parser refuses it after.
 */
export function countItems (text: string, max: number): number {
  const end = text.length
  let items = 0
  let at = 0
  while (true) {
    OUTSIDE.lastIndex = at
    const found = OUTSIDE.exec(text)
    if (found === null) return items
    if (text.charCodeAt(found.index) === 34) {
      let pos = found.index + 1
      do {
        INSIDE.lastIndex = pos
        INSIDE.exec(text)
        pos = INSIDE.lastIndex
      } while (pos < end && text.charCodeAt(pos) !== 34)
      at = pos + 1
    } else {
      if (++items > max) return items
      at = found.index + 1
    }
  }
}
