import { InvalidConfig } from '../kernel/errors.js'

/** An `A2A_ERR_INVALID_CONFIG` error that lists every problem found, each `<dotted.path>: <message>`. */
export interface ConfigProblemsError extends Error {
  code: 'A2A_ERR_INVALID_CONFIG'
  problems: string[]
}

export function configError (problems: string[]): ConfigProblemsError {
  const err = new InvalidConfig(problems.join('\n'))
  return Object.assign(err, { problems }) as ConfigProblemsError
}

export function isConfigError (err: unknown): err is ConfigProblemsError {
  return err instanceof Error && (err as { code?: unknown }).code === 'A2A_ERR_INVALID_CONFIG' &&
    Array.isArray((err as { problems?: unknown }).problems)
}

/** A path's segments joined with dots, as the messages show them. */
export function dotted (segments: readonly string[]): string {
  return segments.length === 0 ? '(root)' : segments.join('.')
}

export function isPlainObject (value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** Sets an own property, even one named `__proto__`, so that the schema sees (and rejects) it. */
export function setOwn (target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}
