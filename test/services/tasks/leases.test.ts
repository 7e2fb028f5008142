import pino from 'pino'
import t from 'tap'
import { RedisTaskLeases } from '../../../services/tasks/leases.js'
import { privateRedis, redisDb, until } from '../../helper.js'

// This file owns Redis db 6.
const DB = 6
const log = pino({ level: 'silent' })

t.test('a held lease is renewed; a released one is gone; neither is claimed', async t => {
  const client = await redisDb(t, DB)
  const leases = new RedisTaskLeases(client, { keyPrefix: 'l1:', ttlMs: 300, log })
  t.teardown(() => leases.close())
  await leases.acquire('held')
  await leases.acquire('released')
  await leases.release('released')
  t.equal(leases.held, 1)
  const first = Number(await client.zscore('l1:leases', 'held'))
  await until(async () => Number(await client.zscore('l1:leases', 'held')) > first)
  t.same(await leases.claimExpired(), [], 'a renewed lease has not expired')
  t.equal(await client.zscore('l1:leases', 'released'), null)
})

t.test('an expired lease is claimed by exactly one of several instances', async t => {
  const client = await redisDb(t, DB)
  const dead = new RedisTaskLeases(client, { keyPrefix: 'l2:', ttlMs: 200, log })
  await dead.acquire('orphan')
  // The instance dies: its renewals stop.
  await dead.close()
  const others = [0, 1, 2].map(() => new RedisTaskLeases(client, { keyPrefix: 'l2:', ttlMs: 200, log }))
  t.teardown(() => Promise.all(others.map(o => o.close())))
  const claims: string[][] = []
  await until(async () => {
    claims.push(...await Promise.all(others.map(o => o.claimExpired())))
    return claims.flat().length > 0
  })
  t.same(claims.flat(), ['orphan'], 'claimed once')
  t.same(await others[0].claimExpired(), [], 'the claim is a lease of its own')
  await others[0].release('orphan')
  t.equal(await client.zscore('l2:leases', 'orphan'), null, 'released once the task is settled')
})

t.test('a claim that is never released lapses and is claimed again', async t => {
  const client = await redisDb(t, DB)
  const dead = new RedisTaskLeases(client, { keyPrefix: 'l5:', ttlMs: 100, log })
  await dead.acquire('orphan')
  await dead.close()
  const claimer = new RedisTaskLeases(client, { keyPrefix: 'l5:', ttlMs: 100, log })
  t.teardown(() => claimer.close())
  await until(async () => (await claimer.claimExpired()).length === 1)
  // The claimer could not settle the task (storage failed it): the task is claimed again, not stranded.
  await until(async () => (await claimer.claimExpired()).includes('orphan'))
  t.ok(await client.zscore('l5:leases', 'orphan'), 'still leased, by the second claim')
})

t.test('hold renews a lease taken elsewhere; abandon stops renewing without giving it back', async t => {
  const client = await redisDb(t, DB)
  const leases = new RedisTaskLeases(client, { keyPrefix: 'l6:', ttlMs: 150, log })
  t.teardown(() => leases.close())
  await client.zadd('l6:leases', Date.now() + 150, 'inserted')
  leases.hold('inserted')
  t.equal(leases.held, 1)
  const first = Number(await client.zscore('l6:leases', 'inserted'))
  await until(async () => Number(await client.zscore('l6:leases', 'inserted')) > first)
  leases.abandon('inserted')
  t.equal(leases.held, 0)
  t.ok(await client.zscore('l6:leases', 'inserted'), 'the lease stays, to lapse')
  await until(async () => (await leases.claimExpired()).includes('inserted'))
})

