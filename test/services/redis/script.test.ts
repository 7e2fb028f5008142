import { Redis } from 'ioredis'
import t from 'tap'
import { redisScript } from '../../../services/redis/script.js'
import { privateRedis } from '../../helper.js'

// Scripts go to Redis as EVALSHA; the text only on a first use or when Redis does not have it (a private redis-server: SCRIPT FLUSH and
// INFO commandstats are server-wide).

t.test('a script runs as EVALSHA, and is sent again after SCRIPT FLUSH, never as EVAL on every call', async t => {
  const redis = await privateRedis(t)
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const incr = redisScript(client, 'testIncrBy', "return redis.call('INCRBY', KEYS[1], ARGV[1])", 1)
  for (let i = 0; i < 4; i++) await incr('n', 2)
  const again = redisScript(client, 'testIncrBy', 'this text is never sent', 1)
  t.equal(await again('n', 2), 10, 'a second binding of a name runs the command defined first')
  await client.script('FLUSH')
  t.equal(await incr('n', 1), 11, 'reloaded after NOSCRIPT')
  const sum = redisScript(client, 'testSumKeys', "local s = 0 for _, k in ipairs(KEYS) do s = s + (tonumber(redis.call('GET', k)) or 0) end return s")
  t.equal(await sum(2, 'n', 'none'), 11, 'a varying number of keys, given first')
  const stats = await client.info('commandstats')
  const calls = (name: string) => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0)
  // 7 calls: the text went 3 times (each script's first use on this connection, and once after the FLUSH, whose
  // EVALSHA got NOSCRIPT); the other calls went as EVALSHA.
  t.equal(calls('eval'), 3, 'the text only when Redis lacked it')
  t.equal(calls('evalsha'), 5, 'the rest by hash (one of them refused with NOSCRIPT)')
})
