// Nothing lost on PostgreSQL alone when an instance dies: real `serve` processes killed with SIGKILL mid-load, and
// what a dead instance leaves in the database (written through the same stores) taken over by a live one. Each test
// has a schema of its own in the file's database.
import pg from 'pg'
import t, { type Test } from 'tap'
import { connectOnce } from '../services/postgres/connect.js'
import { migrate } from '../services/postgres/migrate.js'
import { PostgresPushConfigStore } from '../services/push/postgres-store.js'
import { PostgresTaskStore } from '../services/tasks/postgres-store.js'
import { crashInstance, killAtAnyPoint, storedTask } from './crash-scenarios.js'
import { build, call, postgresSchema, receiver, testDatabase, until } from './helper.js'

const database = testDatabase(t)

t.test('kill -9 at any point: every task ends terminal and every stored state change is delivered at least once', async t => {
  const url = await postgresSchema(t, await database)
  await killAtAnyPoint(t, async () => await crashInstance(t, 'postgres', `  postgres:\n    url: "${url}"`))
})

/** A migrated schema, and what a dead instance left in it: the writes it made, through the same stores. */
async function deadInstance (t: Test) {
  const url = await postgresSchema(t, await database)
  const client = await connectOnce(url)
  await migrate(client)
  await client.end()
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  t.teardown(() => pool.end())
  const tasks = new PostgresTaskStore(pool, { ttlSeconds: 3600, leaseTtlMs: 500, pushOutbox: true })
  const push = new PostgresPushConfigStore(pool)
  return { url, pool, tasks, push }
}

const onPostgres = (url: string, push: Record<string, unknown> = {}) => ({
  services: { postgres: { url } },
  tasks: { backend: 'postgres' as const, lease_ttl: 0.5 },
  push_notifications: { backend: 'postgres' as const, config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.1 }, ...push },
  server: { shutdown_timeout: 0.5 }
})

t.test('a state change whose writer died before queueing its webhooks is delivered by another instance', async t => {
  const hook = await receiver(t)
  const dead = await deadInstance(t)
  await dead.push.put('t-1', { url: `${hook.url}/hook` }, { maxPerTask: 10 })
  await dead.tasks.insert(storedTask('t-1', 'submitted', 1))
  t.equal(await dead.tasks.replace(storedTask('t-1', 'in_progress', 2)), 'outbox', 'the store says the task had push configs')
  t.equal(await dead.tasks.replace(storedTask('t-1', 'in_progress', 3)), true, 'a write that keeps the state records nothing')
  t.same((await dead.pool.query('SELECT task_id, version FROM a2a_push_outbox')).rows, [{ task_id: 't-1', version: 2 }], 'the change is in the outbox, written with it')
  // The writer dies here: its deliveries were never queued. Another instance relays them.
  const app = await build(t, { config: onPostgres(dead.url) })
  await until(() => hook.received.some(r => r.body?.status?.state === 'in_progress'), 1000)
  // The task had no run: its lease (taken with the insert) lapses and the reaper fails it; that change is delivered too.
  await until(() => hook.received.some(r => r.body?.status?.state === 'failed'), 1000)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'failed'], 'each state once, in order')
  t.equal((await call(app, 'tasks/get', { id: 't-1' })).body.result.status.state, 'failed')
  await until(async () => (await dead.pool.query('SELECT 1 FROM a2a_push_outbox')).rowCount === 0)
  await until(async () => await app.a2aNotifier.backlog() === 0)
  t.same((await dead.pool.query('SELECT task_id FROM a2a_task_leases')).rows, [], 'no lease left')
})

t.test('a task stored by an instance that died before starting it is failed by the reaper, never stuck in submitted', async t => {
  const dead = await deadInstance(t)
  await dead.tasks.insert(storedTask('t-2', 'submitted', 1))
  t.equal((await dead.pool.query('SELECT task_id FROM a2a_task_leases')).rowCount, 1, 'the insert took the lease')
  const app = await build(t, { config: onPostgres(dead.url) })
  await until(async () => (await call(app, 'tasks/get', { id: 't-2' })).body.result.status.state === 'failed', 1000)
  t.equal((await dead.pool.query('SELECT task_id FROM a2a_task_leases')).rowCount, 0, 'and its lease is gone')
})

t.test('with push notifications off, postgres task writes do not look for push configs', async t => {
  const dead = await deadInstance(t)
  const off = await build(t, { config: { ...onPostgres(dead.url), push_notifications: { enabled: false } } })
  t.equal(off.a2aTasks.store.recordsPush, false)
  const on = await build(t, { config: onPostgres(dead.url) })
  t.equal(on.a2aTasks.store.recordsPush, true)
})
