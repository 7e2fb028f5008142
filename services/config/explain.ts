// Schema errors in words: one line per problem, `<dotted.path>: <message>`, then what was given and where it came from.
import type { ErrorObject } from 'ajv'
import { dotted } from './problems.js'
import { suggestKey } from './suggest.js'

/**
 * Where values came from, for the keys that did not take theirs from the file as written: dotted path → words such as
 * `$PORT`, `--port` or `$MY_PORT at /etc/a2a/agent.yml:4:9`.
 */
export type ConfigSources = ReadonlyMap<string, string>

// Ajv's JSON types as a user would say them (YAML words: a mapping, a list).
const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
  null: 'null'
}
// The keywords that judge the value itself, so the message shows it.
const SHOWS_VALUE = new Set(['type', 'anyOf', 'enum', 'const', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'pattern'])
// Strings under these keys are never echoed: they may be credentials (a Redis URL may hold a password).
const SECRET = /secret|password|token|(^|_)keys?$|headers|url$/
const MAX_SHOWN = 60

/** A problem line: the message, then `(got <value> from <source>)` with whichever of the two is known. */
export function problemLine (path: readonly string[], message: string, sources: ConfigSources, value?: unknown): string {
  const where = dotted(path)
  const shown = value === undefined ? undefined : show(path, value)
  const source = sources.get(where)
  const notes = [shown === undefined ? '' : `got ${shown}`, source === undefined ? '' : `from ${source}`].filter(Boolean)
  return `${where}: ${message}${notes.length === 0 ? '' : ` (${notes.join(' ')})`}`
}

function show (path: readonly string[], value: unknown): string | undefined {
  if (Array.isArray(value)) return 'a list'
  if (value !== null && typeof value === 'object') return 'a mapping'
  if (typeof value !== 'string') return String(value)
  if (path.some(segment => SECRET.test(segment))) return undefined
  const text = JSON.stringify(value)
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 2)}…"` : text
}

/** Ajv's errors (compiled with `verbose`) as problem lines, one per problem, in the order Ajv found them. */
export function schemaProblems (errors: ErrorObject[], sources: ConfigSources): string[] {
  // A union reports one error per branch and then its own: keep only the union's.
  const unions = errors.filter(e => e.keyword === 'anyOf').map(e => e.schemaPath + '/')
  const problems = new Set<string>()
  for (const e of errors) {
    if (unions.some(prefix => e.schemaPath.startsWith(prefix))) continue
    const path = pointerSegments(e.instancePath)
    const say = (message: string) => problems.add(problemLine(path, message, sources, SHOWS_VALUE.has(e.keyword) ? e.data : undefined))
    switch (e.keyword) {
      case 'required':
        problems.add(problemLine([...path, e.params.missingProperty], 'required', sources))
        break
      case 'additionalProperties':
        problems.add(unknownKey(path, e.params.additionalProperty, e.parentSchema as { properties: object }))
        break
      case 'type':
        say(`must be ${String(e.params.type).split(',').map(type => TYPE_WORDS[type]).join(' or ')}`)
        break
      case 'anyOf':
        say(`must be one of ${(e.schema as BranchSchema[]).map(describe).join(', ')}`)
        break
      case 'enum':
        say(`must be one of ${(e.params.allowedValues as unknown[]).map(String).join(', ')}`)
        break
      case 'const':
        // Any name but `postgres` is a Redis entry: say where a PostgreSQL one goes.
        say(`must be ${String(e.params.allowedValue)}${path[0] === 'services' && path[2] === 'type' && e.data === 'postgres'
          ? '; the PostgreSQL entry is the one named services.postgres'
          : ''}`)
        break
      case 'minLength':
        say(`must have at least ${e.params.limit} character(s)`)
        break
      default:
        say(String(e.message))
    }
  }
  return [...problems]
}

function unknownKey (path: string[], key: string, parent: { properties: object }): string {
  const suggestions = suggestKey(path, key, Object.keys(parent.properties))
  const hint = suggestions.length === 0 ? '' : ` (did you mean ${orList(suggestions)}?)`
  return `${dotted([...path, key])}: unknown key${hint}`
}

// `a`, `a or b`, `a, b or c`.
const orList = (items: string[]) => items.length === 1 ? items[0] : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`

interface BranchSchema { const?: unknown, type?: string }

// A union's branch: its constant, or its type in words (a boolean branch lists true and false).
const describe = (branch: BranchSchema) =>
  'const' in branch ? String(branch.const) : branch.type === 'boolean' ? 'true, false' : TYPE_WORDS[String(branch.type)]

// JSON Pointer (RFC 6901) to segments: `/agent/skills/0` → ['agent', 'skills', '0'].
const pointerSegments = (pointer: string) =>
  pointer.split('/').slice(1).map(s => s.replace(/~1/g, '/').replace(/~0/g, '~'))
