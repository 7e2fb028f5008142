import type { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import type { CacheService } from '../../../schemas/config.js'
import { RedisPushConfigStore } from '../../../services/push/redis-store.js'
import { createRedisClient, quitWithin } from '../../../services/redis/client.js'
import { REDIS_UNREACHABLE, TEST_REDIS, clearDb, silentServer } from '../../helper.js'
import { pushStoreContract } from './store-contract.js'

// This file owns db 11 of the tests' Redis (TEST_REDIS), and empties it before and after each use (clearDb).
const DB = 11
const PREFIX = 'test:push:'
const OPTS = { maxPerTask: 10 }

function service (url = TEST_REDIS.url): CacheService {
  return { type: 'cache', url, db: DB, max_connections: 20, retry_on_timeout: true }
}

/** An emptied client on our db, quit (after emptying it again) when `t` ends. */
async function connect (t: Test): Promise<Redis> {
  const client = createRedisClient(service())
  t.teardown(async () => {
    await clearDb(client, DB).catch(() => {})
    await quitWithin(client, 1_000)
  })
  await clearDb(client, DB)
  return client
}

async function reachable (): Promise<boolean> {
  const probe = createRedisClient(service(), { connectTimeoutMs: 500, commandTimeoutMs: 1_000 })
  try {
    return await probe.ping() === 'PONG'
  } catch {
    return false
  } finally {
    await quitWithin(probe, 500)
  }
}

if (!await reachable()) {
  // Never a skip: a missing Redis must fail the run (STYLE.md §11).
  t.fail(REDIS_UNREACHABLE)
} else {
  pushStoreContract(t, 'redis', async () => {
    const client = createRedisClient(service())
    await clearDb(client, DB)
    return {
      store: new RedisPushConfigStore(client, { keyPrefix: PREFIX }),
      cleanup: async () => {
        await clearDb(client, DB)
        await quitWithin(client, 1_000)
      }
    }
  })
  redisOnly()
}

function redisOnly (): void {
  t.test('each task is one hash under the prefix: config fields, order and recent', async t => {
    const client = await connect(t)
    const store = new RedisPushConfigStore(client, { keyPrefix: PREFIX })
    await store.put('t1', { url: 'https://a.example/1', token: 'tok' }, OPTS)
    const second = await store.put('t1', { url: 'https://a.example/2' }, OPTS)
    await store.put('t1', { url: 'https://a.example/1', token: 'tok2' }, OPTS)
    await store.put('t2', { id: 'x', url: 'https://a.example/3' }, OPTS)

    t.equal(await client.dbsize(), 2)
    t.equal(await client.exists(`${PREFIX}t1`), 1)
    t.equal(await client.type(`${PREFIX}t1`), 'hash')
    t.equal(await client.hlen(`${PREFIX}t1`), 4)
    t.same(await client.hgetall(`${PREFIX}t1`), {
      'c:default': JSON.stringify({ url: 'https://a.example/1', token: 'tok2' }),
      [`c:${second.config.id}`]: JSON.stringify({ url: 'https://a.example/2' }),
      order: JSON.stringify(['default', second.config.id]),
      recent: JSON.stringify([second.config.id, 'default'])
    })
    t.equal(await client.ttl(`${PREFIX}t1`), -1, 'no TTL unless ttlSeconds is given')

    await store.remove('t1', 'default')
    t.equal(await client.hlen(`${PREFIX}t1`), 3)
    await store.remove('t1', second.config.id)
    t.equal(await client.exists(`${PREFIX}t1`), 0, 'the key goes with the last config')
    t.equal(await client.dbsize(), 1)
  })

  t.test('ttlSeconds sets the expiry of the task hash on every put', async t => {
    const client = await connect(t)
    const store = new RedisPushConfigStore(client, { keyPrefix: PREFIX })
    const key = `${PREFIX}t1`
    await store.put('t1', { url: 'https://a.example/1' }, { ...OPTS, ttlSeconds: 60 })
    t.ok(await client.ttl(key) > 55)
    await store.put('t1', { url: 'https://a.example/1' }, { ...OPTS, ttlSeconds: 600.5 })
    t.ok(await client.pttl(key) > 600_000)
    // Without ttlSeconds (or with one that is not a number of seconds) the expiry is left as it is.
    await store.put('t1', { url: 'https://a.example/2' }, OPTS)
    await store.put('t1', { url: 'https://a.example/3' }, { ...OPTS, ttlSeconds: Infinity })
    t.ok(await client.ttl(key) > 595)
    // A task with no lifetime left takes its configs with it.
    await store.put('t1', { url: 'https://a.example/4' }, { ...OPTS, ttlSeconds: 0 })
    await new Promise(resolve => setTimeout(resolve, 20))
    t.equal(await client.exists(key), 0)
  })

  t.test('concurrent puts from two clients never pass the limit', async t => {
    const clients = [await connect(t), await connect(t)]
    const stores = clients.map(client => new RedisPushConfigStore(client, { keyPrefix: PREFIX }))
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, n) =>
      stores[n % 2].put('t1', { url: `https://a.example/${n}` }, OPTS)))
    const created = results.filter(r => r.status === 'fulfilled')
    const refused = results.filter(r => r.status === 'rejected')
    t.equal(created.length, 10)
    t.equal(refused.length, 10)
    for (const r of refused) t.match(r.reason, { code: 'A2A_ERR_PUSH_CONFIG_LIMIT' })
    const list = await stores[0].list('t1')
    t.equal(list.length, 10)
    t.equal(new Set(list.map(c => c.id)).size, 10)
    t.equal(list.filter(c => c.id === 'default').length, 1)
  })

  t.test('close leaves the borrowed client open', async t => {
    const client = await connect(t)
    const store = new RedisPushConfigStore(client, { keyPrefix: PREFIX })
    await store.close()
    t.equal(await client.ping(), 'PONG')
    await t.resolves(store.ping())
  })

  t.test('an unreachable Redis fails every call with StorageUnavailable, fast', async t => {
    const client = createRedisClient(service('redis://127.0.0.1:1'), { connectTimeoutMs: 200, commandTimeoutMs: 1_000 })
    t.teardown(() => quitWithin(client, 500))
    const store = new RedisPushConfigStore(client, { keyPrefix: PREFIX })
    const started = Date.now()
    const unavailable = { code: 'A2A_ERR_STORAGE_UNAVAILABLE', statusCode: 503 }
    await Promise.all([
      t.rejects(store.put('t1', { url: 'https://a.example/1' }, OPTS), unavailable),
      t.rejects(store.get('t1', 'default'), unavailable),
      t.rejects(store.latest('t1'), unavailable),
      t.rejects(store.list('t1'), unavailable),
      t.rejects(store.remove('t1', 'default'), unavailable),
      t.rejects(store.ping(), { message: /^Storage unavailable: redis (unreachable|command timed out)$/ })
    ])
    // CONTRACT.md §8.1: a request fails within 3 s.
    t.ok(Date.now() - started < 3_000, 'within 3 s')

    const real = await connect(t)
    t.equal(await real.exists(`${PREFIX}t1`), 0, 'nothing was written')
  })

  t.test('the reasons are short and fixed: unreachable, timed out, closed, an error reply', async t => {
    const refused = createRedisClient(service('redis://127.0.0.1:1'), { connectTimeoutMs: 200 })
    t.teardown(() => quitWithin(refused, 500))
    await t.rejects(new RedisPushConfigStore(refused, { keyPrefix: PREFIX }).get('t1', 'a'),
      { message: 'Storage unavailable: redis unreachable' })

    // A server that accepts connections and never answers: a stalled Redis.
    const port = await silentServer(t)
    const stalled = createRedisClient(service(`redis://127.0.0.1:${port}`), { commandTimeoutMs: 300 })
    t.teardown(() => quitWithin(stalled, 100))
    const started = Date.now()
    await t.rejects(new RedisPushConfigStore(stalled, { keyPrefix: PREFIX }).put('t1', { url: 'https://a.example/' }, OPTS),
      { message: 'Storage unavailable: redis command timed out' })
    t.ok(Date.now() - started < 1_000)

    const closed = createRedisClient(service())
    await quitWithin(closed, 500)
    await t.rejects(new RedisPushConfigStore(closed, { keyPrefix: PREFIX }).ping(),
      { message: 'Storage unavailable: redis connection closed' })

    const client = await connect(t)
    await client.set(`${PREFIX}wrong`, 'a string, not a hash')
    const store = new RedisPushConfigStore(client, { keyPrefix: PREFIX })
    await t.rejects(store.get('wrong', 'a'), { message: 'Storage unavailable: redis replied WRONGTYPE' })
    await t.rejects(store.put('wrong', { url: 'https://a.example/' }, OPTS), { message: /^Storage unavailable: redis replied / })
    t.equal(await client.get(`${PREFIX}wrong`), 'a string, not a hash', 'the script wrote nothing')
  })
}
