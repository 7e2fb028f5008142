import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import t from 'tap'
import type { CacheService } from '../../../schemas/config.js'
import { createRedisClient, quitWithin } from '../../../services/redis/client.js'
import type { TaskEvent } from '../../../services/tasks/event-bus.js'
import { RedisTaskStore } from '../../../services/tasks/redis-store.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { TEST_REDIS, privateRedis, redisDb, silentServer, until } from '../../helper.js'
import { clock, moved, record, storeContract } from './store-contract.js'

// This file owns db 9 of the tests' Redis (TEST_REDIS); redisDb flushes it before and after each use, and fails
// the test with how to start Redis when none answers.
const DB = 9
const PREFIX = 'test:task:'
const UNAVAILABLE = { code: 'A2A_ERR_STORAGE_UNAVAILABLE', statusCode: 503 }

function service (url: string, retry: boolean): CacheService {
  return { type: 'cache', url, db: DB, max_connections: 20, retry_on_timeout: retry }
}

/** A port nothing listens on. */
async function closedPort (): Promise<number> {
  const srv = createServer().listen(0, '127.0.0.1')
  await once(srv, 'listening')
  const { port } = srv.address() as AddressInfo
  await new Promise(resolve => srv.close(resolve))
  return port
}

// A small batch, so that the contract's lists read the index in several scripts.
storeContract(t, 'redis', async (t, { ttlSeconds, maxEvents }) => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds, listBatchSize: 2, replay: { maxEvents, ttlSeconds: 300 } })
  return {
    store,
    async expire (ids) {
      for (const id of ids) {
        const key = `${PREFIX}t:${id}`
        const pttl = await client.pttl(key)
        if (pttl === -1) continue
        t.ok(pttl > 0 && pttl <= ttlSeconds * 1000, `${id}: PTTL ${pttl} is set and at most the TTL`)
        await client.pexpire(key, 1)
        await until(async () => await client.exists(key) === 0)
      }
    }
  }
}, { rejectsDuplicateIds: true })

t.test('each task is one hash under the prefix, indexed per owner by a sequence, with no index of every task', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  const c = clock()
  // Ids that read like the store's own keys stay apart from them.
  const a = record('seq', c.ms, { contextId: 'x' })
  await store.insert(a)
  await store.insert(record('all', c.ms, { owner: 'bo:b' }))
  await store.replace(moved(a, 'in_progress'))

  t.same((await client.keys('*')).sort(),
    [`${PREFIX}ctx:4:bo:b:ctx`, `${PREFIX}ctx:5:alice:x`, `${PREFIX}live:alice`, `${PREFIX}live:bo:b`, `${PREFIX}owner:alice`,
      `${PREFIX}owner:bo:b`, `${PREFIX}seq`, `${PREFIX}st:4:bo:b:submitted`, `${PREFIX}st:5:alice:in_progress`, `${PREFIX}t:all`, `${PREFIX}t:seq`])
  t.same(await client.hgetall(`${PREFIX}t:seq`), {
    record: JSON.stringify(moved(a, 'in_progress')), version: '2', contextId: 'x', state: 'in_progress', seq: '1', ev: '0'
  })
  t.equal(await client.get(`${PREFIX}seq`), '2')
  t.same(await client.zrange(`${PREFIX}owner:alice`, 0, -1, 'WITHSCORES'), ['5:aliceseq', '1'])
  t.same(await client.zrange(`${PREFIX}owner:bo:b`, 0, -1, 'WITHSCORES'), ['4:bo:ball', '2'])
  t.equal(await client.pttl(`${PREFIX}t:seq`), -1, 'an unfinished task has no expiry')
  const page = await store.list({ owner: 'alice', pageSize: 1 })
  t.equal(page.nextPageToken, '')
  await store.insert(record('later', c.ms))
  t.equal(Buffer.from((await store.list({ owner: 'alice', pageSize: 1 })).nextPageToken, 'base64url').toString(), 'r:3')
  await t.rejects(store.list({ pageSize: 1 }), TypeError, 'a list of every owner\'s tasks has no index to read')
})

