import type { Redis } from 'ioredis'
import { LiveTaskLimit, StorageUnavailable, TaskConflict } from '../kernel/errors.js'
import { decodePageToken, encodePageToken } from './page-token.js'
import { isInterrupted, isTerminal } from './states.js'
import { outboxKeys, outboxMember, type OutboxKeys } from '../push/outbox.js'
import { claimKey, claimText, parseClaim } from './send-claims.js'
import { keptBody, recordTail, type InsertOptions, type KeptEvent, type ReplaceOutcome, type SendClaim, type StoredTask, type TaskListPage, type TaskListQuery, type TaskStore } from './store.js'
import type { TaskEvent } from './event-bus.js'
import type { TaskEventAnnouncer } from './redis-event-bus.js'
import { FOLD_MIN_BYTES, assembled, isChunk } from './redis-chunks.js'
import {
  CLAIM_INTERRUPTED_LUA, CLAIM_SEND_LUA, GET_LUA, INSERT_LUA, LIST_LUA, PRUNE_LUA, RELEASE_SEND_LUA, REPLACE_LUA, type TaskCommands
} from './redis-scripts.js'

export interface RedisTaskStoreOptions {
  /** `tasks.key_prefix`, e.g. `a2a:task:`; every key of this store starts with it. */
  keyPrefix: string
  /** `tasks.ttl` in seconds: how long a terminal task is kept after its last update. */
  ttlSeconds: number
  /** How many index entries one `list` script reads at most; small values are for tests. Default 100. */
  listBatchSize?: number
  /**
   * `tasks.lease_ttl` in ms, when tasks are leased (CONTRACT.md §10): `insert` takes the new task's lease in
   * `<keyPrefix>leases` in the same script, so that no task is ever stored without one.
   */
  leaseTtlMs?: number
  /**
   * Push configs in Redis under this prefix (`push_notifications.key_prefix`): a write that changes the state of a
   * task with push configs records the change in the push outbox in the same script (services/push/outbox.ts), so
   * that a crash between the write and the queueing of its webhooks cannot lose them.
   */
  pushKeyPrefix?: string
  /** `tasks.max_live_per_principal`: unfinished tasks one owner may hold; `insert` refuses one more. */
  maxLivePerOwner?: number
  /**
   * How long a context index outlives the last write of one of its tasks, ms: longer than any of its tasks can
   * (`tasks.ttl` + `tasks.interrupted_ttl`). Default: twice `ttlSeconds`.
   */
  indexTtlMs?: number
  /**
   * How often the index entries of expired tasks are dropped (`pruneExpired`), ms; 0: never on its own (tests call
   * it). Default: half of `ttlSeconds`, at least every minute, at most every second.
   */
  pruneIntervalMs?: number
  /**
   * The event bus of the instances (RedisTaskEventBus): `replace` publishes the event of its change on the task's
   * channel from its own script, so that an event costs no round trip of its own.
   */
  announcer?: TaskEventAnnouncer
  /**
   * `server.stream_replay`: each write keeps its event in the task's Stream (`<keyPrefix>e:<id>`, at most about
   * `maxEvents`), which expires `ttlSeconds` after the task ends. Default 1000 events, 300 s.
   */
  replay?: { maxEvents: number, ttlSeconds: number }
}

const DEFAULT_LIST_BATCH = 100
const FOLD_MIN = String(FOLD_MIN_BYTES)
/** Most interrupted tasks one claim hands out; the next round takes the rest. */
const CLAIM_BATCH = 100
/** A claimed interrupted task that is still interrupted this much later is handed out again. */
const INTERRUPTED_RECLAIM_MS = 60_000
/** Most expired tasks one prune script drops from the indexes; a round runs scripts until one finds fewer. */
const PRUNE_BATCH = 200
/** Most prune scripts in one round: the rest waits for the next round, so no round holds Redis for long. */
const PRUNE_ROUNDS = 50