t.test('a lease another instance claimed is not taken back by a late renewal', async t => {
  const client = await redisDb(t, DB)
  const slow = new RedisTaskLeases(client, { keyPrefix: 'l3:', ttlMs: 150, log })
  t.teardown(() => slow.close())
  await slow.acquire('task')
  await slow.acquire('other')
  await client.zrem('l3:leases', 'task')
  // Once the other lease shows a renewal round has run, the claimed one must still be gone.
  const first = Number(await client.zscore('l3:leases', 'other'))
  await until(async () => Number(await client.zscore('l3:leases', 'other')) > first)
  t.equal(await client.zscore('l3:leases', 'task'), null)
})

t.test('with Redis unreachable every call rejects with StorageUnavailable, and renewals only log', async t => {
  const { Redis } = await import('ioredis')
  const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null })
  client.on('error', () => {})
  const warnings: string[] = []
  const leases = new RedisTaskLeases(client, { keyPrefix: 'down:', ttlMs: 150, log: { warn: (_o: unknown, msg: string) => warnings.push(msg) } as any })
  t.teardown(async () => { await leases.close(); client.disconnect() })
  await t.rejects(leases.acquire('x'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  await until(() => warnings.includes('task leases not renewed'))
  await t.rejects(leases.release('x'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  await t.rejects(leases.claimExpired(), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
})

t.test('row 6: an expired lease is claimed only once a grace has passed since a round found it: an owner that renews meanwhile keeps it', async t => {
  const client = await redisDb(t, DB)
  const owner = new RedisTaskLeases(client, { keyPrefix: 'l7:', ttlMs: 60_000, log })
  const claimer = new RedisTaskLeases(client, { keyPrefix: 'l7:', ttlMs: 60_000, graceMs: 100, log })
  t.teardown(async () => { await owner.close(); await claimer.close() })
  await owner.acquire('alive')
  await owner.acquire('dead')
  // Both leases lapsed while Redis refused writes (here: set back by hand).
  await client.zadd('l7:leases', 1, 'alive', 1, 'dead')
  t.same(await claimer.claimExpired(), [], 'the first round only doubts them')
  t.same(await client.zrange('l7:leases:doubted', 0, -1), ['alive', 'dead'])
  t.ok(Number(await client.zscore('l7:leases', 'dead')) > 1, 'each is leased for the grace, to its owner still')
  // The owner renews one (its renewal retried as soon as Redis answers), and has given up the other.
  owner.abandon('dead')
  await owner.acquire('alive')
  t.same(await client.zrange('l7:leases:doubted', 0, -1), ['dead'], 'a renewed lease is no longer doubted')
  const claimed: string[] = []
  await until(async () => {
    claimed.push(...await claimer.claimExpired())
    return claimed.length > 0
  })
  t.same(claimed, ['dead'], 'the lease left unrenewed past the grace is claimed; the renewed one is not')
  t.equal(await client.zcard('l7:leases:doubted'), 0)
  // A doubt whose lease went with its task (a terminal write) is dropped once it is two graces old.
  await client.zadd('l7:leases:doubted', 1, 'gone')
  await claimer.claimExpired()
  t.equal(await client.zcard('l7:leases:doubted'), 0)
})

t.test('row 6: a renewal Redis refuses is retried until Redis takes it, logged once when it fails and once when it lands', async t => {
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
  const admin = new Redis(redis.port, '127.0.0.1')
  t.teardown(() => { client.disconnect(); admin.disconnect() })
  const lines: string[] = []
  const logged = { warn: (_o: unknown, msg: string) => lines.push(msg), info: (_o: unknown, msg: string) => lines.push(msg) }
  const leases = new RedisTaskLeases(client, { keyPrefix: 'l8:', ttlMs: 150, log: logged as any })
  t.teardown(() => leases.close())
  await leases.acquire('task')
  await admin.config('SET', 'maxmemory-policy', 'noeviction')
  await admin.config('SET', 'maxmemory', '1')
  await until(() => lines.includes('task leases not renewed'))
  const refused = Number(await admin.zscore('l8:leases', 'task'))
  // Several retries are refused meanwhile: a few more than one period's worth of renewal rounds.
  await until(async () => Number((await admin.info('stats')).match(/total_error_replies:(\d+)/)?.[1]) >= 4)
  await admin.config('SET', 'maxmemory', '0')
  await until(() => lines.includes('task leases renewed again'))
  t.ok(Number(await admin.zscore('l8:leases', 'task')) > refused, 'renewed once Redis takes writes')
  t.same(lines, ['task leases not renewed', 'task leases renewed again'], 'one line per outage, not one per retry')
  await leases.close()
  t.equal(leases.held, 0)
})

t.test('reapOrphans fails the unfinished tasks of a dead instance, once, and leaves finished and vanished ones alone', async t => {
  const client = await redisDb(t, DB)
  const { TaskService, OWNER_LOST_MESSAGE } = await import('../../../services/tasks/task-service.js')
  const { RedisTaskStore } = await import('../../../services/tasks/redis-store.js')
  const { MemoryTaskEventBus } = await import('../../../services/tasks/event-bus.js')
  const { ANONYMOUS } = await import('../../../services/auth/principal.js')
  const warnings: Array<{ msg: string, taskId?: string, taskIds?: string[] }> = []
  const logged = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line)) } })
  const store = new RedisTaskStore(client, { keyPrefix: 'r:', ttlSeconds: 60 })
  const instance = (leases: RedisTaskLeases, executor: () => Promise<void>) => new TaskService({
    store, bus: new MemoryTaskEventBus(), leases, executor, log: logged, toolsFor: () => ({ available: () => [], call: async () => ({}) })
  })
  const deadLeases = new RedisTaskLeases(client, { keyPrefix: 'r:', ttlMs: 200, log })
  const aliveLeases = new RedisTaskLeases(client, { keyPrefix: 'r:', ttlMs: 200, log })
  t.teardown(() => aliveLeases.close())
  let started = 0
  // The dead instance's executor never settles: only the reaper can end its task.
  const dead = instance(deadLeases, () => { started++; return new Promise<void>(() => {}) })
  const alive = instance(aliveLeases, async () => {})
  const message = (text: string) => ({ kind: 'message' as const, role: 'user' as const, messageId: text, parts: [{ kind: 'text' as const, text }] })

  const orphan = await dead.create(message('orphan'), ANONYMOUS)
  dead.dispatch(orphan, ANONYMOUS)
  const finished = await dead.create(message('finished'), ANONYMOUS)
  dead.dispatch(finished, ANONYMOUS)
  await until(async () => started === 2 && Number(await client.zcard('r:leases')) === 2)
  await dead.update(finished.task.id, task => ({ ...task, status: { state: 'completed', timestamp: new Date().toISOString() } }))
  await deadLeases.acquire('no-such-task')
  // The instance dies: its leases are no longer renewed.
  await deadLeases.close()

  const failed: string[] = []
  await until(async () => {
    failed.push(...await alive.reapOrphans())
    return Number(await client.zcard('r:leases')) === 0
  })
  t.same(failed, [orphan.task.id], 'only the unfinished task is failed')
  const after = await alive.get(orphan.task.id, ANONYMOUS)
  t.equal(after.task.status.state, 'failed')
  t.equal(after.task.status.message?.parts[0].kind === 'text' && after.task.status.message.parts[0].text, OWNER_LOST_MESSAGE)
  t.equal((await alive.get(finished.task.id, ANONYMOUS)).task.status.state, 'completed')
  t.match(warnings.filter(w => w.msg === 'lease of a vanished task dropped'), [{ taskId: 'no-such-task' }], 'a lease of a vanished task is logged')
  t.match(warnings.filter(w => w.msg === 'tasks of a stopped instance failed'), [{ taskIds: [orphan.task.id] }])
  t.same(await alive.reapOrphans(), [], 'nothing is reaped twice')
  t.same(await instance(undefined as unknown as RedisTaskLeases, async () => {}).reapOrphans(), [], 'without leases there is nothing to reap')
})
