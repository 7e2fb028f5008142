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