/*
 * Key layout (CONTRACT.md §8.1 and §10: a hash per task, no KEYS/SCAN), all under `<keyPrefix>`:
 *   t:<taskId>       hash: `record` (the StoredTask as JSON, exactly as Node wrote it), `version`, `contextId` and
 *                    `state` (copies the scripts compare without decoding the JSON). A terminal task's hash has a
 *                    PEXPIRE of `ttlSeconds`, renewed on every write; an unfinished task's never expires: it is
 *                    running (leased), or its lease lapsed and a reaper fails it, or it waits for input and is
 *                    canceled after `tasks.interrupted_ttl`. Each way it ends terminal, and then expires.
 *                    `ev`: the version of the task's last event (0 before the first).
 *   e:<taskId>       Stream of the task's events, kept for streams that resume: entry id `<version>-1`, fields `p`
 *                    (the version of the event before) and `e` (the kept event JSON), about `replay.maxEvents` long
 *                    (MAXLEN ~; exactly that long below EXACT_TRIM_BELOW, redis-scripts.ts). Written by the same scripts as the task;
 *                    it expires `replay.ttlSeconds` after the task ends.
 *   c:<taskId>       string: the artifact chunks appended since `record` was last written whole (redis-chunks.ts),
 *                    each `,{"v":<version>,"u":<update time>,"e":<kept event>}`; a read folds them into the record. Only an unfinished task has any: a
 *                    write of the whole record (every write but a chunk, hence every terminal one) deletes it.
 *   seq              counter, INCR'd by every insert: the creation order, with no ties.
 *   owner:<owner>    sorted set, one per owner, of that owner's tasks scored by their seq.
 *   expiring         sorted set of the terminal tasks, `<contextId length>:<contextId><index member>`, scored by when
 *                    their hash expires (ms, Redis clock): `pruneExpired` walks it from the oldest and drops an
 *                    expired task's index entries.
 *   leases           the lease set of RedisTaskLeases: `insert` adds the new task's lease when leases are on.
 *   live:<owner>     set of the owner's unfinished task ids (`tasks.max_live_per_principal`): added by `insert`,
 *                    removed by the write that makes the task terminal.
 *   interrupted      sorted set of input_required/auth_required task ids, scored by their last update (ms): what
 *                    `claimInterrupted` hands to the task service to cancel past `tasks.interrupted_ttl`.
 *   ctx:<n>:<owner>:<contextId>, st:<n>:<owner>:<state>
 *                    an owner's tasks of one context, and in one state, as the owner index (n is the owner's
 *                    length): what a `list` filtered by context or state reads, so that a page costs its size and
 *                    not the owner's whole history. A write that changes the state moves the task between state
 *                    sets. A context set expires `indexTtlMs` after the last write of one of its tasks; a terminal
 *                    state set drops up to two expired members each time one is added.
 *   sent:<n>:<owner><messageId>
 *                    string: an idempotent send's claim (`claimText`: time, message hash, task id), PX the dedupe
 *                    window (`claimSend`: SET NX GET, or CLAIM_SEND_LUA to take a claim over).
 *   outbox, outbox:b the push outbox (services/push/outbox.ts): a state change of a task with push configs, by
 *                    `<taskId>.<version>`, scored by when it was written, and its record JSON.
 * An index member is `<owner length>:<owner><taskId>`, the same in every set. The indexes cannot expire themselves,
 * as they hold unfinished tasks too: `pruneExpired` (on a timer) drops the entries of the tasks in `expiring` whose
 * hash has gone, from the owner, context and terminal state indexes, so they stay bounded by the tasks
 * Redis holds, whether their owner lists or not; a `list` that meets such an entry first drops it from its index.
 * The `t:` namespace keeps task ids apart from `seq`, `expiring`, `owner:` and from `leases`, which RedisTaskLeases keeps
 * under the same prefix. The scripts build task and owner keys from the prefix, so on a Redis Cluster every key
 * must hash to one slot: give the prefix a hash tag, e.g. `{a2a}:task:`.
 */