t.test('leases: an unfinished insert takes one, a terminal insert none; the write that ends the task drops it', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60, leaseTtlMs: 60_000 })
  const c = clock()
  const running = record('running', c.ms)
  await store.insert(running)
  await store.insert(record('done', c.ms, { state: 'completed' }))
  t.same(await client.zrange(`${PREFIX}leases`, 0, -1), ['running'])
  const working = moved(running, 'in_progress')
  await store.replace(working)
  t.same(await client.zrange(`${PREFIX}leases`, 0, -1), ['running'], 'a change that does not end the task keeps it')
  await store.replace(moved(working, 'completed'))
  t.same(await client.zrange(`${PREFIX}leases`, 0, -1), [])
})

t.test('a write given its event publishes it on the task\'s channel from the same script; without one, nothing', async t => {
  const client = await redisDb(t, DB)
  const announced: string[] = []
  const announcer = {
    channel: (taskId: string) => `${PREFIX}events:${taskId}`,
    message: (event: TaskEvent, taskJson?: string) => `${event.type}:${event.version}:${taskJson}`,
    chunkHead: (version: number) => `chunk:${version}:`,
    taskHead: (event: TaskEvent) => `${event.type}:${event.version}:`
  }
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60, announcer })
  t.equal(store.announces, true)
  const sub = client.duplicate()
  t.teardown(() => sub.disconnect())
  await sub.subscribe(`${PREFIX}events:a1`)
  sub.on('message', (_channel: string, message: string) => announced.push(message))
  const c = clock()
  const r1 = record('a1', c.ms)
  await store.insert(r1)
  const r2 = moved(r1, 'in_progress')
  t.equal(await store.replace(r2, { type: 'status', version: 2, task: r2.task, final: false }), true)
  const r3 = moved(r2, 'completed')
  t.equal(await store.replace(r3), true)
  t.equal(await store.replace(moved(r1, 'failed'), { type: 'status', version: 2, task: r1.task, final: true }), false, 'a write that lost')
  await client.publish(`${PREFIX}events:a1`, 'end')
  await until(() => announced.includes('end'))
  t.same(announced, [`status:2:${JSON.stringify(r2.task)}}`, 'end'], 'the one write given an event, and that landed')
})

t.test('a terminal write sets the expiry to the TTL and renews it; a later write keeps it', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  const key = `${PREFIX}t:a`
  const r1 = record('a', clock().ms)
  await store.insert(r1)
  const r2 = moved(r1, 'in_progress')
  await store.replace(r2)
  t.equal(await client.pttl(key), -1)
  const r3 = moved(r2, 'completed')
  await store.replace(r3)
  let pttl = await client.pttl(key)
  t.ok(pttl > 0 && pttl <= 60_000, `PTTL ${pttl}`)

  await client.pexpire(key, 5_000)
  const r4 = { ...r3, version: 4 }
  t.equal(await store.replace(r4), true)
  pttl = await client.pttl(key)
  t.ok(pttl > 5_000 && pttl <= 60_000, `renewed: PTTL ${pttl}`)
  // Nothing leaves a terminal state (states.ts); should a write still do so, the expiry stays, as in memory.
  t.equal(await store.replace(moved(r4, 'in_progress')), true)
  t.ok(await client.pttl(key) > 0)
  // A failed compare-and-set touches nothing.
  await client.pexpire(key, 5_000)
  t.equal(await store.replace(moved(r3, 'failed')), false)
  t.ok(await client.pttl(key) <= 5_000)

  // A fraction of a second rounds up to whole milliseconds.
  const short = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 0.0001 })
  await short.insert(record('b', clock().ms, { state: 'rejected' }))
  await until(async () => await client.exists(`${PREFIX}t:b`) === 0)
})

