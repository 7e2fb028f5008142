import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { storageCall } from '../kernel/errors.js'
import { redisScript, type RedisScript } from '../redis/script.js'
import type { Logger } from '../kernel/logger.js'

/**
 * Open SSE streams per principal (CONTRACT.md §9: at most 10). In memory for one instance; in Redis so that every
 * instance behind a load balancer counts the same streams (CONTRACT.md §10).
 */
export interface StreamSlots {
  /**
   * Takes a slot for one more stream of `owner`: the function that gives it back, or null when all are taken. The
   * release never rejects; it settles once the slot is free for every instance.
   */
  take (owner: string): Promise<Release | null>
  close (): Promise<void>
}

export type Release = () => Promise<void>

export class MemoryStreamSlots implements StreamSlots {
  readonly #max: number
  readonly #open = new Map<string, number>()

  constructor (max: number) {
    this.#max = max
  }

  async take (owner: string): Promise<Release | null> {
    const open = this.#open.get(owner) ?? 0
    if (open >= this.#max) return null
    this.#open.set(owner, open + 1)
    let held = true
    return async () => {
      if (!held) return
      held = false
      const left = (this.#open.get(owner) as number) - 1
      if (left === 0) this.#open.delete(owner)
      else this.#open.set(owner, left)
    }
  }

  async close (): Promise<void> {}
}

export interface RedisStreamSlotsOptions {
  max: number
  /** One sorted set per principal: `<keyPrefix><owner>`. */
  keyPrefix: string
  /** How long a slot lasts unrenewed, ms: the slots of an instance that died free themselves this late. */
  ttlMs?: number
  log: Logger
}

const DEFAULT_TTL_MS = 30_000

// KEYS[1] the owner's set. ARGV: max, ttl ms, member. Scores are expiry times by Redis' clock; expired members (an
// instance that died with streams open) are dropped before counting.
const TAKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
`

// KEYS: owner sets; ARGV[1] ttl ms, ARGV[2..] their members, in the same order. Renews only slots still in their
// set (XX); PEXPIRE on a set that is gone does nothing.
const RENEW_LUA = `
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', expires, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[1]))
end
return #KEYS
`

/**
 * Stream slots in Redis: a sorted set per principal whose members are this instance's open streams, scored by when
 * they lapse. The instance renews the slots it holds every third of the TTL, so a crashed instance's streams stop
 * counting within one TTL.
 */
export class RedisStreamSlots implements StreamSlots {
  readonly #client: Redis
  readonly #take: RedisScript
  /** Keys vary in number: the count goes first. */
  readonly #renewScript: RedisScript
  readonly #opts: Required<RedisStreamSlotsOptions>
  readonly #instance = randomUUID()
  /** member → owner key, for every slot this instance holds. */
  readonly #held = new Map<string, string>()
  readonly #timer: NodeJS.Timeout
  #seq = 0

  /** `client` is borrowed: never closed here. */
  constructor (client: Redis, opts: RedisStreamSlotsOptions) {
    this.#client = client
    this.#take = redisScript(client, 'a2aStreamSlotTake', TAKE_LUA, 1)
    this.#renewScript = redisScript(client, 'a2aStreamSlotRenew', RENEW_LUA)
    this.#opts = { ttlMs: DEFAULT_TTL_MS, ...opts }
    this.#timer = setInterval(() => this.#renew(), Math.max(50, Math.floor(this.#opts.ttlMs / 3))).unref()
  }

  /** Slots this instance holds. */
  get held (): number {
    return this.#held.size
  }

  async take (owner: string): Promise<Release | null> {
    const key = this.#opts.keyPrefix + owner
    const member = `${this.#instance}:${++this.#seq}`
    const taken = await storageCall(this.#take(key, this.#opts.max, this.#opts.ttlMs, member))
    if (taken !== 1) return null
    this.#held.set(member, key)
    return async () => {
      if (!this.#held.delete(member)) return
      try {
        await this.#client.zrem(key, member)
      } catch (err) {
        // The slot lapses by itself once it is no longer renewed.
        this.#opts.log.warn({ err }, 'stream slot not released')
      }
    }
  }

  async close (): Promise<void> {
    clearInterval(this.#timer)
    this.#held.clear()
  }

  #renew (): void {
    if (this.#held.size === 0) return
    const members = [...this.#held.keys()]
    const keys = members.map(m => this.#held.get(m) as string)
    this.#renewScript(keys.length, ...keys, this.#opts.ttlMs, ...members).catch((err: Error) => {
      this.#opts.log.warn({ err, held: members.length }, 'stream slots not renewed')
    })
  }
}
