// "Did you mean ...?" for an unknown configuration key: a close key at the same level, else the same key elsewhere.
import type { TSchema } from '@sinclair/typebox'
import { ConfigSchema } from '../../schemas/config.js'

/** At most this many keys are named; a name that fits more (`enabled` is in six places) suggests nothing. */
const MAX_SUGGESTIONS = 3

/** Every key name of the schema's nested objects → the dotted paths where it is a key (`port` → `server.port`, ...). */
const KEYS_ELSEWHERE = new Map<string, string[]>()
function index (schema: TSchema, prefix: string): void {
  for (const [name, child] of Object.entries<TSchema>(schema.properties ?? {})) {
    const path = prefix === '' ? name : `${prefix}.${name}`
    KEYS_ELSEWHERE.set(name, [...KEYS_ELSEWHERE.get(name) ?? [], path])
    index(child, path)
  }
}
index(ConfigSchema, '')

/**
 * The suggestion for an unknown key `name` among `siblings` (the keys its object has), as the dotted paths to print:
 * the closest sibling within an edit distance of 40% of the name's length (`prot` → `port`); else the siblings that
 * have the name as a whole word (`delay` → `delay_ms`, `timeout` → `request_timeout`, ...); else the keys of that exact
 * name at other levels of the configuration (`port` at the top → `server.port`, `protocol.grpc.port`). At most three.
 */
export function suggestKey (parent: readonly string[], name: string, siblings: readonly string[]): string[] {
  const wanted = name.toLowerCase()
  const at = (key: string) => [...parent, key].join('.')
  const limit = Math.max(1, Math.floor(wanted.length * 0.4))
  let best: string | undefined
  let bestDistance = limit + 1
  for (const key of siblings) {
    const d = distance(wanted, key)
    if (d < bestDistance) [best, bestDistance] = [key, d]
  }
  if (best !== undefined) return [at(best)]
  const words = wanted.length >= 3 ? siblings.filter(key => key.split('_').includes(wanted)) : []
  if (words.length > 0) return words.length <= MAX_SUGGESTIONS ? words.map(at) : []
  const elsewhere = KEYS_ELSEWHERE.get(wanted) ?? []
  return elsewhere.length <= MAX_SUGGESTIONS ? elsewhere : []
}

/** The optimal string alignment (Damerau-Levenshtein) distance: insertions, deletions, substitutions, transpositions. */
export function distance (a: string, b: string): number {
  // rows[i][j]: the distance between the first i characters of a and the first j of b.
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) rows[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1)
      }
    }
  }
  return rows[a.length][b.length]
}
