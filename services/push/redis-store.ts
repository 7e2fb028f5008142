import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { PushNotificationConfig } from '../../schemas/push-config.js'
import { PushConfigLimit, StorageUnavailable } from '../kernel/errors.js'
import type { PushConfigStore, PutOptions, PutResult, StoredPushConfig } from './store.js'

export interface RedisPushConfigStoreOptions {
  /** Prepended to the task id to make the key of the task's hash, e.g. `a2a:push:`. */
  keyPrefix: string
}

/*
 * Key layout (CONTRACT.md §8.1: one hash per task, no KEYS/SCAN), key `<keyPrefix><taskId>`:
 *   c:<id>   the config as JSON, without its id (the field name carries it)
 *   order    JSON array of the ids in creation order (a replacement keeps its place)
 *   recent   JSON array of the same ids, the most recently put last: `latest` is its last element, and after that
 *            one is removed, the one put before it (still "the most recently set" of those left)
 * The `c:` prefix keeps config ids apart from `order` and `recent`. The hash exists only while it holds a config,
 * and expires with its task when `put` is given `ttlSeconds`. Scripts decode JSON with cjson but only re-encode
 * arrays of ids: the configs themselves are stored exactly as Node wrote them (cjson would turn `[]` into `{}`).
 */

// KEYS[1] the task's hash. ARGV: config JSON (no id), '1' when an id was given, that id, url, a fresh UUID (used only
// for a new id-less config past the first), the limit, PEXPIRE milliseconds ('' to leave the TTL alone).
// Replies {'ok', id, created 1|0} or {'limit', count}.
const PUT_LUA = `
local key = KEYS[1]
local order = {}
local raw = redis.call('HGET', key, 'order')
if raw then order = cjson.decode(raw) end
local id = ARGV[3]
local created = 1
if ARGV[2] == '1' then
  if redis.call('HEXISTS', key, 'c:' .. id) == 1 then created = 0 end
else
  for _, other in ipairs(order) do
    if cjson.decode(redis.call('HGET', key, 'c:' .. other)).url == ARGV[4] then
      id = other
      created = 0
      break
    end
  end
  if created == 1 then
    if #order == 0 then id = 'default' else id = ARGV[5] end
  end
end
if created == 1 then
  if #order >= tonumber(ARGV[6]) then return {'limit', #order} end
  table.insert(order, id)
  redis.call('HSET', key, 'order', cjson.encode(order))
end
local recent = {}
raw = redis.call('HGET', key, 'recent')
if raw then
  for _, other in ipairs(cjson.decode(raw)) do
    if other ~= id then table.insert(recent, other) end
  end
end
table.insert(recent, id)
redis.call('HSET', key, 'c:' .. id, ARGV[1], 'recent', cjson.encode(recent))
if ARGV[7] ~= '' then redis.call('PEXPIRE', key, ARGV[7]) end
return {'ok', id, created}
`

// KEYS[1] the task's hash. ARGV[1] the config id. Replies 1 when it existed, else 0. Deletes the key when empty.
const REMOVE_LUA = `
local key = KEYS[1]
local id = ARGV[1]
if redis.call('HDEL', key, 'c:' .. id) == 0 then return 0 end
local function without (field)
  local kept = {}
  for _, other in ipairs(cjson.decode(redis.call('HGET', key, field))) do
    if other ~= id then table.insert(kept, other) end
  end
  return kept
end
local order = without('order')
if #order == 0 then
  redis.call('DEL', key)
else
  redis.call('HSET', key, 'order', cjson.encode(order), 'recent', cjson.encode(without('recent')))
end
return 1
`

type PutReply = ['ok', string, 0 | 1] | ['limit', number]

/** The scripts, as `defineCommand` adds them to the client (EVALSHA, EVAL on NOSCRIPT). */
interface PushCommands {
  a2aPushConfigPut (key: string, ...args: string[]): Promise<PutReply>
  a2aPushConfigRemove (key: string, id: string): Promise<0 | 1>
}

