import type { Redis } from 'ioredis'
import { storageCall } from '../kernel/errors.js'
import { redisScript, type RedisScript } from '../redis/script.js'
import type { Logger } from '../kernel/logger.js'

/**
 * Which instance runs which task (CONTRACT.md §10). The instance running a task holds its lease and renews it;
 * a lease left to expire, and not renewed within a grace once Redis takes writes, means its instance died, and the
 * task is claimed by exactly one other instance, which fails it.
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
   * Claims tasks whose lease expired and stayed unrenewed for a grace past the round that found it expired (a
   * write outage longer than the TTL does not cost a live owner its tasks). Each is claimed by one caller at a time,
   * across all instances: the claim is itself a lease, so a claimer that fails to settle the task leaves it to be
   * claimed again. Call `release` once the task is settled.
   */
  claimExpired (): Promise<string[]>
  close (): Promise<void>
}

export interface RedisTaskLeasesOptions {
  /** The sorted set of leases is `<keyPrefix>leases`. */
  keyPrefix: string
  /** `tasks.lease_ttl` in ms: how long a lease lasts unrenewed. It is renewed every third of that. */
  ttlMs: number
  /**
   * How long an expired lease is left to its owner before it is claimed, counted from the first claim round that
   * found it expired (a moment Redis took writes): an owner that is alive renews it meanwhile, even one whose
   * renewals Redis refused for longer than the TTL. Default `ttlMs`; 0 claims an expired lease at once.
   */
  graceMs?: number
  log: Logger
}

/** Most expired leases claimed by one call; the next round takes the rest. */
export const CLAIM_BATCH = 100
/** A renewal Redis refused is tried again this soon (or every third of the TTL, when that is sooner). */
const RETRY_MS = 100

// Scores are expiry times by Redis' own clock, so instances with skewed clocks agree on what has expired.
// KEYS[1] the lease set, KEYS[2] the doubted leases (see CLAIM_LUA). ARGV[1] ttl ms, ARGV[2] 'take' (new leases) or
// 'renew' (only those still in the set), ARGV[3..] task ids. A lease renewed or taken is no longer doubted.
const SET_LUA = `
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local doubted = redis.call('ZCARD', KEYS[2]) > 0
for i = 3, #ARGV do
  if ARGV[2] == 'renew' then redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[i])
  else redis.call('ZADD', KEYS[1], expires, ARGV[i]) end
  if doubted then redis.call('ZREM', KEYS[2], ARGV[i]) end
end
return #ARGV - 2
`

// KEYS[1] the lease set, KEYS[2] the doubted leases, scored by when they were found expired. ARGV[1] the batch size,
// ARGV[2] ttl ms, ARGV[3] grace ms. An expired lease is first doubted: it is given `grace` more, counted from now (Redis
// takes writes now, so an owner that is alive renews it meanwhile, which clears the doubt). An expired lease already
// doubted is claimed: leased again for the claimer, so one claimer at a time, and a claim whose task is never
// settled (storage down) lapses and is retried. With no grace, an expired lease is claimed at once. A doubt older than
// two graces belongs to a lease that went with its task's last write: dropped. Returns the claimed ids.
const CLAIM_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local grace = tonumber(ARGV[3])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local claimed = {}
if grace > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 2 * grace) end
for _, id in ipairs(ids) do
  if grace == 0 or redis.call('ZREM', KEYS[2], id) == 1 then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id)
    table.insert(claimed, id)
  else
    redis.call('ZADD', KEYS[2], now, id)
    redis.call('ZADD', KEYS[1], now + grace, id)
  end
