import pino from 'pino'
import t from 'tap'
import { RedisPushOutbox, outboxKeys, outboxMember } from '../../../services/push/outbox.js'
import { RedisTaskStore } from '../../../services/tasks/redis-store.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { logCapture, privateRedis } from '../../helper.js'

function record (id: string, state: StoredTask['task']['status']['state'], version: number): StoredTask {
  return {
    task: { id, contextId: 'c', kind: 'task', status: { state, timestamp: '2026-01-01T00:00:00.000Z' }, artifacts: [], history: [], metadata: null },
    owner: 'o',
    version,
    createdAt: 0,
    updatedAt: 0
  }
}

t.test('a state change of a task with push configs is recorded with the write; same-state writes and tasks without configs are not', async t => {
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const store = new RedisTaskStore(client, { keyPrefix: 'k:', ttlSeconds: 60, pushKeyPrefix: 'p:' })
  const keys = outboxKeys('k:')
  await client.hset('p:with', 'order', '["default"]')
  for (const id of ['with', 'without']) {
    await store.insert(record(id, 'submitted', 1))
    t.equal(await store.replace(record(id, 'in_progress', 2)), id === 'with' ? 'outbox' : true, 'the write says whether the task had configs')
    t.equal(await store.replace(record(id, 'in_progress', 3)), true, 'a status update in the same state')
  }
  t.same(await client.zrange(keys.queue, 0, -1), [outboxMember('with', 2)])
  t.same(JSON.parse(await client.hget(keys.bodies, 'with.2') as string), record('with', 'in_progress', 2))
  t.equal(await store.replace(record('with', 'completed', 3)), false, 'a lost compare-and-set records nothing')
  t.equal(await client.zcard(keys.queue), 1)
})

t.test('claim takes entries past the grace, oldest first, once per grace period; ack clears them', async t => {
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const keys = outboxKeys('k:')
  // A grace of a minute, entries minutes old: a loaded machine cannot age the fresh one past it during the test.
  const outbox = new RedisPushOutbox(client, { taskKeyPrefix: 'k:', graceMs: 60_000, log: pino({ level: 'silent' }) })
  const now = Number((await client.time())[0]) * 1000
  await client.zadd(keys.queue, now - 300_000, 'a.2', now - 180_000, 'b.4', now, 'fresh.2', now - 240_000, 'half.3')
  await client.hset(keys.bodies, 'a.2', JSON.stringify(record('a', 'in_progress', 2)), 'b.4', JSON.stringify(record('b', 'failed', 4)),
    'fresh.2', JSON.stringify(record('fresh', 'in_progress', 2)))
  const claimed = await outbox.claim()
  t.same(claimed.map(r => `${r.task.id}.${r.version}`), ['a.2', 'b.4'], 'old entries, oldest first; the fresh one is its writer\'s')
  t.equal(await client.zscore(keys.queue, 'half.3'), null, 'an entry without a body is dropped')
  t.same(await outbox.claim(), [], 'a claimed entry is the claimer\'s for the grace period')
  await outbox.ack('a', 2)
  t.equal(await client.zscore(keys.queue, 'a.2'), null)
  t.equal(await client.hget(keys.bodies, 'a.2'), null)
  t.equal(await client.zcard(keys.queue), 2)
})

t.test('with Redis unreachable claim rejects with StorageUnavailable and ack only logs', async t => {
  const { Redis } = await import('ioredis')
  const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null })
  client.on('error', () => {})
  t.teardown(() => client.disconnect())
  const logs = logCapture()
  const outbox = new RedisPushOutbox(client, { taskKeyPrefix: 'k:', graceMs: 10, log: pino(logs.stream) })
  await t.rejects(outbox.claim(), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  await t.resolves(outbox.ack('a', 1))
  t.match(logs.lines(), [{ msg: 'outbox entry not acknowledged', taskId: 'a' }])
})