t.test('list removes a vanished task from the index it reads and the owner index when it meets it', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  const c = clock()
  for (const [id, owner] of [['a', 'alice'], ['b', 'bob'], ['c', 'alice'], ['d', 'bob']]) await store.insert(record(id, c.ms, { owner }))
  // Redis expiring a key is a DEL of it: nothing else is told.
  await client.del(`${PREFIX}t:a`, `${PREFIX}t:b`)

  t.same((await store.list({ owner: 'alice', pageSize: 10 })).tasks.map(r => r.task.id), ['c'])
  t.same(await client.zrange(`${PREFIX}owner:alice`, 0, -1), ['5:alicec'])
  t.same(await client.zrange(`${PREFIX}owner:bob`, 0, -1), ['3:bobb', '3:bobd'], 'bob\'s entry waits for a list of bob\'s')

  t.same((await store.list({ owner: 'bob', state: 'submitted', pageSize: 10 })).tasks.map(r => r.task.id), ['d'])
  t.same(await client.zrange(`${PREFIX}owner:bob`, 0, -1), ['3:bobd'], 'a list of a state index drops it from the owner index too')
  t.same(await client.zrange(`${PREFIX}st:3:bob:submitted`, 0, -1), ['3:bobd'])
  await client.del(`${PREFIX}t:d`)
  t.same((await store.list({ owner: 'bob', pageSize: 10 })).tasks, [])
  t.equal(await client.exists(`${PREFIX}owner:bob`), 0, 'an empty index is gone')
})

t.test('row 16: the index entries of expired tasks are pruned whoever lists: 300 expired tasks leave none behind', async t => {
  const client = await redisDb(t, DB)
  // The context indexes outlive the test (their own expiry, 2 × ttl by default, passed while a loaded machine ran it):
  // what empties them here is the pruning.
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 1, pruneIntervalMs: 0, indexTtlMs: 600_000 })
  t.teardown(() => store.close())
  const c = clock()
  const ended: string[] = []
  for (let i = 0; i < 300; i++) {
    const owner = i % 2 === 0 ? 'alice' : 'bob'
    const r = record(`t${i}`, c.ms, { owner, contextId: 'x' })
    await store.insert(r)
    // A third end with a write, a third have a sibling stored already ended (rejected), a third stay unfinished.
    if (i % 3 === 0) {
      await store.replace(moved(r, 'completed'))
      ended.push(`${PREFIX}t:t${i}`)
    } else if (i % 3 === 1) {
      await store.insert(record(`r${i}`, c.ms, { owner, state: 'rejected' }))
      ended.push(`${PREFIX}t:r${i}`)
    }
  }
  await store.insert(record('live', c.ms))
  // A task whose expiry was renewed after it was scored is scored again, not dropped (here: its hash kept by hand).
  await store.insert(record('kept', c.ms, { state: 'rejected' }))
  await client.pexpire(`${PREFIX}t:kept`, 60_000)
  t.equal(await client.zcard(`${PREFIX}expiring`), 201, 'every terminal task is in the expiring set')
  const keptUntil = Number(await client.zscore(`${PREFIX}expiring`, '3:ctx5:alicekept'))
  await until(async () => await client.exists(...ended) === 0 && Number((await client.time())[0]) * 1000 > keptUntil)
  t.equal(await client.zcard(`${PREFIX}owner:bob`), 200, 'before: the entries of expired tasks are still there')

  t.ok(await store.pruneExpired() >= 201)
  const unfinished = (owner: string, odd: number) => Array.from({ length: 300 }, (_, i) => i)
    .filter(i => i % 2 === odd && i % 3 !== 0).map(i => `${owner.length}:${owner}t${i}`)
  t.same((await client.zrange(`${PREFIX}owner:alice`, 0, -1)).sort(), ['5:alicekept', '5:alicelive', ...unfinished('alice', 0)].sort(),
    'alice: only the tasks Redis still holds')
  t.same((await client.zrange(`${PREFIX}owner:bob`, 0, -1)).sort(), unfinished('bob', 1).sort(), 'bob: his unfinished ones, though he never listed')
  t.equal(await client.exists(`${PREFIX}st:5:alice:completed`, `${PREFIX}st:3:bob:completed`, `${PREFIX}st:3:bob:rejected`), 0,
    'terminal state sets emptied')
  t.same(await client.zrange(`${PREFIX}expiring`, 0, -1), ['3:ctx5:alicekept'], 'a renewed task waits for its new expiry')
  t.ok(Number(await client.zscore(`${PREFIX}expiring`, '3:ctx5:alicekept')) > keptUntil + 50_000)
  t.same((await client.keys(`${PREFIX}ctx:*`)).sort(), [`${PREFIX}ctx:3:bob:x`, `${PREFIX}ctx:5:alice:ctx`, `${PREFIX}ctx:5:alice:x`],
    'context indexes hold only the tasks Redis still holds')
  t.same((await client.zrange(`${PREFIX}ctx:5:alice:ctx`, 0, -1)).sort(), ['5:alicekept', '5:alicelive'])
  t.same((await store.list({ owner: 'alice', pageSize: 2 })).tasks.map(r => r.task.id), ['kept', 'live'], 'list still works')
  t.equal(await store.pruneExpired(), 0)
})

