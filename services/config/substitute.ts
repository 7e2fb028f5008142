import { configError, dotted, isPlainObject, setOwn } from './problems.js'

export type Env = Record<string, string | undefined>

// `$${` is a literal `${`; `${...}` a reference; a lone `${` with no `}` is an error.
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{/g
// NAME, then optionally `:default` (unset), `:-default` (unset or empty) or `:?message` (required).
const EXPRESSION = /^([A-Za-z_][A-Za-z0-9_]*)(?::([-?]?)(.*))?$/s

/**
 * Replaces `${VAR}`, `${VAR:default}`, `${VAR:-default}` and `${VAR:?message}` in every string value (never in keys)
 * of parsed YAML, the way a POSIX shell does. Returns a new value; throws `A2A_ERR_INVALID_CONFIG` listing every
 * variable that is missing, each with the config path that needs it.
 */
export function substituteEnv (value: unknown, env: Env): unknown {
  const problems: string[] = []
  const result = walk(value, [], env, problems)
  if (problems.length > 0) throw configError(problems)
  return result
}

function walk (value: unknown, path: string[], env: Env, problems: string[]): unknown {
  if (typeof value === 'string') return substituteString(value, dotted(path), env, problems)
  if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, String(i)], env, problems))
  if (!isPlainObject(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) setOwn(out, key, walk(item, [...path, key], env, problems))
  return out
}

function substituteString (text: string, path: string, env: Env, problems: string[]): string {
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
        if (value === undefined) problems.push(`${path}: environment variable ${name} is not set`)
        return value ?? ''
      case '':
        return value ?? argument
      case '-':
        return value || argument
      default:
        if (value) return value
        problems.push(`${path}: environment variable ${name} is ${value === undefined ? 'not set' : 'empty'}` +
          (argument ? `: ${argument}` : ''))
        return ''
    }
  })
}
