// The Lua scripts of the Redis task store (redis-store.ts, whose comment gives the key layout): each write of a task is
// one script, so that the task, its indexes, its events and its announcement land together.
import { FOLD_RATIO } from './redis-chunks.js'

/**
 * A Stream trimmed with `MAXLEN ~` drops whole nodes only (`stream-node-max-entries`, 100 entries by default): below
 * that many kept events it would keep up to 100 whatever the limit, so such a limit is kept exactly (`MAXLEN =`).
 */
export const EXACT_TRIM_BELOW = 100

// KEYS: the task hash, the seq counter, the owner index, the expiring set, the lease set, the owner's live set, the
// context index, the state index. ARGV: record JSON, version, contextId, state, index member, PEXPIRE ms ('' for
// none), lease ttl ms ('' for no lease; a terminal task takes none), task id, the most live tasks of one owner ('' for no limit), '1' when the
// task is terminal, the context index's PEXPIRE ms, the events kept at most ('0': none), their PEXPIRE ms once the
// task is terminal, the update time (ms: a task stored already interrupted goes into the interrupted set, KEYS[10],
// by it), then for each event of the task's first turn its version and kept JSON (KEYS[9], the task's event Stream).
// Replies 1, 0 when the id is taken, -1 when the owner holds its most live tasks.
export const INSERT_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if ARGV[10] ~= '1' then
  if ARGV[9] ~= '' and redis.call('SCARD', KEYS[6]) >= tonumber(ARGV[9]) then return -1 end
  redis.call('SADD', KEYS[6], ARGV[8])
end
local seq = redis.call('INCR', KEYS[2])
local last = '0'
local trim = tonumber(ARGV[12]) < ${EXACT_TRIM_BELOW} and '=' or '~'
for i = 15, #ARGV, 2 do
  if ARGV[12] ~= '0' then redis.call('XADD', KEYS[9], 'MAXLEN', trim, ARGV[12], ARGV[i] .. '-1', 'p', last, 'e', ARGV[i + 1]) end
  last = ARGV[i]