t.test('a long run of tasks that do not match is read in batches', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  const c = clock()
  await store.insert(record('old', c.ms, { contextId: 'y' }))
  for (let i = 0; i < 250; i++) await store.insert(record(`n${i}`, c.ms, { contextId: 'x' }))
  t.same(await store.list({ owner: 'alice', contextId: 'y', pageSize: 5 }), { tasks: [await store.get('old')], nextPageToken: '' })
  const page = await store.list({ owner: 'alice', contextId: 'x', pageSize: 100 })
  t.equal(page.tasks.length, 100)
  t.equal(page.tasks[99].task.id, 'n150')
})

t.test('two instances replacing from the same version: exactly one wins', async t => {
  const clients = [await redisDb(t, DB), await redisDb(t, DB)]
  const [one, two] = clients.map(client => new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 }))
  const c = clock()
  for (let i = 0; i < 25; i++) {
    const r = record(`t${i}`, c.ms)
    await one.insert(r)
    const running = moved(r, 'in_progress')
    const canceled = moved(r, 'canceled')
    const results = await Promise.all([one.replace(running), two.replace(canceled)])
    t.equal(results.filter(Boolean).length, 1, `t${i}: ${results}`)
    t.same(await two.get(`t${i}`), results[0] ? running : canceled)
  }
})

t.test('two instances inserting one id: one succeeds, the other gets TaskConflict, one index entry', async t => {
  const clients = [await redisDb(t, DB), await redisDb(t, DB)]
  const stores = clients.map(client => new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 }))
  const c = clock()
  const results = await Promise.allSettled(stores.map((s, i) => s.insert(record('a', c.ms, { owner: `o${i}` }))))
  t.equal(results.filter(r => r.status === 'fulfilled').length, 1)
  t.match(results.find(r => r.status === 'rejected'), { reason: { code: 'A2A_ERR_TASK_CONFLICT', statusCode: 409 } })
  t.equal(await clients[0].zcard(`${PREFIX}owner:o0`) + await clients[0].zcard(`${PREFIX}owner:o1`), 1)
  t.equal(await clients[0].get(`${PREFIX}seq`), '1', 'the refused insert took no sequence number')
})

t.test('close leaves the borrowed client open', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  await store.close()
  t.equal(await client.ping(), 'PONG')
  await t.resolves(store.ping())
})

t.test('an unreachable Redis fails every call with StorageUnavailable', async t => {
  const client = createRedisClient(service(`redis://127.0.0.1:${await closedPort()}`, true), { connectTimeoutMs: 200, commandTimeoutMs: 300 })
  t.teardown(() => quitWithin(client, 500))
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60, pruneIntervalMs: 20 })
  t.teardown(() => store.close())
  // The prune timer's rounds fail too, and it goes on (each failure is the next round's work).
  let failed = 0
  const prune = store.pruneExpired.bind(store)
  store.pruneExpired = async () => await prune().catch(err => { failed++; throw err })
  const r = record('a', clock().ms)
  await t.rejects(store.get('a'), UNAVAILABLE)
  await until(() => failed >= 2)
  await t.rejects(store.insert(r), UNAVAILABLE)
  await t.rejects(store.replace(moved(r, 'in_progress')), UNAVAILABLE)
  await t.rejects(store.list({ owner: 'alice', pageSize: 10 }), UNAVAILABLE)
  await t.rejects(store.ping(), UNAVAILABLE)
  const claim = { owner: 'alice', messageId: 'm', taskId: 'a', hash: 'h', at: 1 }
  await t.rejects(store.claimSend(claim, 1000), UNAVAILABLE, 'a claim')
  await t.rejects(store.claimSend(claim, 1000, claim), UNAVAILABLE, 'a takeover')
})

