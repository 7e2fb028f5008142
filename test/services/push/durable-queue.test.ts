import t from 'tap'
import { DurableDeliveryQueue, deliveryJobId } from '../../../services/push/durable-queue.js'
import { MemoryPushConfigStore } from '../../../services/push/memory-store.js'
import type { PushConfigStore } from '../../../services/push/store.js'
import { privateRedis, receiver, redisDb, until } from '../../helper.js'
import { queueNotifier, record } from './queue-notifier.js'

// This file owns Redis db 3.
const DB = 3

/** A notifier whose deliveries go through a durable queue on `client`, as the plugin wires them. */
function durable (t: { teardown (fn: () => unknown): void }, client: import('ioredis').Redis, store: PushConfigStore) {
  const { notifier, logs, log } = queueNotifier(store, 8)
  const queue = new DurableDeliveryQueue({ client, prefix: 'dq', notifier, store, maxRetries: 2, concurrency: 8, ttlSeconds: 60, log })
  notifier.useQueue(queue)
  t.teardown(() => notifier.close(0))
  return { notifier, queue, logs }
}

t.test('job ids are <task>.<version>.<config>; a config id BullMQ cannot take is hashed', async t => {
  t.equal(deliveryJobId('t1', 3, 'default'), 't1.3.default')
  const odd = deliveryJobId('t1', 3, 'a:b')
  t.match(odd, /^t1\.3\.[\w-]{43}$/)
  t.equal(deliveryJobId('t1', 3, 'a:b'), odd, 'the same config id always gives the same job id')
  t.not(deliveryJobId('t1', 3, 'a:c'), odd)
})

t.test('queued deliveries are made in order, once each, even when the same state is queued twice', async t => {
  const client = await redisDb(t, DB)
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: `${hook.url}/a` }, { maxPerTask: 10 })
  const { notifier } = durable(t, client, store)
  notifier.notify(record('in_progress', 2))
  notifier.notify(record('in_progress', 2))
  notifier.notify(record('completed', 3))
  await until(() => hook.received.length >= 2)
  await until(async () => await notifier.backlog() === 0)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'completed'])
})

t.test('a failed attempt is retried on the schedule, as a BullMQ backoff, with the same webhook-id', async t => {
  const client = await redisDb(t, DB)
  const hook = await receiver(t)
  hook.script(503, async () => ({ status: 429, headers: { 'retry-after': '0' } }), 200)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: `${hook.url}/retry` }, { maxPerTask: 10 })
  const { notifier, logs } = durable(t, client, store)
  notifier.notify(record('completed', 2))
  await until(() => hook.received.length >= 3)
  await until(async () => await notifier.backlog() === 0)
  t.equal(hook.received.length, 3, 'two retries, then delivered')
  const ids = hook.received.map(r => r.headers['webhook-id'])
  t.match(ids[0], /^msg_task-1\.2\./)
  t.same(ids, [ids[0], ids[0], ids[0]], 'every attempt carries the same webhook-id')
  const retries = logs.lines().filter(l => l.msg === 'webhook delivery failed, will retry')
  t.match(retries, [{ attempt: 1, status: 503 }, { attempt: 2, status: 429 }])
})

t.test('a delivery whose push config was deleted before its turn is dropped', async t => {
  const client = await redisDb(t, DB)
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  const { config } = await store.put('task-1', { url: `${hook.url}/gone` }, { maxPerTask: 10 })
  const { queue, logs } = durable(t, client, store)
  await store.remove('task-1', config.id)
  await queue.add('task-1', 2, 'in_progress', () => JSON.stringify(record('in_progress', 2).task), [config])
  await until(async () => await queue.pending() === 0)
  await until(() => logs.lines().some(l => l.msg === 'push config gone: delivery dropped'))
  t.equal(hook.received.length, 0)
})

t.test('when the queue cannot be reached, the deliveries are logged as not queued and the caller never sees it', async t => {
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url, { commandTimeout: 300, maxRetriesPerRequest: 0, showFriendlyErrorStack: true })
  client.on('error', () => {})
  t.teardown(() => client.disconnect())
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: 'http://127.0.0.1:9/never' }, { maxPerTask: 10 })
  const { notifier, logs } = durable(t, client, store)
  redis.stop()
  notifier.notify(record('completed', 2))
  await until(() => logs.lines().some(l => l.msg === 'webhook deliveries could not be queued'))
  const line = logs.lines().find(l => l.msg === 'webhook deliveries could not be queued')
  t.match(line, { level: 40, taskId: 'task-1', state: 'completed' })
  redis.resume()
})

/** Fails the test, instead of hanging it, when `work` has not settled within `ms` (far above what it needs). */
async function settles (t: { fail (msg: string): void }, work: Promise<unknown>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const ended = await Promise.race([work.then(() => true), new Promise<boolean>(resolve => { timer = setTimeout(resolve, ms, false) })])
  clearTimeout(timer)
  if (!ended) t.fail(`${what} did not end within ${ms} ms`)
}

t.test('close ends when Redis refuses connections: the worker is closed by force, not left waiting to reconnect', async t => {
  const { startRedis } = await import('../../../scripts/redis-server.js')
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url, { commandTimeout: 300, maxRetriesPerRequest: 0 })
  let failedAttempts = 0
  client.on('error', () => { failedAttempts++ })
  t.teardown(() => client.disconnect())
  const { queue } = durable(t, client, new MemoryPushConfigStore())
  await until(async () => await queue.pending() === 0)
  await redis.stop()
  // Once the worker's connections (as this client, which retries alike) have failed to reconnect a few times, the
  // worker spends most of its time waiting for the next attempt.
  await until(() => failedAttempts >= 3)
  // BullMQ's graceful close waited for ever here: ioredis reports no end while it waits to reconnect.
  await settles(t, queue.close(100), 20_000, 'close with Redis gone')
  t.pass('closed')
})

t.test('an attempt still in flight when close has waited its time is left to another worker, its job still in Redis', async t => {
  const client = await redisDb(t, DB)
  let answer: () => void = () => {}
  const answered = new Promise<{ status: number }>(resolve => { answer = () => resolve({ status: 200 }) })
  const hook = await receiver(t)
  hook.script(async () => await answered)
  t.teardown(() => answer())
  const store = new MemoryPushConfigStore()
  const { config } = await store.put('task-1', { url: `${hook.url}/slow` }, { maxPerTask: 10 })
  const { notifier, queue, logs } = durable(t, client, store)
  notifier.notify(record('completed', 2))
  await until(() => hook.received.length === 1)
  await settles(t, notifier.close(100), 20_000, 'close with an attempt in flight')
  t.match(logs.lines().find(l => l.msg === 'webhook deliveries still in flight at close: left to another worker'), { level: 40, inFlight: 1 })
  const job = `dq:webhooks:${deliveryJobId('task-1', 2, config.id)}`
  t.equal(await client.exists(job), 1, 'the delivery is still a job in Redis, for another worker once its lock lapses')
  t.equal(await queue.pending(), 1, 'and it has not settled')
})
