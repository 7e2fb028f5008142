import type { Redis } from 'ioredis'
import { storageCall } from '../kernel/errors.js'
import type { Logger } from '../kernel/logger.js'
import type { StoredTask } from '../tasks/store.js'
import type { PushOutbox } from './store.js'

/**
 * The push outbox (kvcache): the state changes of tasks with push configs whose webhooks may not be queued yet.
 * RedisTaskStore records a change here in the same script that writes it; the instance that made the change queues
 * its deliveries and acknowledges the entry. An entry left unacknowledged (that instance died in between, or Redis
 * failed it) is claimed after a grace period by any instance's relay, which queues the deliveries again. Delivery
 * job ids are made of (task, version, config), so a change queued twice is delivered once while BullMQ remembers the
 * first job (an hour), and at least once whatever happens (CONTRACT.md §10).
 */
export interface OutboxKeys {
  /** Sorted set: `<taskId>.<version>` scored by when the change was written (or last claimed), ms by Redis' clock. */
  readonly queue: string
  /** Hash: the same member → the task record JSON of that version. */
  readonly bodies: string
}

/** The outbox keys under the task store's prefix (`tasks.key_prefix`). */
export function outboxKeys (taskKeyPrefix: string): OutboxKeys {
  return { queue: `${taskKeyPrefix}outbox`, bodies: `${taskKeyPrefix}outbox:b` }
}

export function outboxMember (taskId: string, version: number): string {
  return `${taskId}.${version}`
}

export interface RedisPushOutboxOptions {
  /** `tasks.key_prefix`: the outbox lives beside the tasks that write it. */
  taskKeyPrefix: string
  /** How long an entry is left to the instance that wrote it before others may claim it, ms. */
  graceMs: number
  log: Logger
}

/** Most entries one claim takes; the next round takes the rest. */
const CLAIM_BATCH = 100

// KEYS: the outbox set, its bodies. ARGV: grace ms, batch. Takes entries older than the grace and scores them now,
// so that one claimer has them for the next grace period; replies {member, body, member, body, ...}. A member
// without a body (acknowledged half-way) is dropped.
const CLAIM_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]), 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, member in ipairs(members) do
  local body = redis.call('HGET', KEYS[2], member)
  if body then
    redis.call('ZADD', KEYS[1], now, member)
    table.insert(out, member)
    table.insert(out, body)
  else
    redis.call('ZREM', KEYS[1], member)
  end
end
return out
`

interface OutboxCommands {
  a2aOutboxClaim (queue: string, bodies: string, graceMs: number, batch: number): Promise<string[]>
}

/** The relay's side of the outbox: claim what waited too long, acknowledge what was queued. */
export class RedisPushOutbox implements PushOutbox {
  readonly #client: Redis
  readonly #keys: OutboxKeys
  readonly #graceMs: number
  readonly #log: Logger

  /** `client` is borrowed: never closed here. */
  constructor (client: Redis, opts: RedisPushOutboxOptions) {
    this.#client = client
    this.#keys = outboxKeys(opts.taskKeyPrefix)
    this.#graceMs = opts.graceMs
    this.#log = opts.log
    client.defineCommand('a2aOutboxClaim', { numberOfKeys: 2, lua: CLAIM_LUA })
  }

  /** Entries that waited past the grace period, oldest first: each task record as of its state change. */
  async claim (): Promise<StoredTask[]> {
    const reply = await storageCall((this.#client as unknown as OutboxCommands).a2aOutboxClaim(this.#keys.queue, this.#keys.bodies, this.#graceMs, CLAIM_BATCH))
    const records: StoredTask[] = []
    for (let i = 1; i < reply.length; i += 2) records.push(JSON.parse(reply[i]))
    return records
  }

  /**
   * The change's deliveries are queued (or it has no config left): the entry is done. Never rejects: an entry that
   * could not be cleared is claimed again later, and queueing it twice makes no second delivery.
   */
  async ack (taskId: string, version: number): Promise<void> {
    const member = outboxMember(taskId, version)
    try {
      await this.#client.multi().zrem(this.#keys.queue, member).hdel(this.#keys.bodies, member).exec()
    } catch (err) {
      this.#log.warn({ err, taskId }, 'outbox entry not acknowledged')
    }
  }
}
