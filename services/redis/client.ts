import { Redis } from 'ioredis'
import type { CacheService } from '../../schemas/config.js'
import type { Logger } from '../kernel/logger.js'
import { OutageReport } from './outage.js'

export interface RedisClientOptions {
  /** How long one connection attempt may take, in ms. Default 2000. */
  connectTimeoutMs?: number
  /**
   * How long a command may wait for its reply, in ms, counted from when it is issued (so time spent queued while
   * disconnected counts too). Default 2000: with a 1 s reconnect delay, a request fails within CONTRACT.md §8.1's 3 s.
   */
  commandTimeoutMs?: number
  /**
   * Gets the outage report: a warning when the connection fails, repeated at growing intervals while it stays down
   * (never one per attempt, never a stack), and a note when it is back. Without it, connection errors are left to
   * the owner.
   */
  log?: Logger
}

const DEFAULT_CONNECT_TIMEOUT_MS = 2_000
const DEFAULT_COMMAND_TIMEOUT_MS = 2_000
const RECONNECT_STEP_MS = 100
const MAX_RECONNECT_DELAY_MS = 1_000

/**
 * An ioredis client for a `type: cache` service (CONTRACT.md §8.1 and §10). It connects at once and reconnects
 * forever, backing off by 100 ms steps up to 1 s. Commands issued while it is down wait in ioredis' offline queue,
 * bounded by `commandTimeoutMs`, so a stalled or absent Redis fails a request instead of hanging it.
 *
 * - db: `service.db`. A `/N` path in `service.url` wins when present, as ioredis reads it (the config template
 *   documents "a path /N picks the db", and the loader already copies REDIS_URL's path into `db`).
 * - `retry_on_timeout`: ioredis has no such option, and never re-sends a command that hit `commandTimeout`. We map it
 *   to what ioredis can do: when true, a command caught by a dropped connection is re-sent once after reconnecting
 *   (`maxRetriesPerRequest: 1`, `autoResendUnfulfilledCommands: true`), still within its `commandTimeoutMs`; when
 *   false, it fails at the first disconnect (`maxRetriesPerRequest: 0`, no re-send). The push-config upsert is safe
 *   to re-send: a second run finds its own config again by id or url, and replaces it.
 * - `max_connections` is not used: an ioredis client is one pipelined connection shared by every request.
 */
export function createRedisClient (service: CacheService, opts: RedisClientOptions = {}): Redis {
  const client = new Redis(service.url, {
    db: service.db,
    lazyConnect: false,
    enableOfflineQueue: true,
    connectTimeout: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    commandTimeout: opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: service.retry_on_timeout ? 1 : 0,
    autoResendUnfulfilledCommands: service.retry_on_timeout,
    retryStrategy: attempt => Math.min(attempt * RECONNECT_STEP_MS, MAX_RECONNECT_DELAY_MS)
  })

  client.on('connect', () => { batchWrites(client.stream) })
  // A listener is always attached: without one, ioredis prints every failed reconnect attempt to stderr.
  // Callers see outages as StorageUnavailable from the stores and as 503 from `/ready`. The other connections to the
  // same Redis (the event bus' subscriber, the webhook queue's) leave their connection errors to this report.
  const report = opts.log === undefined ? undefined : new OutageReport({ log: opts.log, url: service.url, retryMs: MAX_RECONNECT_DELAY_MS })
  client.on('error', (err: Error) => { report?.failed(err) })
  client.on('ready', () => { report?.restored() })
  return client
}

/**
 * Sends what a client writes in one turn of the event loop in one write: the socket is corked at the first write of
 * a turn and uncorked once the turn's I/O callbacks have run (`setImmediate`). ioredis writes each command on its own,
 * and a write to a socket is a system call: on a loaded instance, with requests arriving on many connections in one
 * turn, those calls cost more than the rest of a `message/send` over Redis (CPU profile: 16% in `writeUtf8String`).
 * ioredis' `enableAutoPipelining` batches too, but builds a Pipeline object per batch, and measured slower. A command
 * waits at most until the end of the turn it was issued in. Applied to each new socket (ioredis reconnects with a
 * new one); the subscriber connections, which send a command now and then, are left alone.
 */
export function batchWrites (stream: Redis['stream']): void {
  const write = stream.write
  let corked = false
  const uncork = (): void => {
    corked = false
    stream.uncork()
  }
  stream.write = function (this: typeof stream, ...args: Parameters<typeof stream.write>): boolean {
    if (!corked) {
      corked = true
      stream.cork()
      setImmediate(uncork)
    }
    return write.apply(this, args)
  } as typeof stream.write
}

/**
 * Closes a client we own: QUIT (pending replies arrive first), and when that takes longer than `ms` (Redis stalled,
 * or unreachable with commands queued), destroys the socket; queued commands then fail at once. Never throws.
 */
export async function quitWithin (client: Redis, ms: number, log?: Logger): Promise<void> {
  if (client.status === 'end') return
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<boolean>(resolve => { timer = setTimeout(resolve, ms, true) })
  const quit = client.quit().then(() => false, () => false)
  const timedOut = await Promise.race([quit, expired])
  clearTimeout(timer)
  client.disconnect()
  if (timedOut) {
    // disconnect() only half-closes the socket: a stalled server would keep it (and the queued commands) alive.
    client.stream?.destroy()
    log?.warn({ timeoutMs: ms }, 'redis did not quit in time: disconnecting')
  }
}
