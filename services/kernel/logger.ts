import type { LogFn } from 'pino'

/** The logger services take: pino's, or Fastify's (`fastify.log`, `request.log`), which wraps pino. */
export interface Logger {
  fatal: LogFn
  error: LogFn
  warn: LogFn
  info: LogFn
  debug: LogFn
  trace: LogFn
  child (bindings: Record<string, unknown>): Logger
}
