import t, { type Test } from 'tap'
import { crashInstance, killAtAnyPoint, storedTask } from './crash-scenarios.js'
import { build, buildLogged, call, privateRedis, receiver, until, userMessage } from './helper.js'

/** An app on a private Redis (its memory and clients are this test's to break), tasks and push configs there. */
async function onPrivateRedis (t: Test, url: string, tasks: Record<string, unknown>) {
  return await build(t, {
    config: {
      agent: { name: 'Slow', delay_ms: 1500 },
      services: { cache: { type: 'cache', url } },
      tasks: { backend: 'kvcache', ...tasks },
      push_notifications: { backend: 'kvcache' },
      server: { shutdown_timeout: 0.5 }
    }
  })
}

/** A client of the private Redis for the test itself: to fill its memory, pause it, look at its keys. */
async function adminOf (t: Test, port: number) {
  const { Redis } = await import('ioredis')
  const admin = new Redis(port, '127.0.0.1')
  t.teardown(() => admin.disconnect())
  return admin
}

/** Ten non-blocking tasks, each held in_progress by the agent's delay. */
async function tenTasks (app: Awaited<ReturnType<typeof build>>): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < 10; i++) {
    const sent = await call(app, 'message/send', { message: userMessage(`task ${i}`), configuration: { blocking: false } })
    ids.push(sent.body.result.id)
  }
  return ids
}

async function states (app: Awaited<ReturnType<typeof build>>, ids: string[]): Promise<any[]> {
  return await Promise.all(ids.map(async id => (await call(app, 'tasks/get', { id })).body.result))
}

t.test('writes refused by a full Redis for 2.5 s: every task still completes, none is stuck in_progress', async t => {
  const redis = await privateRedis(t)
  const app = await onPrivateRedis(t, redis.url, { lease_ttl: 3 })
  const ids = await tenTasks(app)
  const admin = await adminOf(t, redis.port)
  await admin.config('SET', 'maxmemory-policy', 'noeviction')
  await admin.config('SET', 'maxmemory', '1')
  await new Promise(resolve => setTimeout(resolve, 2500))
  await admin.config('SET', 'maxmemory', '0')
  await until(async () => (await states(app, ids)).every(task => task?.status.state === 'completed'), 1000)
  for (const task of await states(app, ids)) {
    t.equal(task.status.state, 'completed')
    t.equal(task.artifacts.length, 1, 'with the agent\'s artifact, written once')
  }
  t.equal(await admin.zcard('a2a:task:leases'), 0, 'no lease is left behind')
})

t.test('a 3.5 s Redis pause while tasks finish: they complete with their artifacts, never failed as the agent\'s fault', async t => {
  const redis = await privateRedis(t)
  const app = await onPrivateRedis(t, redis.url, { lease_ttl: 10 })
  const ids = await tenTasks(app)
  const admin = await adminOf(t, redis.port)
  // The agents finish 1.5 s after their start: inside the pause, so their writes time out and land late.
  await new Promise(resolve => setTimeout(resolve, 1000))
  await admin.call('CLIENT', 'PAUSE', '3500', 'ALL')
  await until(async () => (await states(app, ids)).every(task => task?.status.state === 'completed'), 1000)
  for (const task of await states(app, ids)) {
    t.equal(task.status.state, 'completed')
    t.same(task.artifacts.map((a: any) => a.parts.length), [1], 'one artifact of one part: no write applied twice')
  }
})

t.test('a run whose writes fail past its retries leaves its lease to lapse, and the reaper fails the task', async t => {
  const redis = await privateRedis(t)
  const app = await onPrivateRedis(t, redis.url, { lease_ttl: 0.6 })
  const [id] = await tenTasks(app)
  const admin = await adminOf(t, redis.port)
  await admin.config('SET', 'maxmemory-policy', 'noeviction')
  await admin.config('SET', 'maxmemory', '1')
  // The agent's first write comes at 1.5 s; its retries last the 0.6 s lease; the run gives up while Redis refuses.
  await until(async () => app.a2aTasks.running === 0, 1000)
  await admin.config('SET', 'maxmemory', '0')
  await until(async () => (await call(app, 'tasks/get', { id })).body.result.status.state === 'failed', 1000)
  const task = (await call(app, 'tasks/get', { id })).body.result
  t.equal(task.status.message.parts[0].text, 'The server instance running the task stopped before the task finished.')
})

t.test('kill -9 at any point: every task ends terminal and every stored state change is delivered at least once', async t => {
  const redis = await privateRedis(t)
  await killAtAnyPoint(t, async () => await crashInstance(t, 'kvcache', `  cache:\n    type: cache\n    url: ${redis.url}`))
})

/** What a dead instance left in Redis: the writes it made, through the same stores, before it could go on. */
async function deadInstance (url: string) {
  const { Redis } = await import('ioredis')
  const { RedisTaskStore } = await import('../services/tasks/redis-store.js')
  const { RedisPushConfigStore } = await import('../services/push/redis-store.js')
  const client = new Redis(url)
  const tasks = new RedisTaskStore(client, { keyPrefix: 'a2a:task:', ttlSeconds: 3600, leaseTtlMs: 500, pushKeyPrefix: 'a2a:push:' })
  const push = new RedisPushConfigStore(client, { keyPrefix: 'a2a:push:' })
  return { client, tasks, push }
}