end
if last ~= '0' and ARGV[10] == '1' and ARGV[12] ~= '0' then redis.call('PEXPIRE', KEYS[9], ARGV[13]) end
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'version', ARGV[2], 'contextId', ARGV[3], 'state', ARGV[4], 'seq', seq, 'ev', last)
if ARGV[6] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[6]) end
redis.call('ZADD', KEYS[3], seq, ARGV[5])
if ARGV[6] ~= '' then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[4], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[6]), #ARGV[3] .. ':' .. ARGV[3] .. ARGV[5])
end
redis.call('ZADD', KEYS[7], seq, ARGV[5])
redis.call('PEXPIRE', KEYS[7], ARGV[11])
redis.call('ZADD', KEYS[8], seq, ARGV[5])
if ARGV[4] == 'input_required' or ARGV[4] == 'auth_required' then redis.call('ZADD', KEYS[10], ARGV[14], ARGV[8]) end
if ARGV[7] ~= '' and ARGV[10] ~= '1' then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[5], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[7]), ARGV[8])
end
return 1
`

// KEYS: the task hash, the task's push config hash, the outbox set, the outbox bodies, the owner's live set, the
// interrupted set, the context index, the lease set. ARGV: the version it must hold, the task JSON, new version,
// contextId, state, PEXPIRE ms ('' to leave the TTL alone: nothing leaves a terminal state, and the memory store keeps
// the expiry too), '1' when the outbox is on, outbox member, task id, '1' when the new state is terminal, '1' when it
// is interrupted, the update time (ms), the owner's state index prefix, index member, the context index's PEXPIRE
// ms, the task key prefix, the channel to announce the change on ('' for none) and the message, the change's kept
// event JSON ('' for none), the events kept at most ('0': none), their PEXPIRE ms once the task is terminal (KEYS[9],
// the task's event Stream; each entry's id is its version, its field p the version of the event before), '1' when
// the write is a chunk, appended to KEYS[10] (the task's chunks) as `,{"v":<version>,"u":<update time>,"e":<kept
// event>}` instead of the record ('' for a write of the whole record, in ARGV[2]), how many bytes of chunks are kept
// at least before the record is written whole again, '1' when the message to announce is the head of a chunk's
// (`TaskEventAnnouncer.chunkHead`), which the kept event JSON completes, '2' when it is the head of one with the task
// (`taskHead`), which the task JSON completes, and what follows the task in the record JSON (`recordTail`). The
// record, the chunk and the messages are built here, so that the task or the chunk crosses the network once. A
// terminal write drops the task's lease: its run is over. Replies 0 when the version did not match, 2 when the change
// went to the outbox, 3 when the chunk is to be written with the whole record instead (nothing written), else 1. Last,
// the expiring set: a write that sets the TTL scores the task there by its new expiry.
export const REPLACE_LUA = `
local old = redis.call('HMGET', KEYS[1], 'version', 'state', 'seq', 'ev')
if old[1] ~= ARGV[1] then return 0 end
local chunk = ''
if ARGV[22] ~= '' then
  chunk = ',{"v":' .. ARGV[3] .. ',"u":' .. ARGV[12] .. ',"e":' .. ARGV[19] .. '}'
  if old[2] ~= ARGV[5] or redis.call('STRLEN', KEYS[10]) + #chunk >
      math.max(tonumber(ARGV[23]), ${FOLD_RATIO} * redis.call('HSTRLEN', KEYS[1], 'record')) then
    return 3
  end
end
local ev = old[4] or '0'
if ARGV[19] ~= '' then
  if ARGV[20] ~= '0' then
    redis.call('XADD', KEYS[9], 'MAXLEN', tonumber(ARGV[20]) < ${EXACT_TRIM_BELOW} and '=' or '~', ARGV[20], ARGV[3] .. '-1', 'p', ev, 'e', ARGV[19])
    if ARGV[10] == '1' then redis.call('PEXPIRE', KEYS[9], ARGV[21]) end
  end
  ev = ARGV[3]
end
local record = ''
if ARGV[22] == '' then
  record = '{"task":' .. ARGV[2] .. ARGV[25]
  redis.call('HSET', KEYS[1], 'record', record, 'version', ARGV[3], 'contextId', ARGV[4], 'state', ARGV[5], 'ev', ev)
  redis.call('DEL', KEYS[10])
else
  redis.call('APPEND', KEYS[10], chunk)
  redis.call('HSET', KEYS[1], 'version', ARGV[3], 'ev', ev)
end
if ARGV[6] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  local t = redis.call('TIME')
  redis.call('ZADD', ARGV[26], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[6]), #ARGV[4] .. ':' .. ARGV[4] .. ARGV[14])
end
redis.call('PEXPIRE', KEYS[7], ARGV[15])
if old[2] ~= ARGV[5] and old[3] then
  redis.call('ZREM', ARGV[13] .. old[2], ARGV[14])
  local set = ARGV[13] .. ARGV[5]
  redis.call('ZADD', set, old[3], ARGV[14])
  if ARGV[10] == '1' then
    for _, member in ipairs(redis.call('ZRANGE', set, 0, 1)) do
      local len, rest = string.match(member, '^(%d+):(.*)$')
      if redis.call('EXISTS', ARGV[16] .. string.sub(rest, tonumber(len) + 1)) == 0 then redis.call('ZREM', set, member) end
    end
  end
end
if ARGV[10] == '1' then
  redis.call('SREM', KEYS[5], ARGV[9])
  redis.call('ZREM', KEYS[8], ARGV[9])
end
if ARGV[17] ~= '' then
  local message = ARGV[18]
  if ARGV[24] == '1' then
    message = message .. string.sub(ARGV[19], 2)
  elseif ARGV[24] == '2' then
    message = message .. ARGV[2] .. '}'
  end
  redis.call('PUBLISH', ARGV[17], message)
end
if ARGV[11] == '1' then
  redis.call('ZADD', KEYS[6], ARGV[12], ARGV[9])
elseif old[2] == 'input_required' or old[2] == 'auth_required' then
  redis.call('ZREM', KEYS[6], ARGV[9])
end
if ARGV[7] == '1' and old[2] ~= ARGV[5] and redis.call('EXISTS', KEYS[2]) == 1 then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[3], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[8])
  redis.call('HSET', KEYS[4], ARGV[8], record)
  return 2
end
return 1
`

// KEYS[1] the interrupted set. ARGV: the latest update time to take (ms), the score the taken ids get (so that they
// are taken again a minute later should they still be interrupted), the batch size. Replies the ids.
export const CLAIM_INTERRUPTED_LUA = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], ARGV[2], id) end
return ids
`

// KEYS: the index to read, the owner index. ARGV: key prefix, highest score ('+inf' or '(<seq>'), entries to read,
// matches wanted, '=<contextId>' or '' for any, '=<state>' or '' for any. Reads newest first and stops at the wanted
// number of matches. Replies {1 when the index has nothing older, the last seq read, seq, record JSON, chunks, seq,
// ...}.
export const LIST_LUA = `
local prefix = ARGV[1]
local read = tonumber(ARGV[3])
local wanted = tonumber(ARGV[4])
local entries = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[2], '-inf', 'WITHSCORES', 'LIMIT', 0, read)
local out = {0, ''}
local found = 0
for i = 1, #entries, 2 do
  local member, seq = entries[i], entries[i + 1]
  out[2] = seq
  local len, rest = string.match(member, '^(%d+):(.*)$')
  len = tonumber(len)
  local id = string.sub(rest, len + 1)
  local fields = redis.call('HMGET', prefix .. 't:' .. id, 'record', 'contextId', 'state')
  if not fields[1] then
    redis.call('ZREM', KEYS[2], member)
    redis.call('ZREM', KEYS[1], member)
  elseif (ARGV[5] == '' or ARGV[5] == '=' .. fields[2]) and (ARGV[6] == '' or ARGV[6] == '=' .. fields[3]) then
    table.insert(out, seq)
    table.insert(out, fields[1])
    table.insert(out, redis.call('GET', prefix .. 'c:' .. id) or '')
    found = found + 1
    if found == wanted then return out end
  end