t.test('the reasons are short and fixed: unreachable, timed out, closed, an error reply', async t => {
  const refused = createRedisClient(service(`redis://127.0.0.1:${await closedPort()}`, false), { connectTimeoutMs: 200 })
  t.teardown(() => quitWithin(refused, 500))
  await t.rejects(new RedisTaskStore(refused, { keyPrefix: PREFIX, ttlSeconds: 60 }).get('a'),
    { message: 'Storage unavailable: redis unreachable' })

  // A server that accepts connections and never answers: a stalled Redis.
  const port = await silentServer(t)
  const stalled = createRedisClient(service(`redis://127.0.0.1:${port}`, true), { commandTimeoutMs: 300 })
  t.teardown(() => quitWithin(stalled, 100))
  await t.rejects(new RedisTaskStore(stalled, { keyPrefix: PREFIX, ttlSeconds: 60 }).insert(record('a', clock().ms)),
    { message: 'Storage unavailable: redis command timed out' })

  const closed = createRedisClient(service(TEST_REDIS.url, true))
  await quitWithin(closed, 500)
  await t.rejects(new RedisTaskStore(closed, { keyPrefix: PREFIX, ttlSeconds: 60 }).ping(),
    { message: 'Storage unavailable: redis connection closed' })

  const client = await redisDb(t, DB)
  await client.set(`${PREFIX}t:wrong`, 'a string, not a hash')
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  await t.rejects(store.get('wrong'), { message: 'Storage unavailable: redis replied WRONGTYPE' })
  await t.rejects(store.replace(moved(record('wrong', clock().ms), 'in_progress')), { message: /^Storage unavailable: redis replied / })
  t.equal(await client.get(`${PREFIX}t:wrong`), 'a string, not a hash', 'the script wrote nothing')
})

t.test('max_live_per_principal: an insert past the owner\'s unfinished tasks is refused; a terminal write frees a place', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60, maxLivePerOwner: 1 })
  const c = clock()
  const a = record('a', c.ms)
  await store.insert(a)
  await t.rejects(store.insert(record('b', c.ms)), { code: 'A2A_ERR_LIVE_TASK_LIMIT' })
  t.equal(await store.get('b'), null, 'nothing of the refused task is stored')
  await store.insert(record('other', c.ms, { owner: 'bob' }))
  await store.insert(record('finished', c.ms, { state: 'rejected' }))
  t.equal(await store.replace(moved(a, 'in_progress')), true)
  t.equal(await store.replace(moved(moved(a, 'in_progress'), 'completed')), true)
  await store.insert(record('c', c.ms))
  t.same(await client.smembers(`${PREFIX}live:alice`), ['c'])
})

t.test('claimInterrupted hands out interrupted tasks by their last update, and again a minute later if still interrupted', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  const x = record('x', 100)
  const y = record('y', 200)
  await store.insert(x)
  await store.insert(y)
  const xi = moved(x, 'input_required')
  await store.replace({ ...xi, updatedAt: 150 })
  await store.replace({ ...moved(y, 'auth_required'), updatedAt: 120 })
  t.same(await store.claimInterrupted(160), ['y', 'x'])
  t.same(await store.claimInterrupted(160), [])
  t.same((await store.claimInterrupted(160 + 60_000)).sort(), ['x', 'y'], 'not canceled meanwhile: handed out again')
  await store.replace({ ...moved({ ...xi, updatedAt: 150 }, 'canceled'), updatedAt: 200 })
  t.same(await store.claimInterrupted(1e12), ['y'], 'a task that left the interrupted states is no longer handed out')
})

t.test('a list filtered by context or state reads that index: a page costs its size, not the owner\'s history', async t => {
  // A Redis of its own: INFO commandstats counts every database's calls, other files' included.
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  const c = clock()
  for (let i = 0; i < 2000; i++) {
    const r = record(`old-${i}`, c.ms, { contextId: 'busy' })
    await store.insert(r)
    const running = moved(r, 'in_progress')
    await store.replace(running)
    await store.replace(moved(running, 'completed'))
  }
  const rare = record('rare', c.ms, { contextId: 'quiet' })
  await store.insert(rare)
  await store.replace(moved(rare, 'in_progress'))
  for (let i = 0; i < 2000; i++) await store.insert(record(`new-${i}`, c.ms, { contextId: 'busy', state: 'rejected' }))
  const reads = async () => {
    const info = await client.info('commandstats')
    return Number(/cmdstat_hmget:calls=(\d+)/.exec(info)?.[1] ?? 0)
  }
  let before = await reads()
  t.same((await store.list({ owner: 'alice', contextId: 'quiet', pageSize: 5 })).tasks.map(r => r.task.id), ['rare'])
  t.ok(await reads() - before <= 2, `by context: ${await reads() - before} task reads`)
  before = await reads()
  t.same((await store.list({ owner: 'alice', state: 'in_progress', pageSize: 5 })).tasks.map(r => r.task.id), ['rare'])
  t.ok(await reads() - before <= 2, `by state: ${await reads() - before} task reads`)
  before = await reads()
  const page = await store.list({ owner: 'alice', contextId: 'busy', state: 'completed', pageSize: 3 })
  t.same(page.tasks.map(r => r.task.id), ['old-1999', 'old-1998', 'old-1997'])
  t.ok(await reads() - before <= 2100, 'both filters read the context index')
  t.equal(await client.zcard(`${PREFIX}st:5:alice:in_progress`), 1, 'the finished tasks left the in_progress set')
})