t.test('a state change whose writer died before queueing its webhooks is delivered by another instance', async t => {
  const redis = await privateRedis(t)
  const hook = await receiver(t)
  const dead = await deadInstance(redis.url)
  t.teardown(() => dead.client.disconnect())
  await dead.push.put('t-1', { url: `${hook.url}/hook` }, { maxPerTask: 10 })
  await dead.tasks.insert(storedTask('t-1', 'submitted', 1))
  t.equal(await dead.tasks.replace(storedTask('t-1', 'in_progress', 2)), 'outbox', 'the store says the task had push configs')
  t.equal(await dead.client.zcard('a2a:task:outbox'), 1, 'the state change is in the outbox, written with it')
  // The writer dies here: its deliveries were never queued. Another instance relays them.
  const app = await build(t, {
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', lease_ttl: 0.5 },
      push_notifications: { backend: 'kvcache', config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.1 } },
      server: { shutdown_timeout: 0.5 }
    }
  })
  await until(() => hook.received.some(r => r.body?.status?.state === 'in_progress'), 1000)
  // The task had no run: its lease (taken with the insert) lapses and the reaper fails it; that change is delivered too.
  await until(() => hook.received.some(r => r.body?.status?.state === 'failed'), 1000)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'failed'], 'each state once, in order')
  t.equal((await call(app, 'tasks/get', { id: 't-1' })).body.result.status.state, 'failed')
  await until(async () => await dead.client.zcard('a2a:task:outbox') === 0)
  t.equal(await dead.client.hlen('a2a:task:outbox:b'), 0, 'the outbox is empty once all is queued')
})

t.test('a task stored by an instance that died before starting it is failed by the reaper, never stuck in submitted', async t => {
  const redis = await privateRedis(t)
  const dead = await deadInstance(redis.url)
  t.teardown(() => dead.client.disconnect())
  await dead.tasks.insert(storedTask('t-2', 'submitted', 1))
  t.ok(await dead.client.zscore('a2a:task:leases', 't-2'), 'the insert took the lease')
  const app = await build(t, {
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', lease_ttl: 0.5 },
      push_notifications: { backend: 'kvcache' },
      server: { shutdown_timeout: 0.5 }
    }
  })
  await until(async () => (await call(app, 'tasks/get', { id: 't-2' })).body.result.status.state === 'failed', 1000)
  t.equal(await dead.client.zscore('a2a:task:leases', 't-2'), null, 'and its lease is gone')
})

t.test('an outbox entry whose configs were deleted meanwhile is dropped without a delivery', async t => {
  const redis = await privateRedis(t)
  const hook = await receiver(t)
  const dead = await deadInstance(redis.url)
  t.teardown(() => dead.client.disconnect())
  await dead.push.put('t-3', { url: `${hook.url}/hook` }, { maxPerTask: 10 })
  await dead.tasks.insert(storedTask('t-3', 'submitted', 1))
  await dead.tasks.replace(storedTask('t-3', 'completed', 2))
  await dead.push.remove('t-3', 'default')
  await build(t, {
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', lease_ttl: 0.5 },
      push_notifications: { backend: 'kvcache', config: { allowed_networks: ['127.0.0.0/8'] } },
      server: { shutdown_timeout: 0.5 }
    }
  })
  await until(async () => await dead.client.zcard('a2a:task:outbox') === 0, 1000)
  t.equal(hook.received.length, 0)
})

t.test('with push notifications off, kvcache tasks keep no outbox', async t => {
  const redis = await privateRedis(t)
  const app = await build(t, {
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache' },
      push_notifications: { enabled: false },
      server: { shutdown_timeout: 0.5 }
    }
  })
  t.equal((await call(app, 'message/send', { message: userMessage('x') })).body.result.status.state, 'completed')
  const admin = await adminOf(t, redis.port)
  t.equal(await admin.exists('a2a:task:outbox'), 0)
})

t.test('a claimed orphan that cannot be failed (its record unreadable) is logged and left for its claim to lapse', async t => {
  const redis = await privateRedis(t)
  const { app, logs } = await buildLogged(t, {
    config: {
      agent: { name: 'Reaper' },
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', lease_ttl: 0.6 },
      push_notifications: { backend: 'kvcache' },
      server: { shutdown_timeout: 0.5 }
    }
  })
  const admin = await adminOf(t, redis.port)
  // A lease long expired, on a task whose stored record is not JSON.
  await admin.hset('a2a:task:t:garbled', 'record', 'not json')
  await admin.zadd('a2a:task:leases', 1, 'garbled')
  // The first round that finds the lease expired gives its owner a grace; a later one claims it.
  await until(async () => {
    t.same(await app.a2aTasks.reapOrphans(), [], 'nothing failed')
    return logs.lines().some(l => l.msg === 'could not fail an orphaned task' && l.taskId === 'garbled')
  })
  t.ok(Number(await admin.zscore('a2a:task:leases', 'garbled')) > 1, 'its claim is a lease of its own, which lapses')
})
