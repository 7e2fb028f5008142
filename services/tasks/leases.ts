import type { Redis } from 'ioredis'
import { storageCall } from '../errors.js'
import { redisScript, type RedisScript } from '../redis-script.js'
import type { Logger } from '../logger.js'

/**
 * Which instance runs which task (CONTRACT.md §10). The instance running a task holds its lease and renews it;
 * a lease left to expire means its instance died, and the task is claimed by exactly one other instance, which
 * fails it.
 */
export interface TaskLeases {
  /** Takes the lease of a task this instance starts running, and keeps renewing it until `release`. */
  acquire (taskId: string): Promise<void>
  /** Keeps renewing a lease the task store took with the task's insert (see `TaskStore.leasesOnInsert`). */
  hold (taskId: string): void
  release (taskId: string): Promise<void>
  /**
   * Stops renewing a lease without giving it back: it lapses, and an instance's reaper fails the task. For a run that
   * cannot write its task (storage down past its retries): the task is left for the reaper, never stranded.
   */
  abandon (taskId: string): void
  /**
   * Claims tasks whose lease expired. Each expired lease is claimed by one caller at a time, across all instances:
   * the claim is itself a lease, so a claimer that fails to settle the task leaves it to be claimed again. Call
   * `release` once the task is settled.
   */
  claimExpired (): Promise<string[]>
  close (): Promise<void>
}

export interface RedisTaskLeasesOptions {
  /** The sorted set of leases is `<keyPrefix>leases`. */
  keyPrefix: string
  /** `tasks.lease_ttl` in ms: how long a lease lasts unrenewed. It is renewed every third of that. */
  ttlMs: number
  log: Logger
}

/** Most expired leases claimed by one call; the next round takes the rest. */
const CLAIM_BATCH = 100

// Scores are expiry times by Redis' own clock, so instances with skewed clocks agree on what has expired.
// KEYS[1] the lease set. ARGV[1] ttl ms, ARGV[2] 'take' (new leases) or 'renew' (only those still in the set),
// ARGV[3..] task ids.
const SET_LUA = `
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 3, #ARGV do
  if ARGV[2] == 'renew' then redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[i])
  else redis.call('ZADD', KEYS[1], expires, ARGV[i]) end
end
return #ARGV - 2
`

// KEYS[1] the lease set. ARGV[1] the batch size, ARGV[2] ttl ms. Returns the expired leases and leases them again for
// the claimer: one claimer at a time, and a claim whose task is never settled (storage down) lapses and is retried.
const CLAIM_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id) end
return ids
`

/** Leases in one Redis sorted set, scored by expiry. Renewal is one script call for all the tasks held here. */
export class RedisTaskLeases implements TaskLeases {
  readonly #client: Redis
  readonly #set: RedisScript
  readonly #claim: RedisScript
  readonly #key: string
  readonly #ttlMs: number
  readonly #log: Logger
  readonly #held = new Set<string>()
  readonly #timer: NodeJS.Timeout

  /** `client` is borrowed: never closed here. */
  constructor (client: Redis, opts: RedisTaskLeasesOptions) {
    this.#client = client
    this.#set = redisScript(client, 'a2aLeaseSet', SET_LUA, 1)
    this.#claim = redisScript(client, 'a2aLeaseClaim', CLAIM_LUA, 1)
    this.#key = `${opts.keyPrefix}leases`
    this.#ttlMs = Math.round(opts.ttlMs)
    this.#log = opts.log
    this.#timer = setInterval(() => { this.#renew() }, Math.max(50, Math.floor(this.#ttlMs / 3))).unref()
  }

  /** Tasks this instance holds leases on. */
  get held (): number {
    return this.#held.size
  }

  async acquire (taskId: string): Promise<void> {
    this.#held.add(taskId)
    await storageCall(this.#set(this.#key, this.#ttlMs, 'take', taskId))
  }

  hold (taskId: string): void {
    this.#held.add(taskId)
  }

  async release (taskId: string): Promise<void> {
    this.#held.delete(taskId)
    await storageCall(this.#client.zrem(this.#key, taskId))
  }

  abandon (taskId: string): void {
    this.#held.delete(taskId)
  }

  async claimExpired (): Promise<string[]> {
    return await storageCall(this.#claim(this.#key, CLAIM_BATCH, this.#ttlMs)) as string[]
  }

  async close (): Promise<void> {
    clearInterval(this.#timer)
    this.#held.clear()
  }

  #renew (): void {
    if (this.#held.size === 0) return
    // Renew only: a lease another instance has claimed (this one was stalled past its TTL) is not taken back.
    this.#set(this.#key, this.#ttlMs, 'renew', ...this.#held).catch((err: Error) => {
      this.#log.warn({ err, held: this.#held.size }, 'task leases not renewed')
    })
  }
}
