import type { Bindings, Level } from 'pino'
import type { Logger } from './logger.js'

/** The parent a lazy child is made from: pino's logger, or any Logger (which then has no level to ask). */
export interface ParentLogger extends Logger {
  readonly level?: string
  isLevelEnabled?: (level: string) => boolean
}

/** Whether `logger` writes lines at `level`; a logger that cannot tell is taken to write everything. */
export function writes (logger: ParentLogger, level: string): boolean {
  return logger.isLevelEnabled?.(level) ?? true
}

/**
 * A child logger that is made only when something is written at an enabled level. Fastify makes a child per
 * request to bind its `reqId`, and with redaction on pino runs every binding through the redaction stringifier to
 * make one: about 3 KB allocated per request, though most requests log nothing at `warn`. A line that is written goes
 * through the real child, with the same bindings, serializers and redaction as before.
 */
export class LazyChildLogger implements Logger {
  readonly #parent: ParentLogger
  readonly #bindings: Bindings
  #child: ParentLogger | undefined

  constructor (parent: ParentLogger, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  get level (): string {
    return (this.#child ?? this.#parent).level as string
  }

  set level (level: string) {
    (this.#real() as { level: string }).level = level
  }

  /** Whether a line at `level` would be written; a parent that cannot tell is taken to write everything. */
  isLevelEnabled (level: string): boolean {
    return writes(this.#child ?? this.#parent, level)
  }

  child (bindings: Bindings, options?: object): Logger {
    return (this.#real().child as (b: Bindings, o?: object) => Logger)(bindings, options)
  }

  fatal (...args: unknown[]): void { this.#write('fatal', args) }
  error (...args: unknown[]): void { this.#write('error', args) }
  warn (...args: unknown[]): void { this.#write('warn', args) }
  info (...args: unknown[]): void { this.#write('info', args) }
  debug (...args: unknown[]): void { this.#write('debug', args) }
  trace (...args: unknown[]): void { this.#write('trace', args) }
  silent (): void {}

  #write (level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return
    (this.#real()[level] as (...a: unknown[]) => void)(...args)
  }

  #real (): ParentLogger {
    return (this.#child ??= this.#parent.child(this.#bindings) as ParentLogger)
  }
}