end
return claimed
`

/**
 * What every backend's leases share: the tasks held here, all renewed together every third of the TTL; a renewal
 * the backend refused is logged once per outage and retried every `RETRY_MS` until one lands. A backend says how to
 * take, renew, drop and claim.
 */
export abstract class RenewedLeases implements TaskLeases {
  protected readonly ttlMs: number
  protected readonly graceMs: number
  readonly #retryMs: number
  readonly #log: Logger
  readonly #held = new Set<string>()
  readonly #timer: NodeJS.Timeout
  /** A renewal is in flight: the next waits for it. */
  #renewing = false
  /** The last renewal failed: renewals are retried every `#retryMs` until one lands. */
  #failing = false
  #retry: NodeJS.Timeout | undefined

  constructor (opts: { ttlMs: number, graceMs?: number, log: Logger }) {
    this.ttlMs = Math.round(opts.ttlMs)
    this.graceMs = Math.round(opts.graceMs ?? this.ttlMs)
    this.#log = opts.log
    const period = Math.max(50, Math.floor(this.ttlMs / 3))
    this.#retryMs = Math.min(period, RETRY_MS)
    this.#timer = setInterval(() => { this.#renew() }, period).unref()
  }

  /** Takes (or takes again) the lease of one task, for `ttlMs`. */
  protected abstract take (taskId: string): Promise<unknown>
  /** Renews the leases of these tasks that still exist; never takes back one that is gone (released, or claimed). */
  protected abstract renewAll (taskIds: string[]): Promise<unknown>
  protected abstract drop (taskId: string): Promise<unknown>
  abstract claimExpired (): Promise<string[]>

  /** Tasks this instance holds leases on. */
  get held (): number {
    return this.#held.size
  }

  async acquire (taskId: string): Promise<void> {
    this.#held.add(taskId)
    await this.take(taskId)
  }

  hold (taskId: string): void {
    this.#held.add(taskId)
  }

  async release (taskId: string): Promise<void> {
    this.#held.delete(taskId)
    await this.drop(taskId)
  }

  abandon (taskId: string): void {
    this.#held.delete(taskId)
  }

  async close (): Promise<void> {
    clearInterval(this.#timer)
    clearTimeout(this.#retry)
    this.#held.clear()
  }

  #renew (): void {
    this.#retry = undefined
    // Once closed, nothing is held: a retry of a renewal that failed meanwhile stops here.
    if (this.#renewing || this.#held.size === 0) return
    this.#renewing = true
    this.renewAll([...this.#held]).then(() => {
      this.#renewing = false
      if (!this.#failing) return
      this.#failing = false
      this.#log.info({ held: this.#held.size }, 'task leases renewed again')
    }, (err: Error) => {
      this.#renewing = false
      // Logged once per outage; retried at once and often, not a third of the TTL later, so that a short outage
      // costs the leases no more than its own length (the claimers give an expired lease a grace on top).
      if (!this.#failing) this.#log.warn({ err, held: this.#held.size }, 'task leases not renewed')
      this.#failing = true
      this.#retry = setTimeout(() => { this.#renew() }, this.#retryMs).unref()
    })
  }
}

/** Leases in one Redis sorted set, scored by expiry. Renewal is one script call for all the tasks held here. */
export class RedisTaskLeases extends RenewedLeases {
  readonly #client: Redis
  readonly #set: RedisScript
  readonly #claim: RedisScript
  readonly #key: string
  readonly #doubted: string

  /** `client` is borrowed: never closed here. */
  constructor (client: Redis, opts: RedisTaskLeasesOptions) {
    super(opts)
    this.#client = client
    this.#set = redisScript(client, 'a2aLeaseSet', SET_LUA, 2)
    this.#claim = redisScript(client, 'a2aLeaseClaim', CLAIM_LUA, 2)
    this.#key = `${opts.keyPrefix}leases`
    this.#doubted = `${opts.keyPrefix}leases:doubted`
  }

  protected async take (taskId: string): Promise<void> {
    await storageCall(this.#set(this.#key, this.#doubted, this.ttlMs, 'take', taskId))
  }

  protected async renewAll (taskIds: string[]): Promise<void> {
    // Renew only: a lease whose task has ended (or was released) is not taken back.
    await this.#set(this.#key, this.#doubted, this.ttlMs, 'renew', ...taskIds)
  }

  protected async drop (taskId: string): Promise<void> {
    // A doubt left behind is harmless: a lease taken again clears it, and the claimers drop it once it is old.
    await storageCall(this.#client.zrem(this.#key, taskId))
  }

  async claimExpired (): Promise<string[]> {
    return await storageCall(this.#claim(this.#key, this.#doubted, CLAIM_BATCH, this.ttlMs, this.graceMs)) as string[]
  }
}