end
if #entries < 2 * read then out[1] = 1 end
return out
`

// KEYS[1] the expiring set. ARGV: key prefix, batch size. For each member whose expiry has passed: a task whose hash
// is gone leaves the owner index, its context index, the terminal state sets and `expiring`; one whose TTL was
// renewed is scored again by its new expiry. Replies how many members it looked at.
export const PRUNE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix = ARGV[1]
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, entry in ipairs(members) do
  local clen, crest = string.match(entry, '^(%d+):(.*)$')
  local context = string.sub(crest, 1, tonumber(clen))
  local member = string.sub(crest, tonumber(clen) + 1)
  local len, rest = string.match(member, '^(%d+):(.*)$')
  len = tonumber(len)
  local owner = string.sub(rest, 1, len)
  local ttl = redis.call('PTTL', prefix .. 't:' .. string.sub(rest, len + 1))
  if ttl >= 0 then
    -- Still stored: looked at again once it has expired. A PTTL of 0 is a hash in its last millisecond, not gone:
    -- dropping its entry then left its indexes behind for good once it expired.
    redis.call('ZADD', KEYS[1], now + math.max(ttl, 1), entry)
  else
    redis.call('ZREM', KEYS[1], entry)
    if ttl == -2 then
      redis.call('ZREM', prefix .. 'owner:' .. owner, member)
      redis.call('ZREM', prefix .. 'ctx:' .. len .. ':' .. owner .. ':' .. context, member)
      local states = prefix .. 'st:' .. len .. ':' .. owner .. ':'
      for _, state in ipairs({'completed', 'canceled', 'failed', 'rejected'}) do redis.call('ZREM', states .. state, member) end
    end
  end
end
return #members
`

// KEYS: the task hash, its chunks. Replies {record JSON or nil, chunks or nil}.
export const GET_LUA = `
return {redis.call('HGET', KEYS[1], 'record'), redis.call('GET', KEYS[2])}
`

// Idempotent sends, taking a claim over (a first claim is a plain SET NX GET: RedisTaskStore.claimSend). KEYS: the
// claim key (`<prefix>sent:<owner length>:<owner><messageId>`). ARGV: the claim's text (`claimText`), its PX ms
// (`tasks.dedupe_window`), the text of the claim it may take over. Replies nil when the claim was taken, else the
// text of the claim that holds the key: first claim wins, across instances.
export const CLAIM_SEND_LUA = `
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[3] then return held end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`

// KEYS: the claim key. ARGV: the claim's text. Drops the claim if it still holds the key.
export const RELEASE_SEND_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
`

/** `[exhausted 0|1, last seq read, seq, record JSON, chunks, seq, record JSON, chunks, ...]` */
export type ListReply = [0 | 1, string, ...string[]]

/** The scripts, as `defineCommand` adds them to the client (EVALSHA, EVAL on NOSCRIPT). */
export interface TaskCommands {
  a2aTaskInsert (task: string, seq: string, owner: string, expiring: string, leases: string, live: string, context: string, state: string,
    events: string, interrupted: string, ...args: string[]): Promise<-1 | 0 | 1>
  a2aTaskReplace (task: string, push: string, outbox: string, bodies: string, live: string, interrupted: string, context: string,
    leases: string, events: string, chunks: string, ...args: string[]): Promise<0 | 1 | 2 | 3>
  a2aTaskGet (task: string, chunks: string): Promise<[string | null, string | null]>
  a2aTaskClaimInterrupted (interrupted: string, before: string, rescore: string, batch: string): Promise<string[]>
  a2aTaskList (index: string, owner: string, ...args: string[]): Promise<ListReply>
  a2aTaskPrune (expiring: string, ...args: string[]): Promise<number>
  a2aSendClaim (claim: string, text: string, px: string, over: string): Promise<string | null>
  a2aSendRelease (claim: string, text: string): Promise<number>
}
