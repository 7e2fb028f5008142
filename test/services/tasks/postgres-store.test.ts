// PostgresTaskStore (services/tasks/postgres-store.ts) on a real PostgreSQL: the shared store contract, each case on
// a database of its own, migrated; then what the contract leaves to each backend.
import pg from 'pg'
import t from 'tap'
import { connectOnce } from '../../../services/postgres/connect.js'
import { migrate } from '../../../services/postgres/migrate.js'
import { PostgresTaskStore, type PostgresTaskStoreOptions } from '../../../services/tasks/postgres-store.js'
import { migratedSchema, testDatabase, until, type Teardown } from '../../helper.js'
import { moved, record, storeContract } from './store-contract.js'

// One database for the file, and a migrated schema of its own for each case (test/backends.ts `migratedSchema`).
const databaseUrl = testDatabase(t)
const database = async (t: Teardown): Promise<pg.Pool> => await migratedSchema(t, await databaseUrl)

async function storeOn (t: Teardown, opts: Partial<PostgresTaskStoreOptions> = {}): Promise<{ store: PostgresTaskStore, pool: pg.Pool }> {
  const pool = await database(t)
  const store = new PostgresTaskStore(pool, { ttlSeconds: 3600, ...opts })
  t.teardown(() => store.close())
  return { store, pool }
}

storeContract(t, 'postgres', async (t, { ttlSeconds, clock, maxEvents }) => {
  const { store, pool } = await storeOn(t, { ttlSeconds, now: clock.now, replay: { maxEvents, ttlSeconds: 300 } })
  return {
    store,
    // The terminal ones among `ids` have an expiry within the TTL; it is brought to now.
    async expire (ids) {
      const { rows } = await pool.query('UPDATE a2a_tasks SET expires_at = $2 WHERE id = ANY($1) AND expires_at IS NOT NULL RETURNING id, expires_at', [ids, clock.now()])
      for (const row of rows) t.ok(Number(row.expires_at) <= clock.now() + ttlSeconds * 1000, `${row.id} expires within the TTL`)
    }
  }
}, { rejectsDuplicateIds: true })

// As several instances use it: each write announced, and leases taken and dropped with the writes.
storeContract(t, 'postgres, announcing, with leases', async (t, { ttlSeconds, clock, maxEvents }) => {
  const { store, pool } = await storeOn(t, {
    ttlSeconds,
    now: clock.now,
    replay: { maxEvents, ttlSeconds: 300 },
    leaseTtlMs: 30_000,
    announcer: { notice: (taskId, version) => `test e ${version} ${taskId}` }
  })
  return {
    store,
    async expire (ids) {
      await pool.query('UPDATE a2a_tasks SET expires_at = $2 WHERE id = ANY($1) AND expires_at IS NOT NULL', [ids, clock.now()])
    }
  }
}, { rejectsDuplicateIds: true })

t.test('insert refuses a task past the owner\'s live cap; a terminal one, or one after another ends, is stored', async t => {
  const { store } = await storeOn(t, { maxLivePerOwner: 2 })
  await store.insert(record('a', 1))
  await store.insert(record('b', 2))
  await t.rejects(store.insert(record('c', 3)), { code: 'A2A_ERR_LIVE_TASK_LIMIT' })
  await store.insert(record('done', 3, { state: 'completed' }))
  await store.insert(record('other', 3, { owner: 'bob' }))
  const a = (await store.get('a')) as NonNullable<Awaited<ReturnType<typeof store.get>>>
  t.equal(await store.replace({ ...a, task: { ...a.task, status: { ...a.task.status, state: 'completed' } }, version: 2 }), true)
  await store.insert(record('c', 4))
  t.ok(await store.get('c'), 'the place freed is taken')
})

t.test('concurrent inserts at the cap: exactly as many land as there are places', async t => {
  const { store } = await storeOn(t, { maxLivePerOwner: 5 })
  const results = await Promise.allSettled(Array.from({ length: 12 }, async (_, i) => await store.insert(record(`t${i}`, i))))
  t.equal(results.filter(r => r.status === 'fulfilled').length, 5)
})

