import type { Logger } from '../kernel/logger.js'

/** Socket error codes that say the connection failed or broke: Redis is not there (yet), and a stack adds nothing. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE'
])
/** ioredis' own errors for a command that met no connection (they carry no code), by message. */
const CONNECTION_MESSAGES = new Set([
  'Connection is closed.',
  'Command timed out',
  "Stream isn't writeable and enableOfflineQueue options is false"
])
/** The longest gap between two reports of one outage. */
const REPORT_MAX_GAP_MS = 60_000

/**
 * Whether `err` only says that Redis cannot be reached: a refused, reset or timed-out connection, a command that
 * found none. Such errors are reported as an outage, once per interval and without a stack, by the client's owner.
 */
export function isConnectionError (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const { code } = err as { code?: unknown }
  return (typeof code === 'string' && CONNECTION_CODES.has(code)) ||
    err.name === 'MaxRetriesPerRequestError' || CONNECTION_MESSAGES.has(err.message)
}

/** A Redis URL as it may be logged: `redis://user:secret@host:6379/0` becomes `redis://host:6379/0`. */
export function redisAddress (url: string): string {
  try {
    const parsed = new URL(url)
    parsed.username = ''
    parsed.password = ''
    return parsed.href
  } catch {
    return '(a url that does not parse)'
  }
}

export interface OutageReportOptions {
  log: Logger
  /** The Redis URL (logged without its credentials). */
  url: string
  /** The client's longest wait between two connection attempts, in ms: named in the line. */
  retryMs: number
  /** The clock (tests). */
  now?: () => number
}

/**
 * What a client's failed connection attempts log: one line when the outage begins, then one per interval while it
 * lasts, the interval doubling from the retry delay up to a minute, and one line when it ends. A client retries
 * every second, and a Redis that is not running at start would otherwise fill the log with a line per attempt.
 */
export class OutageReport {
  readonly #log: Logger
  readonly #redis: string
  readonly #retryMs: number
  readonly #now: () => number
  /** When the outage began; undefined while connected. */
  #since: number | undefined
  #nextAt = 0
  #gapMs = 0

  constructor (opts: OutageReportOptions) {
    this.#log = opts.log
    this.#redis = redisAddress(opts.url)
    this.#retryMs = opts.retryMs
    this.#now = opts.now ?? Date.now
  }

  /** A connection attempt failed, or the connection broke. */
  failed (err: Error): void {
    const now = this.#now()
    if (this.#since === undefined) {
      this.#since = now
      this.#nextAt = now
      this.#gapMs = this.#retryMs
    }
    if (now < this.#nextAt) return
    this.#nextAt = now + this.#gapMs
    this.#gapMs = Math.min(this.#gapMs * 2, REPORT_MAX_GAP_MS)
    const retrying = `retrying every ${this.#retryMs / 1000} s`
    const downForS = Math.round((now - this.#since) / 1000)
    if (isConnectionError(err)) {
      this.#log.warn({ redis: this.#redis, code: (err as { code?: string }).code ?? err.name, downForS }, `redis is not answering; ${retrying}`)
    } else {
      // Not a plain outage (a wrong password, say): the error says what to fix.
      this.#log.warn({ redis: this.#redis, err, downForS }, `redis connection failed; ${retrying}`)
    }
  }

  /** The client is connected (again). */
  restored (): void {
    if (this.#since === undefined) return
    const downForS = Math.round((this.#now() - this.#since) / 1000)
    this.#since = undefined
    this.#log.info({ redis: this.#redis, downForS }, 'redis connection restored')
  }
}

/**
 * An `error` listener for a further connection to a Redis whose client reports its outages: logs what is not a
 * connection error under `message`, and leaves the outage to that report rather than logging each failed attempt.
 */
export function logUnlessConnectionError (log: Logger, message: string): (err: Error) => void {
  return err => {
    if (!isConnectionError(err)) log.warn({ err }, message)
  }
}
