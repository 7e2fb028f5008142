// PostgresTaskLeases (services/tasks/postgres-leases.ts) on a real PostgreSQL, each case in a migrated schema of its
// own: the rules the Redis leases follow (test/services/tasks/leases.test.ts), each checked on the table, and the
// reaper over PostgreSQL tasks.
import pg from 'pg'
import pino from 'pino'
import t from 'tap'
import { PostgresTaskLeases } from '../../../services/tasks/postgres-leases.js'
import { migratedSchema, testDatabase, until, type Teardown } from '../../helper.js'

const databaseUrl = testDatabase(t)
const log = pino({ level: 'silent' })
const pool = async (t: Teardown): Promise<pg.Pool> => await migratedSchema(t, await databaseUrl)

async function expiry (pool: pg.Pool, taskId: string): Promise<number | null> {
  const { rows } = await pool.query('SELECT expires_at FROM a2a_task_leases WHERE task_id = $1', [taskId])
  return rows.length === 0 ? null : Number(rows[0].expires_at)
}

/** Resolves once the lease of `taskId` has been renewed: its expiry moved past the one it has now. */
async function renewal (pool: pg.Pool, taskId: string): Promise<void> {
  const first = await expiry(pool, taskId) as number
  await until(async () => (await expiry(pool, taskId) as number) > first)
}

t.test('a held lease is renewed; a released one is gone; neither is claimed', async t => {
  const db = await pool(t)
  const leases = new PostgresTaskLeases(db, { ttlMs: 300, log })
  t.teardown(() => leases.close())
  await leases.acquire('held')
  await leases.acquire('released')
  await leases.release('released')
  t.equal(leases.held, 1)
  await renewal(db, 'held')
  t.same(await leases.claimExpired(), [], 'a renewed lease has not expired')
  t.equal(await expiry(db, 'released'), null)
})

t.test('an expired lease is claimed by exactly one of several instances claiming at once', async t => {
  const db = await pool(t)
  const dead = new PostgresTaskLeases(db, { ttlMs: 200, graceMs: 0, log })
  for (let i = 0; i < 20; i++) await dead.acquire(`orphan-${i}`)
  // The instance dies: its renewals stop.
  await dead.close()
  const others = [0, 1, 2].map(() => new PostgresTaskLeases(db, { ttlMs: 200, graceMs: 0, log }))
  t.teardown(() => Promise.all(others.map(o => o.close())))
  const claims: string[] = []
  await until(async () => {
    claims.push(...(await Promise.all(others.map(o => o.claimExpired()))).flat())
    return claims.length >= 20
  })
  t.equal(claims.length, 20, 'each claimed once')
  t.equal(new Set(claims).size, 20)
  t.same(await others[0].claimExpired(), [], 'the claim is a lease of its own')
  await others[0].release('orphan-0')
  t.equal(await expiry(db, 'orphan-0'), null, 'released once the task is settled')
})

t.test('a claim that is never released lapses and is claimed again', async t => {
  const db = await pool(t)
  const dead = new PostgresTaskLeases(db, { ttlMs: 100, graceMs: 0, log })
  await dead.acquire('orphan')
  await dead.close()
  const claimer = new PostgresTaskLeases(db, { ttlMs: 100, graceMs: 0, log })
  t.teardown(() => claimer.close())
  await until(async () => (await claimer.claimExpired()).length === 1)
  await until(async () => (await claimer.claimExpired()).includes('orphan'))
  t.ok(await expiry(db, 'orphan'), 'still leased, by the second claim')
})

t.test('hold renews a lease taken elsewhere; abandon stops renewing without giving it back', async t => {
  const db = await pool(t)
  const leases = new PostgresTaskLeases(db, { ttlMs: 150, graceMs: 0, log })
  t.teardown(() => leases.close())
  await db.query('INSERT INTO a2a_task_leases (task_id, expires_at) VALUES ($1, a2a_now_ms() + 150)', ['inserted'])
  leases.hold('inserted')
  await renewal(db, 'inserted')
  leases.abandon('inserted')
  t.equal(leases.held, 0)
  t.ok(await expiry(db, 'inserted'), 'the lease stays, to lapse')
  await until(async () => (await leases.claimExpired()).includes('inserted'))
})

t.test('a lease another instance claimed and settled is not taken back by a late renewal', async t => {
  const db = await pool(t)
  const slow = new PostgresTaskLeases(db, { ttlMs: 150, log })
  t.teardown(() => slow.close())
  await slow.acquire('task')
  await slow.acquire('other')
  await db.query('DELETE FROM a2a_task_leases WHERE task_id = $1', ['task'])
  await renewal(db, 'other')
  t.equal(await expiry(db, 'task'), null)
})

