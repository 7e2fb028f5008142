import t, { type Test } from 'tap'
import pino from 'pino'
import { MemoryStreamSlots, RedisStreamSlots, type StreamSlots } from '../../../services/auth/stream-slots.js'
import { privateRedis, redisDb, until } from '../../helper.js'

// This file owns Redis db 5.
const DB = 5
const log = pino({ level: 'silent' })

/** The rules both kinds follow. `a` and `b` stand for two instances (the same one in memory). */
async function contract (t: Test, a: StreamSlots, b: StreamSlots): Promise<void> {
  const first = await a.take('alice')
  const second = await b.take('alice')
  t.type(first, 'function')
  t.type(second, 'function')
  t.equal(await a.take('alice'), null, 'the third stream of alice is refused, whichever instance it reaches')
  t.type(await b.take('bob'), 'function', 'principals are counted apart')
  await first?.()
  await first?.()
  const again = await b.take('alice')
  t.type(again, 'function', 'a released slot can be taken again, once')
  t.equal(await a.take('alice'), null)
  await second?.()
  await again?.()
}

t.test('memory slots count one instance\'s streams per principal', async t => {
  const slots = new MemoryStreamSlots(2)
  await contract(t, slots, slots)
  t.type(await slots.take('alice'), 'function')
  await slots.close()
})

t.test('Redis slots are shared by every instance of one Redis', async t => {
  const redis = await redisDb(t, DB)
  const other = redis.duplicate()
  t.teardown(() => other.disconnect())
  const a = new RedisStreamSlots(redis, { max: 2, keyPrefix: 'slots:', log })
  const b = new RedisStreamSlots(other, { max: 2, keyPrefix: 'slots:', log })
  t.teardown(() => Promise.all([a.close(), b.close()]))
  await contract(t, a, b)
  await until(async () => await redis.zcard('slots:alice') === 0)
  t.equal(a.held + b.held, 1, 'only bob\'s slot is still held')
  t.ok(await redis.pttl('slots:bob') > 0, 'the per-principal set expires')
})

t.test('the slots of an instance that stops renewing them lapse; held ones are renewed', async t => {
  const redis = await redisDb(t, DB)
  const dead = new RedisStreamSlots(redis, { max: 1, keyPrefix: 'slots:', ttlMs: 1000, log })
  const alive = new RedisStreamSlots(redis, { max: 1, keyPrefix: 'slots:', ttlMs: 1000, log })
  t.teardown(() => alive.close())
  t.type(await dead.take('carol'), 'function')
  t.type(await alive.take('dave'), 'function')
  // Stopping the renewal without releasing is what a crashed instance looks like to Redis.
  await dead.close()
  t.equal(await alive.take('carol'), null, 'the slot still counts before it lapses')
  await until(async () => (await alive.take('carol')) !== null)
  t.equal(await redis.zcard('slots:dave'), 1, 'a slot that is renewed outlives its TTL')
})

t.test('a Redis that does not answer makes take fail with StorageUnavailable; renew and release failures are logged', async t => {
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url, { commandTimeout: 200, maxRetriesPerRequest: 0 })
  client.on('error', () => {})
  t.teardown(() => client.disconnect())
  const warnings: string[] = []
  const logged = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line).msg) } })
  const slots = new RedisStreamSlots(client, { max: 1, keyPrefix: 'slots:', ttlMs: 150, log: logged })
  t.teardown(() => slots.close())
  const release = await slots.take('erin')
  redis.stop()
  await t.rejects(slots.take('erin'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  await until(() => warnings.includes('stream slots not renewed'))
  await release?.()
  t.ok(warnings.includes('stream slot not released'), 'a release that fails is logged, not thrown')
  redis.resume()
})
