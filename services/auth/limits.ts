import type { Redis } from 'ioredis'
import type { LRUCache } from 'lru-cache'
import { boundedLru } from '../kernel/bounded-lru.js'
import { storageCall } from '../kernel/errors.js'
import { redisScript, type RedisScript } from '../redis/script.js'

/** The answer of a limiter: allowed or not, and when to come back. */
export interface LimitResult {
  allowed: boolean
  /** Tokens (or attempts) left after this one. */
  remaining: number
  /** Milliseconds until the next request would be allowed; 0 when allowed. */
  retryAfterMs: number
}

/**
 * A token bucket per key (CONTRACT.md §9): `burst` tokens, refilled at `perMinute` tokens a minute. In memory, or in
 * Redis (one hash per key, one Lua script per take) so that every instance shares the buckets.
 */
export interface TokenBuckets {
  /** At once in memory (no promise on the path of every request), a promise from Redis. */
  take (key: string): LimitResult | Promise<LimitResult>
}

/**
 * Failed authentications per client IP in a fixed one-minute window. Past the limit, `blocked` says so until the
 * window passes.
 */
export interface FailureWindows {
  /** Ms until the IP may try again; 0 when it may. At once in memory, a promise from Redis. */
  blocked (ip: string): number | Promise<number>
  fail (ip: string): Promise<void>
  /**
   * Counts an attempt as failed before it is checked (an introspection, which takes time): so that concurrent
   * attempts cannot all pass `blocked` before any of them has failed. Ms until the IP may try again when this one
   * is past the limit (it is refused), else 0; `forgive` takes the count back once the attempt has succeeded.
   */
  reserve (ip: string): Promise<number>
  forgive (ip: string): Promise<void>
}

export interface BucketOptions {
  perMinute: number
  burst: number
  /** Clock in ms (tests). */
  now?: () => number
  /** Most keys kept in memory; the least recently used go first (they are full buckets by then). */
  maxKeys?: number
}

const MINUTE_MS = 60_000
const DEFAULT_MAX_KEYS = 100_000

export class MemoryTokenBuckets implements TokenBuckets {
  readonly #buckets: LRUCache<string, { tokens: number, at: number }>
  readonly #rate: number
  readonly #burst: number
  readonly #now: () => number

  constructor (opts: BucketOptions) {
    this.#rate = opts.perMinute / MINUTE_MS
    this.#burst = opts.burst
    this.#now = opts.now ?? Date.now
    this.#buckets = boundedLru(opts.maxKeys ?? DEFAULT_MAX_KEYS)
  }

