// The PostgreSQL schema's migrations (services/postgres/migrate.ts) on a real server, each test in a database of its
// own (test/helper.ts `testDatabase`).
import pg from 'pg'
import t from 'tap'
import { connectOnce, connectProblem, describeUrl } from '../../../services/postgres/connect.js'
import { checkSchema, migrate } from '../../../services/postgres/migrate.js'
import { MIGRATIONS, SCHEMA_VERSION, type Migration } from '../../../services/postgres/migrations.js'
import { testDatabase, type Teardown } from '../../helper.js'

/** A connection to a fresh database, closed at teardown. */
async function fresh (t: Teardown): Promise<{ url: string, client: pg.Client }> {
  const url = await testDatabase(t)
  const client = await connectOnce(url)
  t.teardown(() => client.end())
  return { url, client }
}

const tables = async (client: pg.Client): Promise<string[]> =>
  (await client.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")).rows.map(r => r.tablename)

const recorded = async (client: pg.Client): Promise<Array<{ version: number, name: string }>> =>
  (await client.query('SELECT version, name FROM a2a_schema_migrations ORDER BY version')).rows

/**
 * Rows a database at each version holds, in the tables that version made, written before the next migration is
 * applied to it. A new migration adds its own: the test below fails without them.
 */
const DATA_AT: Readonly<Record<number, string>> = {
  1: `INSERT INTO a2a_tasks (id, owner, context_id, state, version, created_at, updated_at, record)
      VALUES ('t-1', 'alice', 'c-1', 'completed', 2, 1, 2, '{"task":{}}');
      INSERT INTO a2a_task_events (task_id, version, prev, body) VALUES ('t-1', 2, 1, '{}')`,
  2: `INSERT INTO a2a_push_configs (task_id, id, created, touched, url, record)
      VALUES ('t-1', 'default', nextval('a2a_push_config_seq'), nextval('a2a_push_config_seq'), 'https://hooks.example.com/', '{}')`,
  3: "INSERT INTO a2a_task_leases (task_id, expires_at) VALUES ('t-1', a2a_now_ms() + 30000)",
  4: "SELECT a2a_replace_task('t-1', 3, 'c-1', 'completed', 3, 4, '{\"task\":{}}', '{}', 10, 'written')",
  5: `INSERT INTO a2a_push_outbox (task_id, version, record, due_at) VALUES ('t-1', 3, '{}', 1);
      INSERT INTO a2a_push_deliveries (task_id, version, config_id, state, body, webhook_id, due_at)
      VALUES ('t-1', 3, 'default', 'completed', '{}', 'msg_1', 1)`,
  6: "SELECT a2a_insert_task('t-2', 'alice', 'c-1', 'working', 1, 1, 1, NULL, '{}', 5, '{}'::integer[], '{}'::text[], 10, 30000)",
  7: `INSERT INTO a2a_push_deliveries (task_id, version, config_id, state, body, webhook_id, due_at, trace)
      VALUES ('t-2', 1, 'default', 'working', '{}', 'msg_2', 1, '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}')`,
  8: "SELECT a2a_claim_send('alice', 'm-1', 't-2', 'h', 1, 1, 600000, NULL, NULL, NULL)"
}

t.test('on an empty database every migration is applied once, in order, and recorded; run again, none is', async t => {
  const { client } = await fresh(t)
  const first = await migrate(client)
  t.same({ from: first.from, to: first.to }, { from: 0, to: SCHEMA_VERSION })
  t.same(first.applied.map(m => m.version), MIGRATIONS.map(m => m.version))
  t.same(await recorded(client), MIGRATIONS.map(({ version, name }) => ({ version, name })))
  t.ok((await tables(client)).includes('a2a_tasks'), 'the tasks table is there')
  const again = await migrate(client)
  t.same(again, { from: SCHEMA_VERSION, to: SCHEMA_VERSION, applied: [] }, 'nothing more to apply')
  t.equal(await checkSchema(client), SCHEMA_VERSION, 'the schema is the one the code needs')
})

t.test('a dry run says what it would apply, and applies nothing', async t => {
  const { client } = await fresh(t)
  const dry = await migrate(client, { dryRun: true })
  t.same({ from: dry.from, to: dry.to, applied: dry.applied.map(m => m.version) }, { from: 0, to: 0, applied: MIGRATIONS.map(m => m.version) })
  t.same(await tables(client), [], 'not even the record table')
})

t.test('five instances migrating at once apply each migration once: they take turns on the lock', async t => {
  const { url, client } = await fresh(t)
  const clients = await Promise.all(Array.from({ length: 5 }, async () => await connectOnce(url)))
  t.teardown(() => Promise.all(clients.map(c => c.end())))
  const results = await Promise.all(clients.map(async c => await migrate(c)))
  t.same(results.map(r => r.applied.length).sort(), [0, 0, 0, 0, MIGRATIONS.length], 'one applied them all, the others none')
  t.same((await recorded(client)).map(r => r.version), MIGRATIONS.map(m => m.version))
})

t.test('each migration applies to a database holding data of the version before, and keeps it', async t => {
  for (const migration of MIGRATIONS) {
    const { client } = await fresh(t)
    // The database as each version before left it, with rows of each.
    const before = MIGRATIONS.filter(m => m.version < migration.version)
    for (const previous of before) {
      await migrate(client, { migrations: MIGRATIONS.filter(m => m.version <= previous.version) })
      await client.query(DATA_AT[previous.version])
    }
    const { applied } = await migrate(client, { migrations: MIGRATIONS.filter(m => m.version <= migration.version) })
    t.same(applied.map(m => m.version), [migration.version], `migration ${migration.version} applied`)
    if (before.length > 0) t.ok((await client.query('SELECT 1 FROM a2a_tasks')).rowCount, 'the rows of the versions before are kept')
    await client.query(DATA_AT[migration.version])
  }
})

t.test('a database at a newer schema is refused by migrate and checkSchema; an older one by checkSchema', async t => {
  const { client } = await fresh(t)
  t.equal(await codeOf(checkSchema(client)), 'A2A_ERR_SCHEMA', 'an empty database is older')
  await t.rejects(checkSchema(client), /schema is at version 0, older than this fastify-a2a needs \(\d+\): run "fastify-a2a migrate"/)
  const later: Migration = { version: SCHEMA_VERSION + 1, name: 'later', sql: 'CREATE TABLE later (x int)' }
  await migrate(client, { migrations: [...MIGRATIONS, later] })
  await t.rejects(migrate(client), { code: 'A2A_ERR_SCHEMA', message: `the database's schema is at version ${SCHEMA_VERSION + 1}, newer than this fastify-a2a knows (${SCHEMA_VERSION}): run the fastify-a2a that migrated it, or a later one` })
  await t.rejects(checkSchema(client), { code: 'A2A_ERR_SCHEMA' })
  // The lock was given back each time: another session takes it at once.
  t.same((await client.query('SELECT pg_try_advisory_lock(6967303456004892013) AS took')).rows, [{ took: true }])
})

t.test('a migration that fails leaves nothing of itself, and says which it was', async t => {
  const { client } = await fresh(t)
  const broken: Migration[] = [
    { version: 1, name: 'good', sql: 'CREATE TABLE good (x int)' },
    { version: 2, name: 'broken', sql: 'CREATE TABLE half (x int); SELECT * FROM no_such_table' }
  ]
  await t.rejects(migrate(client, { migrations: broken }), /^migration 2 \(broken\) failed, nothing of it applied: relation "no_such_table" does not exist$/)
  t.same(await recorded(client), [{ version: 1, name: 'good' }])
  t.same(await tables(client), ['a2a_schema_migrations', 'good'], 'the broken one made no table')
})

t.test('a server that cannot be used is one line naming it, never its password', async t => {
  const url = await testDatabase(t)
  const at = new URL(url)
  const message = async (target: string): Promise<string> => await connectOnce(target).then(async c => { await c.end(); return 'connected' }, (err: Error) => err.message)
  const missing = new URL(url)
  missing.pathname = '/a2a_no_such_database'
  t.match(await message(missing.href), /^PostgreSQL at .*\/a2a_no_such_database: the database does not exist \(create it, or name another in services\.postgres\.url\)$/)
  const stranger = new URL(url)
  stranger.username = 'a2a_no_such_role'
  stranger.password = 's3cret-pass'
  const refused = await message(stranger.href)
  t.match(refused, /^PostgreSQL at a2a_no_such_role@.*: the server refused the credentials \(role "a2a_no_such_role" does not exist\)$/)
  t.notMatch(refused, /s3cret/, 'the password is never said')
  const closed = new URL(url)
  closed.port = String(await freePortOf())
  t.match(await message(closed.href), /^PostgreSQL at .*: connection refused \(is it running, on that port\?\)$/)
  t.equal(describeUrl(`postgres://${at.hostname}/x`), `the default user@${at.hostname}:5432/x`)
  t.equal(describeUrl('postgres://a2a@db.example.com:6543'), 'a2a@db.example.com:6543', 'no database named')
  t.equal(describeUrl('postgres://a2a@db.example.com:6543/'), 'a2a@db.example.com:6543')
  for (const [code, words] of [['ENOTFOUND', 'unknown host'], ['EAI_AGAIN', 'unknown host'], ['28P01', 'refused the credentials'], ['57P03', 'starting up or shutting down'], ['ETIMEDOUT', 'no answer in time'], ['XX000', 'boom']]) {
    t.match(connectProblem(Object.assign(new Error(code === 'ETIMEDOUT' ? 'Connection timeout' : 'boom'), { code }), 'postgres://u:p@h:1/d'), words)
  }
})

async function codeOf (promise: Promise<unknown>): Promise<string | undefined> {
  return await promise.then(() => undefined, (err: { code?: string }) => err.code)
}

async function freePortOf (): Promise<number> {
  const { freePort } = await import('../../../scripts/redis-server.js')
  return await freePort()
}
