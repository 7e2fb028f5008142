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

/** How the standalone server writes its log: `auto` is `pretty` on a terminal (outside CI), else `json`. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const
export type LogFormat = typeof LOG_FORMATS[number]

/** What `auto` looks at: whether stdout is a terminal, and the environment (`CI`). */
export interface Terminal {
  isTTY?: boolean
  env: Record<string, string | undefined>
}

/** `json` or `pretty`, for a format as asked. */
export function logFormatOf (format: LogFormat, terminal: Terminal): 'json' | 'pretty' {
  if (format !== 'auto') return format
  // A CI runner may give its jobs a terminal, and its log is read by machines too.
  const ci = terminal.env.CI !== undefined && terminal.env.CI !== '' && terminal.env.CI !== 'false'
  return terminal.isTTY === true && !ci ? 'pretty' : 'json'
}

/**
 * The message of a pretty line. A line about a request (it has `req`, as the standalone server's one line per
 * request does) starts with it: `GET /path 200 1.2 ms`, then the message unless it is `request completed`. The
 * request fields are left out of the rest of the line.
 */
export function prettyMessage (log: Record<string, unknown>, messageKey: string): string {
  const message = String(log[messageKey])
  const req = log.req as { method?: string, url?: string } | null | undefined
  if (typeof req !== 'object' || req === null) return message
  const parts = [req.method, req.url]
  const res = log.res as { statusCode?: number } | undefined
  if (res?.statusCode !== undefined) parts.push(String(res.statusCode))
  if (typeof log.responseTime === 'number') parts.push(`${log.responseTime.toFixed(1)} ms`)
  return message === 'request completed' ? parts.join(' ') : `${parts.join(' ')} ${message}`
}

/**
 * A stream that writes pino's JSON lines as pino-pretty's readable ones: `[12:00:01.123] INFO: message {fields}`,
 * one line per entry (an error's stack on the lines below). To stdout, in colour where stdout takes it, or to
 * `destination` (tests), plain. Loaded only when used: a server writing JSON never loads pino-pretty.
 * @see https://github.com/pinojs/pino-pretty#options
 */
export async function prettyStream (destination?: NodeJS.WritableStream): Promise<NodeJS.WritableStream> {
  const { default: pretty } = await import('pino-pretty')
  return pretty({
    // Written as it comes: nothing is left in a buffer when the process ends.
    sync: true,
    ...(destination === undefined ? {} : { destination, colorize: false }),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,req,res,responseTime',
    singleLine: true,
    messageFormat: prettyMessage
  })
}