t.test('a store that cannot reach its server throws StorageUnavailable with a short reason, not the query', async t => {
  const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 2000 })
  t.teardown(() => pool.end())
  const store = new PostgresTaskStore(pool, { ttlSeconds: 60 })
  await t.rejects(store.get('x'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE', message: 'Storage unavailable: postgres unreachable' })
  await t.rejects(store.ping(), { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
})

t.test('deleteExpired removes terminal tasks past their TTL with their events, and nothing else', async t => {
  let now = 1_000_000
  const { store, pool } = await storeOn(t, { ttlSeconds: 10, now: () => now })
  await store.insert(record('live', now))
  await store.insert(record('done', now, { state: 'completed' }))
  t.equal(await store.deleteExpired(), 0, 'nothing is past its TTL yet')
  now += 10_001
  t.equal(await store.deleteExpired(), 1)
  t.same((await pool.query('SELECT id FROM a2a_tasks')).rows, [{ id: 'live' }])
})

t.test('deleteExpired also deletes the claims of idempotent sends whose window has closed, and no other', async t => {
  let now = 1_000_000
  const { store, pool } = await storeOn(t, { ttlSeconds: 10, now: () => now })
  const claim = (messageId: string) => ({ owner: 'alice', messageId, taskId: `t-${messageId}`, hash: 'h', at: now })
  t.equal(await store.claimSend(claim('short'), 1000), null)
  t.equal(await store.claimSend(claim('long'), 60_000), null)
  now += 1000
  await store.deleteExpired()
  t.same((await pool.query('SELECT message_id, task_id, claimed_at FROM a2a_send_claims')).rows, [{ message_id: 'long', task_id: 't-long', claimed_at: '1000000' }])
})

t.test('a statement held past statement_timeout, and an error of the server, are StorageUnavailable with a short reason', async t => {
  const url = await testDatabase(t)
  const client = await connectOnce(url)
  t.teardown(() => client.end())
  await migrate(client)
  const pool = new pg.Pool({ connectionString: url, max: 2, statement_timeout: 200 })
  pool.on('error', () => {})
  t.teardown(() => pool.end())
  const store = new PostgresTaskStore(pool, { ttlSeconds: 60 })
  await client.query('BEGIN')
  await client.query('LOCK TABLE a2a_tasks IN ACCESS EXCLUSIVE MODE')
  await t.rejects(store.get('x'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE', message: 'Storage unavailable: postgres statement timed out' })
  await client.query('ROLLBACK')
  await client.query('DROP TABLE a2a_task_events')
  await t.rejects(store.eventsAfter('x', 0), { message: 'Storage unavailable: postgres error 42P01' })
})

t.test('list pages through a where that refuses most tasks, a batch at a time; it lists one owner at a time', async t => {
  const { store } = await storeOn(t, { listBatchSize: 2 })
  for (let i = 0; i < 9; i++) await store.insert(record(`t${i}`, i))
  const even = (task: { id: string }) => Number(task.id.slice(1)) % 4 === 0
  const first = await store.list({ owner: 'alice', pageSize: 2, where: even })
  t.same(first.tasks.map(r => r.task.id), ['t8', 't4'])
  const second = await store.list({ owner: 'alice', pageSize: 2, where: even, pageToken: first.nextPageToken })
  t.same([second.tasks.map(r => r.task.id), second.nextPageToken], [['t0'], ''])
  await t.rejects(store.list({ pageSize: 1 }), TypeError)
})

t.test('interrupted tasks last updated at the same moment are handed out in the order they were stored', async t => {
  const { store } = await storeOn(t)
  for (const id of ['b', 'a', 'c']) await store.insert(record(id, 5, { state: 'input_required' }))
  t.same(await store.claimInterrupted(5), ['b', 'a', 'c'])
})

t.test('with leases, an insert takes the lease of an unfinished task, and the write that ends it drops it', async t => {
  const { store, pool } = await storeOn(t, { leaseTtlMs: 30_000 })
  t.equal(store.leasesOnInsert, true)
  const leased = async (): Promise<string[]> => (await pool.query('SELECT task_id FROM a2a_task_leases ORDER BY task_id')).rows.map(r => r.task_id)
  const running = record('running', Date.now())
  await store.insert(running)
  await store.insert(record('unleased', Date.now()), { lease: false })
  await store.insert(record('done', Date.now(), { state: 'completed' }))
  t.same(await leased(), ['running'], 'only the unfinished task stored with its lease')
  const working = moved(running, 'in_progress')
  t.equal(await store.replace(working), true)
  t.same(await leased(), ['running'], 'kept while it runs')
  t.equal(await store.replace(moved(working, 'completed')), true)
  t.same(await leased(), [], 'dropped by the write that ended it')
})

t.test('announcing, a task keeps events for the other instances, but a resumed stream is served max_events only', async t => {
  const notices: string[] = []
  const { store, pool } = await storeOn(t, { replay: { maxEvents: 2, ttlSeconds: 300 }, announcer: { notice: (id, version) => { notices.push(`${id} ${version}`); return 'n' } } })
  t.equal(store.announces, true)
  let current = record('t', Date.now())
  await store.insert(current)
  for (const state of ['in_progress', 'input_required', 'in_progress', 'completed'] as const) {
    current = moved(current, state)
    t.equal(await store.replace(current, { type: 'status', version: current.version, task: current.task, final: false }), true)
  }
  t.same(notices, ['t 2', 't 3', 't 4', 't 5'], 'a notice per write with its event')
  t.equal(await store.eventsAfter('t', 1), null, 'four events after version 1: more than max_events')
  t.same((await store.eventsAfter('t', 3))?.map(e => e.version), [4, 5])
  const since = await store.since('t', 1)
  t.same(since?.kept.map(e => e.version), [2, 3, 4, 5], 'the listeners read every one kept')
  t.same([since?.record.version, since?.lastEvent], [5, 5])
  t.equal(await store.since('missing', 0), null)
  // What reaches the channel: a write that does not land sends nothing.
  const listener = await connectOnce(await databaseUrl)
  t.teardown(() => listener.end())
  const heard: string[] = []
  listener.on('notification', message => heard.push(message.payload ?? ''))
  await listener.query('LISTEN a2a_events')
  t.equal(await store.replace({ ...current, version: 9 }, { type: 'status', version: 9, task: current.task, final: true }), false)
  await pool.query("SELECT pg_notify('a2a_events', 'end')")
  await until(() => heard.length > 0)
  t.same(heard, ['end'])
})