t.test('a terminal state index drops expired members as new ones arrive; a context index expires with its tasks', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60, indexTtlMs: 120_000 })
  const c = clock()
  const finish = async (id: string) => {
    const r = record(id, c.ms, { contextId: 'k' })
    await store.insert(r)
    await store.replace(moved(r, 'canceled'))
  }
  for (const id of ['a', 'b', 'c']) await finish(id)
  for (const id of ['a', 'b', 'c']) await client.del(`${PREFIX}t:${id}`)
  await finish('d')
  t.same(await client.zrange(`${PREFIX}st:5:alice:canceled`, 0, -1), ['5:alicec', '5:aliced'], 'two expired members dropped by one write')
  const pttl = await client.pttl(`${PREFIX}ctx:5:alice:k`)
  t.ok(pttl > 60_000 && pttl <= 120_000, `the context index expires after its tasks (${pttl} ms)`)
})

t.test('an insert that finds exactly its own record stored (a retried command) succeeds; another record is refused', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 60 })
  const r = record('twice', clock().ms)
  await store.insert(r)
  await t.resolves(store.insert(r), 'the retried insert landed already')
  await t.rejects(store.insert({ ...r, createdAt: r.createdAt + 1 }), { code: 'A2A_ERR_TASK_CONFLICT' })
  t.same((await store.list({ owner: 'alice', pageSize: 10 })).tasks.map(x => x.task.id), ['twice'], 'listed once')
})

t.test('a task\'s events are a Stream beside it, which expires server.stream_replay.ttl after the task ends', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 3600, replay: { maxEvents: 100, ttlSeconds: 30 } })
  const c = clock()
  const r = record('s', c.ms)
  await store.insert(r)
  const running = moved(r, 'in_progress')
  await store.replace(running, { type: 'status', version: 2, task: running.task, final: false })
  t.equal(await client.type(`${PREFIX}e:s`), 'stream')
  t.equal(await client.pttl(`${PREFIX}e:s`), -1, 'no expiry while the task runs')
  t.same(await client.xrange(`${PREFIX}e:s`, '-', '+'), [['2-1', ['p', '0', 'e', JSON.stringify({ type: 'status', status: running.task.status, final: false })]]])
  const done = moved(running, 'completed')
  await store.replace(done, { type: 'status', version: 3, task: done.task, final: true })
  const pttl = await client.pttl(`${PREFIX}e:s`)
  t.ok(pttl > 0 && pttl <= 30_000, `PTTL ${pttl} once the task has ended`)
  t.equal(await client.hget(`${PREFIX}t:s`, 'ev'), '3')
  await client.pexpire(`${PREFIX}e:s`, 1)
  await until(async () => await client.exists(`${PREFIX}e:s`) === 0)
  t.equal(await store.eventsAfter('s', 2), null, 'expired: a resume resyncs')
  t.same(await store.eventsAfter('s', 3), [])

  const none = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 3600, replay: { maxEvents: 0, ttlSeconds: 30 } })
  const n = record('n', c.ms)
  await none.insert(n)
  const moving = moved(n, 'in_progress')
  await none.replace(moving, { type: 'status', version: 2, task: moving.task, final: false })
  t.equal(await client.exists(`${PREFIX}e:n`), 0, 'max_events 0: no Stream')
  t.equal(await none.eventsAfter('n', 0), null)
})

