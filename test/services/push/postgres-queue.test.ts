// PostgresDeliveryQueue and PostgresPushOutbox (services/push/postgres-queue.ts) on a real PostgreSQL, each case in a
// migrated schema of its own, with a real webhook receiver: order, retries, claims that lapse, the outbox's relay.
import type pg from 'pg'
import t from 'tap'
import { MemoryPushConfigStore } from '../../../services/push/memory-store.js'
import { PostgresDeliveryQueue, PostgresPushOutbox } from '../../../services/push/postgres-queue.js'
import type { PushConfigStore } from '../../../services/push/store.js'
import { migratedSchema, receiver, testDatabase, until, type Teardown } from '../../helper.js'
import { queueNotifier, record } from './queue-notifier.js'

const databaseUrl = testDatabase(t)

/** A notifier whose deliveries go through a queue on `pool`, as the plugin wires them, with the outbox. */
function durable (t: Teardown, pool: pg.Pool, store: PushConfigStore, lockMs = 30_000) {
  const { notifier, logs, log } = queueNotifier(store, 2)
  const queue = new PostgresDeliveryQueue({ pool, notifier, store, concurrency: 2, lockMs, log })
  const outbox = new PostgresPushOutbox(pool, { graceMs: 0, log })
  notifier.useQueue(queue, outbox)
  t.teardown(() => notifier.close(0))
  return { notifier, queue, outbox, logs }
}

async function rows (pool: pg.Pool): Promise<any[]> {
  return (await pool.query('SELECT task_id, version, config_id, attempts FROM a2a_push_deliveries ORDER BY id')).rows
}

t.test('deliveries are made in order per config, once each though a state is queued twice, with a stable webhook-id', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: `${hook.url}/a` }, { maxPerTask: 10 })
  await store.put('task-1', { id: 'b', url: `${hook.url}/b` }, { maxPerTask: 10 })
  const { notifier } = durable(t, pool, store)
  notifier.notify(record('in_progress', 2))
  notifier.notify(record('in_progress', 2))
  notifier.notify(record('completed', 3))
  await until(() => hook.received.length >= 4)
  await until(async () => await notifier.backlog() === 0)
  t.equal(hook.received.length, 4)
  for (const path of ['/a', '/b']) {
    const mine = hook.received.filter(r => r.path === path)
    t.same(mine.map(r => r.body.status.state), ['in_progress', 'completed'], `in order to ${path}`)
  }
  t.match(hook.received[0].headers['webhook-id'], /^msg_task-1\.2\./)
  t.same(await rows(pool), [], 'every row settled')
})

t.test('a failed attempt is retried on the schedule with the same webhook-id; a final failure is dropped', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const hook = await receiver(t)
  hook.script(503, async () => ({ status: 429, headers: { 'retry-after': '0' } }), 200, 400)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: `${hook.url}/retry` }, { maxPerTask: 10 })
  const { notifier, logs } = durable(t, pool, store)
  notifier.notify(record('in_progress', 2))
  notifier.notify(record('completed', 3))
  await until(() => hook.received.length >= 4)
  await until(async () => await notifier.backlog() === 0)
  const ids = hook.received.map(r => r.headers['webhook-id'])
  t.same(ids.slice(0, 3), [ids[0], ids[0], ids[0]], 'every attempt of one delivery carries its webhook-id')
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'in_progress', 'in_progress', 'completed'], 'the next state after the first settled')
  t.match(logs.lines().filter(l => l.msg === 'webhook delivery failed, will retry'), [{ attempt: 1, status: 503 }, { attempt: 2, status: 429 }])
  t.match(logs.lines().find(l => l.msg === 'webhook delivery failed'), { attempt: 1, status: 400 })
  t.same(await rows(pool), [])
})

t.test('a delivery whose push config was deleted before its turn is dropped', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  const { config } = await store.put('task-1', { url: `${hook.url}/gone` }, { maxPerTask: 10 })
  const { queue, logs } = durable(t, pool, store)
  await store.remove('task-1', config.id)
  await queue.add('task-1', 2, 'in_progress', () => '{}', [config])
  await until(async () => await queue.pending() === 0)
  t.ok(logs.lines().some(l => l.msg === 'push config gone: delivery dropped'))
  t.equal(hook.received.length, 0)
})

t.test('a claim whose claimer died lapses, and the delivery is made by another queue, its attempt counted', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  const { config } = await store.put('task-1', { url: `${hook.url}/late` }, { maxPerTask: 10 })
  // A queue closed while it claims: what it claimed is left locked, as a dead instance leaves it.
  const dead = durable(t, pool, store, 300)
  await dead.queue.close(0)
  await pool.query(`INSERT INTO a2a_push_deliveries (task_id, version, config_id, state, body, webhook_id, due_at, attempts, locked_until)
    VALUES ('task-1', 2, $1, 'completed', '{"id":"task-1"}', 'msg_x', 0, 1, a2a_now_ms() + 300)`, [config.id])
  t.same(await rows(pool), [{ task_id: 'task-1', version: 2, config_id: config.id, attempts: 1 }])
  durable(t, pool, store)
  await until(() => hook.received.length === 1)
  t.equal(hook.received[0].headers['webhook-id'], 'msg_x')
  await until(async () => (await rows(pool)).length === 0)
})