/**
 * Push configs in Redis (`kvcache` backend, CONTRACT.md §8.1 and §10). Every write is one Lua script, so concurrent
 * writers on any number of instances never see or leave a half-applied upsert, and the per-task limit holds.
 * The client is borrowed: `close` leaves it to its owner.
 */
export class RedisPushConfigStore implements PushConfigStore {
  readonly #client: Redis
  readonly #commands: PushCommands
  readonly #prefix: string

  constructor (client: Redis, opts: RedisPushConfigStoreOptions) {
    this.#client = client
    this.#prefix = opts.keyPrefix
    client.defineCommand('a2aPushConfigPut', { numberOfKeys: 1, lua: PUT_LUA })
    client.defineCommand('a2aPushConfigRemove', { numberOfKeys: 1, lua: REMOVE_LUA })
    this.#commands = client as unknown as PushCommands
  }

  async put (taskId: string, config: PushNotificationConfig, opts: PutOptions): Promise<PutResult> {
    const { id: requested, ...rest } = config
    const json = JSON.stringify(rest)
    const ttl = opts.ttlSeconds
    const pexpire = ttl === undefined || !Number.isFinite(ttl) ? '' : String(Math.max(1, Math.ceil(ttl * 1000)))
    const reply = await this.#call(() => this.#commands.a2aPushConfigPut(
      this.#key(taskId), json, requested === undefined ? '0' : '1', requested ?? '', config.url, randomUUID(), String(opts.maxPerTask), pexpire
    ))
    if (reply[0] === 'limit') throw new PushConfigLimit(taskId, opts.maxPerTask)
    return { config: { id: reply[1], ...JSON.parse(json) }, created: reply[2] === 1 }
  }

  async get (taskId: string, id: string): Promise<StoredPushConfig | null> {
    const json = await this.#call(() => this.#client.hget(this.#key(taskId), `c:${id}`))
    return json === null ? null : parse(id, json)
  }

  async latest (taskId: string): Promise<StoredPushConfig | null> {
    // One HGETALL, not HGET then HGET: a remove between the two could not then make us miss a config.
    const hash = await this.#call(() => this.#client.hgetall(this.#key(taskId)))
    if (hash.recent === undefined) return null
    const recent: string[] = JSON.parse(hash.recent)
    const id = recent[recent.length - 1]
    return parse(id, hash[`c:${id}`])
  }

  async list (taskId: string): Promise<StoredPushConfig[]> {
    const hash = await this.#call(() => this.#client.hgetall(this.#key(taskId)))
    if (hash.order === undefined) return []
    const order: string[] = JSON.parse(hash.order)
    return order.map(id => parse(id, hash[`c:${id}`]))
  }

  async remove (taskId: string, id: string): Promise<boolean> {
    return await this.#call(() => this.#commands.a2aPushConfigRemove(this.#key(taskId), id)) === 1
  }

  async ping (): Promise<void> {
    await this.#call(() => this.#client.ping())
  }

  /** Nothing to release: the client belongs to whoever passed it in. */
  async close (): Promise<void> {}

  #key (taskId: string): string {
    return this.#prefix + taskId
  }

  /** Runs one client call; whatever it throws (connection, timeout, a Redis error reply) becomes StorageUnavailable. */
  async #call<T> (fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw new StorageUnavailable(reason(err as Error))
    }
  }
}

function parse (id: string, json: string): StoredPushConfig {
  return { id, ...JSON.parse(json) }
}

/**
 * A short, fixed reason. The ioredis error itself is neither returned nor attached as `cause`: a reply error carries
 * the command's arguments, and those hold the config with its token and credentials.
 */
function reason (err: Error): string {
  if (err.name === 'ReplyError') return `redis replied ${err.message.split(' ', 1)[0]}`
  if (err.name === 'MaxRetriesPerRequestError') return 'redis unreachable'
  if (err.message === 'Command timed out') return 'redis command timed out'
  return 'redis connection closed'
}