/**
 * Tasks in Redis (`tasks.backend: kvcache`, CONTRACT.md §10), shared by any number of instances. Every write is one
 * Lua script: an insert and its index entries land together, and `replace` is a compare-and-set on the version, so
 * two instances can never both move a task on from the same version. Unlike MemoryTaskStore, it has no
 * `tasks.max_tasks` bound (that limit is the memory backend's): Redis' own `maxmemory` is the bound here.
 * The client is borrowed: `close` leaves it to its owner.
 */
export class RedisTaskStore implements TaskStore {
  readonly #client: Redis
  readonly #commands: TaskCommands
  readonly #prefix: string
  readonly #expiring: string
  readonly #ttlMs: string
  readonly #batch: string
  readonly #leaseTtlMs: string
  readonly #pushPrefix: string | undefined
  readonly #outbox: OutboxKeys
  readonly #maxLive: string
  readonly #interrupted: string
  readonly #indexTtlMs: string
  readonly #announcer: TaskEventAnnouncer | undefined
  readonly #maxEvents: string
  readonly #replayTtlMs: string
  readonly leasesOnInsert: boolean
  readonly announces: boolean
  readonly recordsPush: boolean
  #pruner: NodeJS.Timeout | undefined

  constructor (client: Redis, opts: RedisTaskStoreOptions) {
    this.#client = client
    this.#prefix = opts.keyPrefix
    this.#expiring = `${opts.keyPrefix}expiring`
    this.#ttlMs = String(Math.max(1, Math.ceil(opts.ttlSeconds * 1000)))
    this.#batch = String(opts.listBatchSize ?? DEFAULT_LIST_BATCH)
    this.leasesOnInsert = opts.leaseTtlMs !== undefined
    this.#leaseTtlMs = opts.leaseTtlMs === undefined ? '' : String(Math.round(opts.leaseTtlMs))
    this.#pushPrefix = opts.pushKeyPrefix
    this.#outbox = outboxKeys(opts.keyPrefix)
    this.#maxLive = opts.maxLivePerOwner === undefined ? '' : String(opts.maxLivePerOwner)
    this.#interrupted = `${opts.keyPrefix}interrupted`
    this.#indexTtlMs = String(Math.ceil(opts.indexTtlMs ?? 2 * opts.ttlSeconds * 1000))
    this.#announcer = opts.announcer
    this.#maxEvents = String(opts.replay?.maxEvents ?? 1000)
    this.#replayTtlMs = String((opts.replay?.ttlSeconds ?? 300) * 1000)
    this.announces = opts.announcer !== undefined
    this.recordsPush = opts.pushKeyPrefix !== undefined
    client.defineCommand('a2aTaskInsert', { numberOfKeys: 10, lua: INSERT_LUA })
    client.defineCommand('a2aTaskReplace', { numberOfKeys: 10, lua: REPLACE_LUA })
    client.defineCommand('a2aTaskGet', { numberOfKeys: 2, lua: GET_LUA })
    client.defineCommand('a2aTaskClaimInterrupted', { numberOfKeys: 1, lua: CLAIM_INTERRUPTED_LUA })
    client.defineCommand('a2aTaskList', { numberOfKeys: 2, lua: LIST_LUA })
    client.defineCommand('a2aTaskPrune', { numberOfKeys: 1, lua: PRUNE_LUA })
    client.defineCommand('a2aSendClaim', { numberOfKeys: 1, lua: CLAIM_SEND_LUA })
    client.defineCommand('a2aSendRelease', { numberOfKeys: 1, lua: RELEASE_SEND_LUA })
    this.#commands = client as unknown as TaskCommands
    const pruneMs = opts.pruneIntervalMs ?? Math.min(60_000, Math.max(1000, opts.ttlSeconds * 500))
    // A round that fails (Redis down) is simply the next round's work.
    if (pruneMs > 0) this.#pruner = setInterval(() => { this.pruneExpired().catch(() => {}) }, pruneMs).unref()
  }