t.test('eventsAfter fails as storage unavailable when Redis does not answer', async t => {
  const port = await silentServer(t)
  const stalled = createRedisClient(service(`redis://127.0.0.1:${port}`, true), { commandTimeoutMs: 300 })
  t.teardown(() => quitWithin(stalled, 100))
  await t.rejects(new RedisTaskStore(stalled, { keyPrefix: PREFIX, ttlSeconds: 60 }).eventsAfter('x', 0), { message: /^Storage unavailable/ })
})

t.test('a chunk appended to an artifact is written alone beside the record (issue 39 row 7); reads fold it in; a large one, or any other write, writes the record whole', async t => {
  const client = await redisDb(t, DB)
  const store = new RedisTaskStore(client, { keyPrefix: PREFIX, ttlSeconds: 3600 })
  const c = clock()
  let r = moved(record('k', c.ms), 'in_progress')
  r = { ...r, version: 1, task: { ...r.task, artifacts: [{ artifactId: 'x', name: 'answer', parts: [{ kind: 'text', text: 'a' }] }] } }
  await store.insert(r)
  const stored = await client.hget(`${PREFIX}t:k`, 'record')
  /** `r` with `text` appended to artifact x, one version and one ms on, written with its chunk event. */
  const append = async (text: string): Promise<void> => {
    const old = r.task.artifacts[0]
    const next: StoredTask = { ...r, version: r.version + 1, updatedAt: r.updatedAt + 1, task: { ...r.task, artifacts: [{ ...old, parts: old.parts.concat([{ kind: 'text', text }]) }] } }
    t.equal(await store.replace(next, { type: 'artifact', version: next.version, task: next.task, artifact: { artifactId: 'x', name: 'answer', parts: [{ kind: 'text', text }] }, append: true, lastChunk: false }), true)
    r = next
  }
  for (const text of ['b', 'c', 'd']) await append(text)
  t.equal(await client.hget(`${PREFIX}t:k`, 'record'), stored, 'the record is not rewritten by a chunk')
  t.equal(await client.hget(`${PREFIX}t:k`, 'version'), '4')
  t.same(await store.get('k'), r, 'get folds the chunks in: the record as written')
  t.same((await store.list({ owner: 'alice', pageSize: 10 })).tasks, [r], 'list too')
  t.same((await store.list({ owner: 'alice', pageSize: 10, where: task => task.artifacts[0].parts.length === 4 })).tasks, [r], 'and a filtered list filters the folded task')

  // A chunk that would outweigh three times the record (and 1 MiB) is written with the whole record; the chunks go.
  await append('z'.repeat(1024 * 1024))
  t.equal(await client.exists(`${PREFIX}c:k`), 0, 'no chunks left')
  t.same(JSON.parse(await client.hget(`${PREFIX}t:k`, 'record') as string), r, 'the record written whole')
  await append('e')
  t.equal(await client.exists(`${PREFIX}c:k`), 1)
  const stale = { ...r, version: r.version }
  t.equal(await store.replace(stale, { type: 'artifact', version: stale.version, task: stale.task, artifact: { artifactId: 'x', parts: [] }, append: true, lastChunk: false }), false,
    'a chunk keeps the compare-and-set: one from a stale version is refused')
  // A write that is not a chunk writes the record whole.
  const done = moved(r, 'completed')
  await store.replace(done, { type: 'status', version: done.version, task: done.task, final: true })
  t.equal(await client.exists(`${PREFIX}c:k`), 0, 'a terminal write leaves no chunks')
  t.same(await store.get('k'), done)
  // A chunk given to a task that has ended is written with the whole record: nothing outlives the task's expiry.
  const later: StoredTask = { ...done, version: done.version + 1, task: { ...done.task, artifacts: [{ ...done.task.artifacts[0], parts: done.task.artifacts[0].parts.concat([{ kind: 'text', text: 'f' }]) }] } }
  await store.replace(later, { type: 'artifact', version: later.version, task: later.task, artifact: { artifactId: 'x', parts: [{ kind: 'text', text: 'f' }] }, append: true, lastChunk: true })
  t.equal(await client.exists(`${PREFIX}c:k`), 0, 'no chunks beside an ended task')
  t.same(await store.get('k'), later)
})
