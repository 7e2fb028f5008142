import { configError, dotted, isPlainObject, setOwn } from './problems.js'

export type Env = Record<string, string | undefined>

/** Told, for each string value that took text from the environment, its path and the variables it took. */
export type OnSubstituted = (path: string[], names: string[]) => void

// `$${` is a literal `${`; `${...}` a reference; a lone `${` with no `}` is an error.
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{/g
// NAME, then optionally `:default` (unset), `:-default` (unset or empty) or `:?message` (required).
const EXPRESSION = /^([A-Za-z_][A-Za-z0-9_]*)(?::([-?]?)(.*))?$/s

/**
 * Replaces `${VAR}`, `${VAR:default}`, `${VAR:-default}` and `${VAR:?message}` in every string value (never in keys)
 * of parsed YAML, the way a POSIX shell does. Returns a new value; throws `A2A_ERR_INVALID_CONFIG` listing every
 * variable that is missing, each with the config path that needs it. `onSubstituted` learns which values came from
 * which variables (a default written in the file does not count), for the problem lines of validation.
 */
export function substituteEnv (value: unknown, env: Env, onSubstituted?: OnSubstituted): unknown {
  const problems: string[] = []
  const result = walk(value, [], { env, problems, onSubstituted })
  if (problems.length > 0) throw configError(problems)
  return result
}

interface Walk { env: Env, problems: string[], onSubstituted?: OnSubstituted }

function walk (value: unknown, path: string[], ctx: Walk): unknown {
  if (typeof value === 'string') {
    const used: string[] = []
    const result = substituteString(value, dotted(path), ctx.env, ctx.problems, used)
    if (used.length > 0) ctx.onSubstituted?.(path, used)
    return result
  }
  if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, String(i)], ctx))
  if (!isPlainObject(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) setOwn(out, key, walk(item, [...path, key], ctx))
  return out
}

// `used` receives the name of each variable whose value went into the result.
function substituteString (text: string, path: string, env: Env, problems: string[], used: string[]): string {
  const take = (name: string, value: string) => {
    used.push(name)
    return value
  }
  return text.replace(REFERENCE, (match: string, expression: string | undefined) => {
    if (match === '$${') return '${'
    if (expression === undefined) {
      problems.push(`${path}: "\${" has no closing "}" (write "$\${" for a literal "\${")`)
      return match
    }
    const parsed = EXPRESSION.exec(expression)
    // A reference inside a default (`${A:-${B}}`) is not supported: say so rather than substitute half of it.
    if (parsed === null || expression.includes('${')) {
      problems.push(`${path}: "${match}" is not a valid variable reference`)
      return match
    }
    const [, name, operator, argument] = parsed
    const value = env[name]
    switch (operator) {
      case undefined:
        if (value !== undefined) return take(name, value)
        problems.push(`${path}: environment variable ${name} is not set`)
        return ''
      case '':
        return value === undefined ? argument : take(name, value)
      case '-':
        return value ? take(name, value) : argument
      default:
        if (value) return take(name, value)
        problems.push(`${path}: environment variable ${name} is ${value === undefined ? 'not set' : 'empty'}` +
          (argument ? `: ${argument}` : ''))
        return ''
    }
  })
}