  async insert (record: StoredTask, opts?: InsertOptions): Promise<void> {
    const { task, owner } = record
    const inserted = await this.#call(() => this.#commands.a2aTaskInsert(
      this.#taskKey(task.id), `${this.#prefix}seq`, this.#ownerKey(owner), this.#expiring, `${this.#prefix}leases`, this.#liveKey(owner),
      this.#contextKey(owner, task.contextId), this.#stateKeys(owner) + task.status.state, this.#eventsKey(task.id), this.#interrupted,
      JSON.stringify(record), String(record.version), task.contextId, task.status.state,
      `${owner.length}:${owner}${task.id}`, this.#expiry(record), opts?.lease === false ? '' : this.#leaseTtlMs, task.id, this.#maxLive,
      isTerminal(task.status.state) ? '1' : '0', this.#indexTtlMs, this.#maxEvents, this.#replayTtlMs, String(record.updatedAt),
      ...(opts?.events ?? []).flatMap(event => [String(event.version), JSON.stringify(keptBody(event))])
    ))
    if (inserted === -1) throw new LiveTaskLimit(owner)
    // The id is taken. A command retried after its connection dropped (Redis restarting) may find its own first run:
    // exactly this record stored means the insert landed. Anything else is a bug in the caller: ids are server-made.
    if (inserted === 0 && await this.#call(() => this.#client.hget(this.#taskKey(task.id), 'record')) !== JSON.stringify(record)) {
      throw new TaskConflict(task.id)
    }
  }

  async get (id: string): Promise<StoredTask | null> {
    const [json, chunks] = await this.#call(() => this.#commands.a2aTaskGet(this.#taskKey(id), this.#chunksKey(id)))
    return json === null ? null : assembled(json, chunks)
  }

  async version (id: string): Promise<number | null> {
    const version = await this.#call(() => this.#client.hget(this.#taskKey(id), 'version'))
    return version === null ? null : Number(version)
  }

  async replace (next: StoredTask, event?: TaskEvent): Promise<ReplaceOutcome> {
    // A chunk appended to an artifact of an unfinished task is written alone, not with the whole task (redis-chunks.ts),
    // unless the store answers that it is time to write the whole record again.
    const chunked = isChunk(event)
    let written = !chunked || isTerminal(next.task.status.state) ? 3 : await this.#replace(next, event, true, true)
    if (written === 3) written = await this.#replace(next, event, false, chunked)
    return written === 0 ? false : written === 2 ? 'outbox' : true
  }

  /**
   * The replace script: the whole record, or only the chunk (`alone`). The event of a chunk (`chunked`) is announced
   * without its task, even when the record is written whole: the other instances add the chunk to the task themselves.
   */
  async #replace (next: StoredTask, event: TaskEvent | undefined, alone: boolean, chunked: boolean): Promise<0 | 1 | 2 | 3> {
    const { task } = next
    const push = this.#pushPrefix
    const state = task.status.state
    // The task, the bulk of both, is serialized once for the record and the event; not at all for a chunk.
    const taskJson = alone ? undefined : JSON.stringify(task)
    const announcer = event === undefined ? undefined : this.#announcer
    return await this.#call(() => this.#commands.a2aTaskReplace(
      this.#taskKey(task.id), push === undefined ? this.#outbox.queue : push + task.id, this.#outbox.queue, this.#outbox.bodies,
      this.#liveKey(next.owner), this.#interrupted, this.#contextKey(next.owner, task.contextId), `${this.#prefix}leases`,
      this.#eventsKey(task.id), this.#chunksKey(task.id), String(next.version - 1),
      taskJson ?? '', String(next.version), task.contextId, state,
      this.#expiry(next), push === undefined ? '0' : '1', outboxMember(task.id, next.version), task.id,
      isTerminal(state) ? '1' : '0', isInterrupted(state) ? '1' : '0', String(next.updatedAt),
      this.#stateKeys(next.owner), `${next.owner.length}:${next.owner}${task.id}`, this.#indexTtlMs, `${this.#prefix}t:`,
      announcer === undefined ? '' : announcer.channel(task.id),
      announcer === undefined ? '' : chunked ? announcer.chunkHead(next.version) : announcer.taskHead(event as TaskEvent),
      event === undefined ? '' : JSON.stringify(keptBody(event)), this.#maxEvents, this.#replayTtlMs,
      alone ? '1' : '', FOLD_MIN, announcer === undefined ? '' : chunked ? '1' : '2', alone ? '' : recordTail(next),
      this.#expiring
    ))
  }

  async eventsAfter (taskId: string, after: number): Promise<KeptEvent[] | null> {
    const replies = await this.#call(async () => await this.#client.pipeline()
      .hget(this.#taskKey(taskId), 'ev')
      .xrange(this.#eventsKey(taskId), `${after + 1}-0`, '+')
      .exec() as Array<[Error | null, unknown]>)
    for (const [err] of replies) if (err !== null) unavailable(err)
    const last = Number(replies[0][1] ?? 0)
    if (last <= after) return []
    const entries = replies[1][1] as Array<[string, string[]]>
    // The first event after `after` must follow it directly, else some were trimmed away or have expired.
    if (entries.length === 0 || Number(entries[0][1][1]) > after) return null
    return entries.map(([id, fields]) => ({ ...JSON.parse(fields[3]), version: Number(id.slice(0, id.indexOf('-'))), prev: Number(fields[1]) }))
  }

  async claimInterrupted (before: number): Promise<string[]> {
    return await this.#call(() => this.#commands.a2aTaskClaimInterrupted(
      this.#interrupted, String(before), String(before + INTERRUPTED_RECLAIM_MS), String(CLAIM_BATCH)))
  }

  async list (query: TaskListQuery): Promise<TaskListPage> {
    let max = query.pageToken === undefined ? '+inf' : `(${decodePageToken('r', query.pageToken, 15)}`
    // An owner's list filtered by context or state reads that index: a page costs its size, whatever else it has.
    const { owner } = query
    if (owner === undefined) throw new TypeError('RedisTaskStore lists the tasks of one owner at a time')
    const index = query.contextId !== undefined
      ? this.#contextKey(owner, query.contextId)
      : query.state !== undefined ? this.#stateKeys(owner) + query.state : this.#ownerKey(owner)
    const contextId = query.contextId === undefined ? '' : `=${query.contextId}`
    const state = query.state === undefined ? '' : `=${query.state}`
    // One match past the page says whether there is a next page.
    const wanted = query.pageSize + 1
    const found: string[] = []
    for (;;) {
      const left = String(wanted - found.length / 3)
      const [exhausted, last, ...matches] = await this.#call(() =>
        this.#commands.a2aTaskList(index, this.#ownerKey(owner), this.#prefix, max, this.#batch, left, contextId, state))
      if (query.where === undefined) {
        found.push(...matches)
      } else {
        for (let i = 0; i < matches.length; i += 3) {
          if (query.where(assembled(matches[i + 1], matches[i + 2]).task)) found.push(matches[i], matches[i + 1], matches[i + 2])
        }
      }
      if (found.length / 3 >= wanted || exhausted === 1) break
      // Batches keep each script short, so a long index with few matches never blocks Redis for long.
      max = `(${last}`
    }
    const tasks: StoredTask[] = []
    for (let i = 1; i < found.length && tasks.length < query.pageSize; i += 3) tasks.push(assembled(found[i], found[i + 1]))
    const more = found.length / 3 > query.pageSize
    return { tasks, nextPageToken: more ? encodePageToken('r', found[3 * query.pageSize - 3]) : '' }
  }

  /**
   * Idempotent sends: one command, a round trip before the send's task is made (`TaskStore`, "Idempotent sends"); the
   * key expires with the window. A first claim is a plain `SET NX GET` (Redis 7.0: it answers the claim that holds
   * the key, or nil once it has set it), not a script: 3 to 9 µs less of this process's CPU per claim, of a round
   * trip's 43 to 46 µs (114 to 142 µs with Redis on the other core of a 2-core machine: BENCHMARKS.md, "Idempotent
   * sends"). Only taking over a claim, which must compare the held claim first, runs CLAIM_SEND_LUA.
   */
  claimSend (claim: SendClaim, windowMs: number, over?: SendClaim): Promise<SendClaim | null> {
    const key = this.#claimKey(claim)
    const held = over === undefined
      ? this.#client.set(key, claimText(claim), 'PX', windowMs, 'NX', 'GET')
      : this.#commands.a2aSendClaim(key, claimText(claim), String(windowMs), claimText(over))
    return held.then(text => text === null ? null : parseClaim(claim.owner, claim.messageId, text), unavailable)
  }

  async releaseSend (claim: SendClaim): Promise<void> {
    await this.#call(() => this.#commands.a2aSendRelease(this.#claimKey(claim), claimText(claim)))
  }

  async ping (): Promise<void> {
    await this.#call(() => this.#client.ping())
  }

  /**
   * Drops the index entries of terminal tasks whose hash has expired (CONTRACT.md §8.1: no KEYS/SCAN, so only the
   * `expiring` set says which): a batch per script, until one finds fewer than a batch or `PRUNE_ROUNDS` ran.
   * Returns how many entries of `expiring` it looked at.
   */
  async pruneExpired (): Promise<number> {
    let seen = 0
    for (let round = 0; round < PRUNE_ROUNDS; round++) {
      const found = await this.#call(() => this.#commands.a2aTaskPrune(this.#expiring, this.#prefix, String(PRUNE_BATCH)))
      seen += found
      if (found < PRUNE_BATCH) break
    }
    return seen
  }

  /** Stops the prune timer; the client belongs to whoever passed it in. */
  async close (): Promise<void> {
    clearInterval(this.#pruner)
  }

  #taskKey (id: string): string {
    return `${this.#prefix}t:${id}`
  }

  #claimKey (claim: SendClaim): string {
    return `${this.#prefix}sent:${claimKey(claim.owner, claim.messageId)}`
  }

  #chunksKey (id: string): string {
    return `${this.#prefix}c:${id}`
  }

  #eventsKey (id: string): string {
    return `${this.#prefix}e:${id}`
  }

  #contextKey (owner: string, contextId: string): string {
    return `${this.#prefix}ctx:${owner.length}:${owner}:${contextId}`
  }

  /** The owner's state index keys, less the state. */
  #stateKeys (owner: string): string {
    return `${this.#prefix}st:${owner.length}:${owner}:`
  }

  #liveKey (owner: string): string {
    return `${this.#prefix}live:${owner}`
  }

  #ownerKey (owner: string): string {
    return `${this.#prefix}owner:${owner}`
  }

  /** PEXPIRE milliseconds for a write of `record`: a terminal task is kept `ttlSeconds` after its last update. */
  #expiry (record: StoredTask): string {
    return isTerminal(record.task.status.state) ? this.#ttlMs : ''
  }

  /** Runs one client call; whatever it throws (connection, timeout, a Redis error reply) becomes StorageUnavailable. */
  async #call<T> (fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      unavailable(err as Error)
    }
  }
}

/** A client error as this store throws it: `#call` catches into it, and a hot path that chains its promise itself calls it. */
function unavailable (err: Error): never {
  throw new StorageUnavailable(reason(err))
}

/**
 * A short, fixed reason, as in the push config store. The ioredis error itself is not attached as `cause`: a reply
 * error carries the command's arguments, and those hold the task with its messages.
 */
function reason (err: Error): string {
  if (err.name === 'ReplyError') return `redis replied ${err.message.split(' ', 1)[0]}`
  if (err.name === 'MaxRetriesPerRequestError') return 'redis unreachable'
  if (err.message === 'Command timed out') return 'redis command timed out'
  return 'redis connection closed'
}