t.test('a queue closed while its claim is under way attempts nothing it claimed: another instance will', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  const { config } = await store.put('task-1', { url: `${hook.url}/never` }, { maxPerTask: 10 })
  await pool.query(`INSERT INTO a2a_push_deliveries (task_id, version, config_id, state, body, webhook_id, due_at)
    VALUES ('task-1', 2, $1, 'completed', '{}', 'msg_y', 0)`, [config.id])
  // Its constructor claims at once; close comes before the answer.
  const { queue } = durable(t, pool, store)
  await queue.close(0)
  await until(async () => (await rows(pool))[0].attempts === 1)
  await new Promise(resolve => setTimeout(resolve, 100))
  t.equal(hook.received.length, 0, 'not attempted')
})

t.test('the outbox: a change whose writer died is claimed by the relay after its grace, queued, delivered, acknowledged', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: `${hook.url}/relay` }, { maxPerTask: 10 })
  await store.put('task-2', { url: `${hook.url}/none` }, { maxPerTask: 10 })
  await store.remove('task-2', 'default')
  for (const r of [record('completed', 3), record('in_progress', 2), record('completed', 2, 'task-2')]) {
    await pool.query('INSERT INTO a2a_push_outbox (task_id, version, record, due_at) VALUES ($1, $2, $3, 0)', [r.task.id, r.version, JSON.stringify(r)])
  }
  const { notifier } = durable(t, pool, store)
  t.equal(await notifier.relay(), 3, 'three entries claimed')
  await until(() => hook.received.length === 2)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'completed'], 'in version order')
  await until(async () => (await pool.query('SELECT 1 FROM a2a_push_outbox')).rowCount === 0)
  t.equal(await notifier.relay(), 0, 'nothing left: the one whose configs were removed was acknowledged too')
})

t.test('a database that refuses: claims are logged once and tried again, an acknowledgment is logged, an attempt left locked', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const store = new MemoryPushConfigStore()
  const { queue, outbox, logs } = durable(t, pool, store)
  await pool.query('ALTER TABLE a2a_push_deliveries RENAME TO a2a_push_deliveries_away')
  await pool.query('ALTER TABLE a2a_push_outbox RENAME TO a2a_push_outbox_away')
  await outbox.ack('task-1', 2)
  await t.rejects(queue.pending(), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  await until(() => logs.lines().some(l => l.msg === 'webhook deliveries not claimed'), 1000)
  await pool.query('ALTER TABLE a2a_push_deliveries_away RENAME TO a2a_push_deliveries')
  await until(() => logs.lines().some(l => l.msg === 'webhook deliveries claimed again'), 1000)
  t.equal(logs.lines().filter(l => l.msg === 'webhook deliveries not claimed').length, 1, 'logged once while it lasted')
  t.ok(logs.lines().some(l => l.msg === 'outbox entry not acknowledged'))
  await queue.close(0)

  // An attempt whose row cannot be settled (the store of configs fails) is logged, its row left claimed.
  const failing: PushConfigStore = Object.assign(Object.create(store), { get: async () => { throw new Error('config store down') } })
  const other = durable(t, pool, failing)
  await other.queue.add('task-9', 2, 'completed', () => '{}', [{ id: 'default', url: 'http://127.0.0.1:9/' }])
  await until(() => other.logs.lines().some(l => l.msg === 'webhook delivery not settled'))
  t.same((await rows(pool)).map(r => r.attempts), [1], 'still there, claimed once')
})

t.test('an attempt still in flight when close has waited its time is left to another instance, its row still there', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  let answer: () => void = () => {}
  const answered = new Promise<{ status: number }>(resolve => { answer = () => resolve({ status: 200 }) })
  const hook = await receiver(t)
  hook.script(async () => await answered)
  t.teardown(() => answer())
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: `${hook.url}/slow` }, { maxPerTask: 10 })
  const { notifier, logs } = durable(t, pool, store)
  notifier.notify(record('completed', 2))
  await until(() => hook.received.length === 1)
  await notifier.close(100)
  t.match(logs.lines().find(l => l.msg === 'webhook deliveries still in flight at close: left to another worker'), { level: 40, inFlight: 1 })
  t.same((await rows(pool)).map(r => r.attempts), [1], 'not settled: claimed, for another instance once its lock lapses')
})
