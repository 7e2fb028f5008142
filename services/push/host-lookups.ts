import { lookup as dnsLookup } from 'node:dns/promises'
import type { LookupAddress } from 'node:dns'
import { boundedLru } from '../kernel/bounded-lru.js'

/**
 * Webhook host names, resolved with the system's resolver (`getaddrinfo`: the hosts file, search domains, as every
 * other program on the machine) without letting the clients who choose those names take the resolver from everyone.
 *
 * `getaddrinfo` runs on libuv's thread pool (4 threads), which file reads, zlib and the password hashes share, and it
 * cannot be called off. 200 push deliveries to one name whose DNS server had stopped answering held every thread
 * for 35 s, and kept the process from exiting for as long after it closed (the fuzz test, 2026-11-28). So:
 * - lookups of the same name at the same time are one lookup;
 * - at most `maxInFlight` lookups run at once (2 of the 4 threads); a lookup given up on still holds its thread, so
 *   it holds its place until it really ends;
 * - at most `maxWaiting` wait for a place; more are refused at once (`EAI_AGAIN`), and the delivery is retried as
 *   after any failed attempt;
 * - a caller waits at most `timeoutMs` in all (`ETIMEOUT`);
 * - a name that does not exist (`ENOTFOUND`, `ENODATA`) is remembered as such for `negativeTtlMs` (the last 10,000);
 * - `close` refuses whatever still waits.
 */
export interface HostLookupsOptions {
  /** The resolver; default `dns.promises.lookup(hostname, { all: true })`. */
  lookup?: (hostname: string) => Promise<LookupAddress[]>
  maxInFlight?: number
  maxWaiting?: number
  timeoutMs?: number
  negativeTtlMs?: number
  /** Clock in ms (tests). */
  now?: () => number
}

export interface HostLookups {
  resolve: (hostname: string) => Promise<LookupAddress[]>
  /** Lookups running now, and callers waiting for a place. */
  readonly inFlight: number
  readonly waiting: number
  close: () => void
}

const DEFAULTS = { maxInFlight: 2, maxWaiting: 256, timeoutMs: 10_000, negativeTtlMs: 5_000 }
const NO_SUCH_NAME = new Set(['ENOTFOUND', 'ENODATA'])
const MAX_MISSING = 10_000

function lookupError (code: string, hostname: string, detail: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`getaddrinfo ${code} ${hostname}: ${detail}`), { code, hostname, syscall: 'getaddrinfo' })
}

interface Waiting {
  hostname: string
  start: () => void
  refuse: (err: Error) => void
}

/** A lookup under way (running, or waiting for a place), shared by its callers. */
interface Pending {
  promise: Promise<LookupAddress[]>
  callers: number
  /** Set while it waits for a place. */
  waiting?: Waiting
}

export function createHostLookups (opts: HostLookupsOptions = {}): HostLookups {
  const lookup = opts.lookup ?? (hostname => dnsLookup(hostname, { all: true }))
  const { maxInFlight, maxWaiting, timeoutMs, negativeTtlMs } = { ...DEFAULTS, ...opts }
  const now = opts.now ?? Date.now
  const pending = new Map<string, Pending>()
  /** Names found not to exist, until when. */
  const missing = boundedLru<string, { until: number, error: NodeJS.ErrnoException }>(MAX_MISSING)
  /** Lookups waiting for a place, in order. */
  const queue: Waiting[] = []
  let running = 0
  let closed = false

  // One place freed starts one waiting lookup (each `start` takes the place at once).
  const next = (): void => {
    if (running < maxInFlight) queue.shift()?.start()
  }

  /** Starts the lookup of `hostname` once a place is free; its place is held until the resolver answers. */
  const begin = (hostname: string): Pending => {
    const entry: Pending = { promise: undefined as unknown as Promise<LookupAddress[]>, callers: 0 }
    entry.promise = new Promise<LookupAddress[]>((resolve, reject) => {
      const start = (): void => {
        entry.waiting = undefined
        running++
        lookup(hostname).then(resolve, (err: NodeJS.ErrnoException) => {
          if (NO_SUCH_NAME.has(String(err.code))) missing.set(hostname, { until: now() + negativeTtlMs, error: err })
          reject(err)
        }).finally(() => {
          running--
          next()
        })
      }
      if (running < maxInFlight) start()
      else if (queue.length >= maxWaiting) reject(lookupError('EAI_AGAIN', hostname, `${maxWaiting} webhook host lookups are waiting already`))
      else {
        entry.waiting = { hostname, start, refuse: reject }
        queue.push(entry.waiting)
      }
    }).finally(() => {
      if (pending.get(hostname) === entry) pending.delete(hostname)
    })
    // Its callers may all have given up on it.
    entry.promise.catch(() => {})
    return entry
  }

  /** A caller that gives up: a lookup nobody waits for any more leaves the queue, if it has not started. */
  const leave = (hostname: string, entry: Pending): void => {
    entry.callers--
    const waiting = entry.waiting
    if (entry.callers > 0 || waiting === undefined) return
    queue.splice(queue.indexOf(waiting), 1)
    entry.waiting = undefined
    waiting.refuse(lookupError('ETIMEOUT', hostname, 'given up while waiting for a place'))
  }

  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    if (closed) throw lookupError('ECANCELLED', hostname, 'the server is closing')
    const known = missing.get(hostname)
    if (known !== undefined) {
      if (known.until > now()) throw known.error
      missing.delete(hostname)
    }
    let entry = pending.get(hostname)
    if (entry === undefined) {
      entry = begin(hostname)
      pending.set(hostname, entry)
    }
    entry.callers++
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(lookupError('ETIMEOUT', hostname, `no answer within ${timeoutMs} ms`)), timeoutMs)
      timer.unref()
    })
    try {
      const addresses = await Promise.race([entry.promise, expired])
      clearTimeout(timer)
      return addresses
    } catch (err) {
      clearTimeout(timer)
      if ((err as NodeJS.ErrnoException).code === 'ETIMEOUT') leave(hostname, entry)
      else entry.callers--
      throw err
    }
  }

  return {
    resolve,
    get inFlight () { return running },
    get waiting () { return queue.length },
    close () {
      closed = true
      for (const { hostname, refuse } of queue.splice(0)) refuse(lookupError('ECANCELLED', hostname, 'the server is closing'))
      missing.clear()
    }
  }
}
