// PostgresPushConfigStore (services/push/postgres-store.ts) on a real PostgreSQL: the shared push store contract,
// each case in a migrated schema of its own, plain and sealed; then what the contract leaves to each backend:
// expiry, sealing at rest and key rotation, and the failures.
import pg from 'pg'
import t from 'tap'
import { PostgresPushConfigStore } from '../../../services/push/postgres-store.js'
import { Sealing, isSealingKey } from '../../../services/push/sealing.js'
import { migratedSchema, testDatabase, type Teardown } from '../../helper.js'
import { pushStoreContract } from './store-contract.js'

const databaseUrl = testDatabase(t)
const KEY = Buffer.alloc(32, 7).toString('base64')
const OLD_KEY = Buffer.alloc(32, 3).toString('base64')
const OPTS = { maxPerTask: 10 }

async function storeOn (t: Teardown, opts: ConstructorParameters<typeof PostgresPushConfigStore>[1] = {}) {
  const pool = await migratedSchema(t, await databaseUrl)
  return { store: new PostgresPushConfigStore(pool, opts), pool }
}

pushStoreContract(t, 'postgres', async () => {
  const cleanups: Array<() => unknown> = []
  const { store } = await storeOn({ teardown: fn => cleanups.push(fn) })
  return { store, cleanup: async () => { for (const fn of cleanups.reverse()) await fn() } }
})

pushStoreContract(t, 'postgres, sealed', async () => {
  const cleanups: Array<() => unknown> = []
  const { store } = await storeOn({ teardown: fn => cleanups.push(fn) }, { sealing: new Sealing(KEY) })
  return { store, cleanup: async () => { for (const fn of cleanups.reverse()) await fn() } }
})

t.test('a task\'s configs expire ttlSeconds after its last put, and deleteExpired removes them', async t => {
  let now = 1_000_000
  const { store, pool } = await storeOn(t, { now: () => now })
  await store.put('t1', { url: 'https://hooks.example.com/1' }, { ...OPTS, ttlSeconds: 10 })
  now += 5_000
  await store.put('t1', { url: 'https://hooks.example.com/2' }, { ...OPTS, ttlSeconds: 10 })
  await store.put('t2', { url: 'https://hooks.example.com/kept' }, OPTS)
  now += 9_000
  t.equal((await store.list('t1')).length, 2, 'the second put moved the expiry of both')
  t.equal(await store.deleteExpired(), 0)
  now += 1_001
  t.same([await store.list('t1'), await store.latest('t1'), await store.get('t1', 'default'), await store.remove('t1', 'default')], [[], null, null, false], 'gone for every read')
  t.equal(await store.deleteExpired(), 2, 'and deleted')
  t.same((await pool.query('SELECT task_id FROM a2a_push_configs')).rows, [{ task_id: 't2' }], 'a config put without a ttl stays')
  // A put on a task whose configs expired starts it afresh: the first id-less one is default again.
  await pool.query('UPDATE a2a_push_configs SET expires_at = 1')
  t.same(await store.put('t2', { url: 'https://hooks.example.com/new' }, OPTS), { config: { id: 'default', url: 'https://hooks.example.com/new' }, created: true })
})

t.test('sealed: token and credentials are not in the table; a rotated key still opens what the old one sealed', async t => {
  const { store: old, pool } = await storeOn(t, { sealing: new Sealing(OLD_KEY) })
  const secret = { url: 'https://hooks.example.com/s', token: 'tok-secret', authentication: { schemes: ['Bearer'], credentials: 'cred-secret' } }
  await old.put('t1', secret, OPTS)
  const { rows } = await pool.query('SELECT url, record FROM a2a_push_configs')
  t.equal(rows[0].url, secret.url, 'the url is in the clear')
  t.notMatch(rows[0].record, /secret|Bearer/, 'the rest is not')
  t.match(rows[0].record, /^[0-9a-f]{8}:[A-Za-z0-9+/=]+$/)

  // The key rotated: the old one listed as previous. New writes use the new key; both open.
  const rotated = new PostgresPushConfigStore(pool, { sealing: new Sealing(KEY, [OLD_KEY]) })
  t.same(await rotated.get('t1', 'default'), { id: 'default', ...secret })
  await rotated.put('t1', { url: 'https://hooks.example.com/n', token: 'new-secret' }, OPTS)
  const ids = (await pool.query('SELECT substr(record, 1, 8) AS key FROM a2a_push_configs ORDER BY created')).rows.map(r => r.key)
  t.not(ids[0], ids[1], 'sealed with two keys')
  t.same((await rotated.list('t1')).map(c => c.token), ['tok-secret', 'new-secret'])

  // Without the old key: a read fails as storage, naming no secret; a plain store reads sealed values as nothing it can open.
  const forgot = new PostgresPushConfigStore(pool, { sealing: new Sealing(KEY) })
  await t.rejects(forgot.get('t1', 'default'), { code: 'A2A_ERR_STORAGE_UNAVAILABLE', message: 'Storage unavailable: push config sealed with a key this server does not have' })
  await pool.query("UPDATE a2a_push_configs SET record = substr(record, 1, 20) || 'AAAA' || substr(record, 25) WHERE id = 'default'")
  await t.rejects(rotated.get('t1', 'default'), { message: 'Storage unavailable: push config does not open with its key' }, 'a tampered value')
  // Configs written before a key was set are read as they are.
  await pool.query("INSERT INTO a2a_push_configs (task_id, id, created, touched, url, record) VALUES ('t9', 'default', 0, 0, 'https://x.example/', '{\"url\":\"https://x.example/\"}')")
  t.same(await rotated.latest('t9'), { id: 'default', url: 'https://x.example/' })
})

t.test('keys: 32 bytes in base64', async t => {
  t.ok(isSealingKey(KEY))
  t.notOk(isSealingKey(Buffer.alloc(16).toString('base64')), '16 bytes')
  t.notOk(isSealingKey('not a key at all, not a key at all, not a key'))
})

t.test('the database refusing: every method is StorageUnavailable with a short reason', async t => {
  const pool = new pg.Pool({ connectionString: 'postgres://a2a@127.0.0.1:1/a2a', connectionTimeoutMillis: 2000 })
  t.teardown(() => pool.end())
  const store = new PostgresPushConfigStore(pool)
  for (const call of [store.put('t', { url: 'https://x.example/' }, OPTS), store.get('t', 'x'), store.ping()] as Array<Promise<unknown>>) {
    await t.rejects(call, { code: 'A2A_ERR_STORAGE_UNAVAILABLE', message: 'Storage unavailable: postgres unreachable' })
  }
  const { store: missing, pool: schemaPool } = await storeOn(t)
  await schemaPool.query('DROP TABLE a2a_push_configs')
  await t.rejects(missing.list('t'), { message: 'Storage unavailable: postgres error 42P01' })
  await missing.close()
})
