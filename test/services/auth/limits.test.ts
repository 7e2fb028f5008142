import t from 'tap'
import {
  MemoryFailureWindows, MemoryTokenBuckets, RedisFailureWindows, RedisTokenBuckets
} from '../../../services/auth/limits.js'
import { redisDb } from '../../helper.js'

t.test('a memory token bucket allows a burst, then refills at the rate', async t => {
  let now = 0
  const buckets = new MemoryTokenBuckets({ perMinute: 60, burst: 2, now: () => now })
  t.match(await buckets.take('a'), { allowed: true, remaining: 1 })
  t.match(await buckets.take('a'), { allowed: true, remaining: 0 })
  t.same(await buckets.take('a'), { allowed: false, remaining: 0, retryAfterMs: 1000 })
  t.match(await buckets.take('b'), { allowed: true }, 'keys are separate')
  now = 1000
  t.match(await buckets.take('a'), { allowed: true })
  now = 60_000
  t.match(await buckets.take('a'), { allowed: true, remaining: 1 }, 'never more than the burst')
})

t.test('memory failure windows block past the limit until the minute passes', async t => {
  let now = 0
  const windows = new MemoryFailureWindows({ perMinute: 2, now: () => now })
  t.equal(await windows.blocked('ip'), 0)
  await windows.fail('ip')
  t.equal(await windows.blocked('ip'), 0)
  await windows.fail('ip')
  now = 10_000
  t.equal(await windows.blocked('ip'), 50_000)
  now = 60_000
  t.equal(await windows.blocked('ip'), 0)
  await windows.fail('ip')
  t.equal(await windows.blocked('ip'), 0, 'a new window starts')
})

t.test('Redis buckets and windows are shared by every client of one Redis', async t => {
  const a = await redisDb(t, 13)
  const b = a.duplicate()
  t.teardown(() => b.disconnect())
  const one = new RedisTokenBuckets(a, { perMinute: 60, burst: 2, keyPrefix: 'rl:' })
  const two = new RedisTokenBuckets(b, { perMinute: 60, burst: 2, keyPrefix: 'rl:' })
  t.match(await one.take('p'), { allowed: true, remaining: 1 })
  t.match(await two.take('p'), { allowed: true, remaining: 0 })
  const refused = await one.take('p')
  t.equal(refused.allowed, false)
  t.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 1000)
  t.ok(await a.pttl('rl:p') > 0, 'the bucket expires')

  const w1 = new RedisFailureWindows(a, { perMinute: 2, keyPrefix: 'fail:' })
  const w2 = new RedisFailureWindows(b, { perMinute: 2, keyPrefix: 'fail:' })
  await w1.fail('1.2.3.4')
  t.equal(await w2.blocked('1.2.3.4'), 0)
  await w2.fail('1.2.3.4')
  const wait = await w1.blocked('1.2.3.4')
  t.ok(wait > 0 && wait <= 60_000)
})

t.test('reserve counts an attempt before it is checked, refuses one past the limit, and forgive takes it back', async t => {
  let now = 0
  const windows = new MemoryFailureWindows({ perMinute: 2, now: () => now })
  t.equal(await windows.reserve('ip'), 0)
  t.equal(await windows.reserve('ip'), 0)
  now = 5_000
  t.equal(await windows.reserve('ip'), 55_000, 'a third attempt in the window is refused')
  await windows.forgive('ip')
  await windows.forgive('ip')
  t.equal(await windows.blocked('ip'), 0, 'forgiven attempts no longer count')
  now = 61_000
  await windows.forgive('ip')
  t.equal(await windows.reserve('ip'), 0, 'forgiving in a passed window changes nothing; a new one starts')

  const client = await redisDb(t, 13)
  const shared = new RedisFailureWindows(client, { perMinute: 2, keyPrefix: 'reserve:' })
  t.equal(await shared.reserve('5.6.7.8'), 0)
  t.equal(await shared.reserve('5.6.7.8'), 0)
  const wait = await shared.reserve('5.6.7.8')
  t.ok(wait > 0 && wait <= 60_000, `refused for ${wait} ms`)
  await shared.forgive('5.6.7.8')
  await shared.forgive('5.6.7.8')
  t.equal(await client.get('reserve:5.6.7.8'), '1')
  await shared.forgive('nobody')
  t.equal(await client.get('reserve:nobody'), null, 'forgiving an address with no window writes nothing')
})