  take (key: string): LimitResult {
    const now = this.#now()
    // `get` makes the key the most recently used; a bucket found is refilled in place.
    let bucket = this.#buckets.get(key)
    if (bucket === undefined) {
      bucket = { tokens: this.#burst, at: now }
      this.#buckets.set(key, bucket)
    } else {
      bucket.tokens = Math.min(this.#burst, bucket.tokens + (now - bucket.at) * this.#rate)
      bucket.at = now
    }
    return consume(bucket, this.#rate)
  }
}

function consume (bucket: { tokens: number }, rate: number): LimitResult {
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1
    return { allowed: true, remaining: Math.floor(bucket.tokens), retryAfterMs: 0 }
  }
  return { allowed: false, remaining: 0, retryAfterMs: Math.ceil((1 - bucket.tokens) / rate) }
}

// KEYS[1] bucket; ARGV: burst, tokens per ms. Redis's own clock, so instances with skewed clocks agree.
const TAKE_SCRIPT = `
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(s[1]) or burst
local at = tonumber(s[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return { allowed, tostring(tokens) }
`

export class RedisTokenBuckets implements TokenBuckets {
  readonly #take: RedisScript
  readonly #prefix: string
  readonly #rate: number
  readonly #burst: number

  constructor (client: Redis, opts: BucketOptions & { keyPrefix: string }) {
    this.#take = redisScript(client, 'a2aBucketTake', TAKE_SCRIPT, 1)
    this.#prefix = opts.keyPrefix
    this.#rate = opts.perMinute / MINUTE_MS
    this.#burst = opts.burst
  }

  async take (key: string): Promise<LimitResult> {
    const [allowed, tokens] = await storageCall(this.#take(this.#prefix + key, this.#burst, this.#rate)) as [number, string]
    const bucket = { tokens: Number(tokens) }
    if (allowed === 1) return { allowed: true, remaining: Math.floor(bucket.tokens), retryAfterMs: 0 }
    return { allowed: false, remaining: 0, retryAfterMs: Math.ceil((1 - bucket.tokens) / this.#rate) }
  }
}

export class MemoryFailureWindows implements FailureWindows {
  readonly #windows: LRUCache<string, { count: number, resetAt: number }>
  readonly #limit: number
  readonly #now: () => number

  constructor (opts: { perMinute: number, now?: () => number, maxKeys?: number }) {
    this.#limit = opts.perMinute
    this.#now = opts.now ?? Date.now
    this.#windows = boundedLru(opts.maxKeys ?? DEFAULT_MAX_KEYS)
  }

  blocked (ip: string): number {
    const w = this.#windows.get(ip)
    const now = this.#now()
    if (w === undefined || w.resetAt <= now || w.count < this.#limit) return 0
    return w.resetAt - now
  }

  async fail (ip: string): Promise<void> {
    this.#count(ip)
  }

  async reserve (ip: string): Promise<number> {
    const w = this.#count(ip)
    return w.count > this.#limit ? w.resetAt - this.#now() : 0
  }

  async forgive (ip: string): Promise<void> {
    const w = this.#windows.get(ip)
    if (w !== undefined && w.resetAt > this.#now() && w.count > 0) w.count--
  }

  #count (ip: string): { count: number, resetAt: number } {
    const now = this.#now()
    let w = this.#windows.get(ip)
    if (w === undefined || w.resetAt <= now) {
      w = { count: 1, resetAt: now + MINUTE_MS }
      this.#windows.set(ip, w)
    } else {
      w.count++
    }
    return w
  }
}

// KEYS[1] the IP's window. Counts one attempt; replies {count, ms left in the window}.
const RESERVE_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1], 'NX')
return { count, redis.call('PTTL', KEYS[1]) }
`

// KEYS[1] the IP's window. Takes one attempt back, if the window still holds one.
const FORGIVE_SCRIPT = `
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 1
`

export class RedisFailureWindows implements FailureWindows {
  readonly #client: Redis
  readonly #reserve: RedisScript
  readonly #forgive: RedisScript
  readonly #prefix: string
  readonly #limit: number

  constructor (client: Redis, opts: { perMinute: number, keyPrefix: string }) {
    this.#client = client
    this.#reserve = redisScript(client, 'a2aFailureReserve', RESERVE_SCRIPT, 1)
    this.#forgive = redisScript(client, 'a2aFailureForgive', FORGIVE_SCRIPT, 1)
    this.#prefix = opts.keyPrefix
    this.#limit = opts.perMinute
  }

  async blocked (ip: string): Promise<number> {
    const [count, ttl] = await storageCall(this.#client.multi().get(this.#prefix + ip).pttl(this.#prefix + ip).exec()) as Array<[Error | null, unknown]>
    if (Number(count[1] ?? 0) < this.#limit) return 0
    return Math.max(1, Number(ttl[1]))
  }

  async fail (ip: string): Promise<void> {
    await storageCall(this.#client.multi().incr(this.#prefix + ip).pexpire(this.#prefix + ip, MINUTE_MS, 'NX').exec())
  }

  async reserve (ip: string): Promise<number> {
    const [count, ttl] = await storageCall(this.#reserve(this.#prefix + ip, MINUTE_MS)) as [number, number]
    return count > this.#limit ? Math.max(1, ttl) : 0
  }

  async forgive (ip: string): Promise<void> {
    await storageCall(this.#forgive(this.#prefix + ip))
  }
}