t.test('row 6: an expired lease is claimed only once a grace has passed since a round found it: an owner that renews meanwhile keeps it', async t => {
  const db = await pool(t)
  const owner = new PostgresTaskLeases(db, { ttlMs: 60_000, log })
  const claimer = new PostgresTaskLeases(db, { ttlMs: 60_000, graceMs: 100, log })
  t.teardown(async () => { await owner.close(); await claimer.close() })
  await owner.acquire('alive')
  await owner.acquire('dead')
  // Both leases lapsed while the database refused writes (here: set back by hand).
  await db.query('UPDATE a2a_task_leases SET expires_at = 1')
  t.same(await claimer.claimExpired(), [], 'the first round only doubts them')
  const doubted = await db.query('SELECT task_id FROM a2a_task_leases WHERE doubted_at IS NOT NULL ORDER BY task_id')
  t.same(doubted.rows.map(r => r.task_id), ['alive', 'dead'])
  t.ok((await expiry(db, 'dead') as number) > 1, 'each is leased for the grace, to its owner still')
  owner.abandon('dead')
  await owner.acquire('alive')
  const claimed: string[] = []
  await until(async () => {
    claimed.push(...await claimer.claimExpired())
    return claimed.length > 0
  })
  t.same(claimed, ['dead'], 'the lease left unrenewed past the grace is claimed; the renewed one is not')
  // A doubt older than two graces (the claim rounds stopped meanwhile) is a doubt again, not a claim.
  await db.query("UPDATE a2a_task_leases SET expires_at = 1, doubted_at = 1 WHERE task_id = 'alive'")
  t.same(await claimer.claimExpired(), [], 'an old doubt is renewed, not acted on')
})

t.test('row 6: a renewal the database refuses is retried until it lands, logged once each way; every call is StorageUnavailable meanwhile', async t => {
  const db = await pool(t)
  const lines: string[] = []
  const logged = { warn: (_o: unknown, msg: string) => lines.push(msg), info: (_o: unknown, msg: string) => lines.push(msg) }
  const leases = new PostgresTaskLeases(db, { ttlMs: 150, log: logged as any })
  t.teardown(() => leases.close())
  await leases.acquire('task')
  await db.query('ALTER TABLE a2a_task_leases RENAME TO a2a_task_leases_away')
  await until(() => lines.includes('task leases not renewed'))
  await t.rejects(leases.acquire('x'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE', message: 'Storage unavailable: postgres error 42P01' })
  await t.rejects(leases.release('x'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  await t.rejects(leases.claimExpired(), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  const refused = Number((await db.query('SELECT expires_at FROM a2a_task_leases_away')).rows[0].expires_at)
  await new Promise(resolve => setTimeout(resolve, 300))
  await db.query('ALTER TABLE a2a_task_leases_away RENAME TO a2a_task_leases')
  await until(() => lines.includes('task leases renewed again'))
  t.ok((await expiry(db, 'task') as number) > refused, 'renewed once the database takes writes')
  t.same(lines, ['task leases not renewed', 'task leases renewed again'], 'one line per outage, not one per retry')
})

t.test('the reaper over PostgreSQL fails the unfinished task of a dead instance, once', async t => {
  const db = await pool(t)
  const { TaskService } = await import('../../../services/tasks/task-service.js')
  const { PostgresTaskStore } = await import('../../../services/tasks/postgres-store.js')
  const { MemoryTaskEventBus } = await import('../../../services/tasks/event-bus.js')
  const { ANONYMOUS } = await import('../../../services/auth/principal.js')
  const store = new PostgresTaskStore(db, { ttlSeconds: 60 })
  const instance = (leases: PostgresTaskLeases, executor: () => Promise<void>) => new TaskService({
    store, bus: new MemoryTaskEventBus(), leases, executor, log, toolsFor: () => ({ available: () => [], call: async () => ({}) })
  })
  const deadLeases = new PostgresTaskLeases(db, { ttlMs: 200, graceMs: 0, log })
  const aliveLeases = new PostgresTaskLeases(db, { ttlMs: 200, graceMs: 0, log })
  t.teardown(async () => { await aliveLeases.close(); await store.close() })
  let started = 0
  const dead = instance(deadLeases, () => { started++; return new Promise<void>(() => {}) })
  const alive = instance(aliveLeases, async () => {})
  const orphan = await dead.create({ kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'text', text: 'orphan' }] }, ANONYMOUS)
  dead.dispatch(orphan, ANONYMOUS)
  await until(async () => started === 1 && (await expiry(db, orphan.task.id)) !== null)
  await deadLeases.close()
  const failed: string[] = []
  await until(async () => {
    failed.push(...await alive.reapOrphans())
    return failed.length > 0
  })
  t.same(failed, [orphan.task.id])
  t.equal((await alive.get(orphan.task.id, ANONYMOUS)).task.status.state, 'failed')
  t.equal(await expiry(db, orphan.task.id), null, 'its lease released')
  t.same(await alive.reapOrphans(), [], 'nothing is reaped twice')
})
