// `tasks.backend: postgres`, end to end through the routes, on a real PostgreSQL (a database per test,
// test/helper.ts `testDatabase`): the schema migrated at start, tasks that outlive the app, the readiness check, the
// expired tasks deleted, and the starts that must fail in one line.
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import pg from 'pg'
import t from 'tap'
import a2a, { type A2AOptions } from '../../index.js'
import { SCHEMA_VERSION } from '../../services/postgres/migrations.js'
import { build, call, receiver, testDatabase, until, userMessage } from '../helper.js'

const KEY = Buffer.alloc(32, 9).toString('base64')

const postgres = (url: string, more: Record<string, unknown> = {}) => ({
  tasks: { backend: 'postgres' as const },
  push_notifications: { enabled: false },
  services: { postgres: { url, ...more } }
})

async function query (url: string, text: string): Promise<any[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text)).rows
  } finally {
    await client.end()
  }
}

t.test('tasks live in PostgreSQL: migrated at start, read back by a later app, listed, and /ready asks the database', async t => {
  const url = await testDatabase(t)
  const first = await build(t, { config: postgres(url) })
  t.same(await query(url, 'SELECT max(version) AS v FROM a2a_schema_migrations'), [{ v: SCHEMA_VERSION }], 'migrated at start')
  const sent = await call(first, 'message/send', { message: userMessage('kept') })
  t.equal(sent.body.result.status.state, 'completed')
  const id = sent.body.result.id
  t.same((await query(url, 'SELECT id, state FROM a2a_tasks')), [{ id, state: 'completed' }], 'one row')
  await first.close()

  // A later app (a restart) on the same database: nothing to migrate, the task is there.
  const second = await build(t, { config: postgres(url) })
  const got = await call(second, 'tasks/get', { id })
  t.same(got.body.result, sent.body.result, 'the task as it was answered')
  const listed = await call(second, 'tasks/list', {})
  t.same(listed.body.result.tasks.map((task: any) => task.id), [id])
  const v1 = await second.inject({ method: 'POST', url: '/', headers: { 'a2a-version': '1.0' }, payload: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } } })
  t.equal(v1.json().result.id, id, 'v1.0 reads it too')
  const ready = await second.inject('/ready')
  t.same([ready.statusCode, ready.json()], [200, { status: 'ready', checks: { tasks: 'ok', postgres: 'ok' } }])
  // An instance that does not migrate starts on a schema that is up to date.
  const third = await build(t, { config: postgres(url, { migrate: false }) })
  t.equal((await call(third, 'tasks/get', { id })).body.result.id, id)
})

t.test('terminal tasks past tasks.ttl are deleted from the database, their events with them', async t => {
  const url = await testDatabase(t)
  const hook = await receiver(t)
  const app = await build(t, {
    config: {
      ...postgres(url),
      tasks: { backend: 'postgres', ttl: 1 },
      push_notifications: { backend: 'postgres', config: { allowed_networks: ['127.0.0.0/8'] } }
    }
  })
  // A stream: its events are kept, for streams that resume.
  const stream = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 1, method: 'message/stream', params: { message: userMessage('short-lived') } } })
  const id = JSON.parse(stream.body.split('\n').find(line => line.startsWith('data:'))?.slice(5) ?? '{}').result.id
  t.match(stream.body, /"state":"completed"/)
  t.ok((await query(url, 'SELECT count(*)::int AS n FROM a2a_task_events'))[0].n > 0, 'its events are kept')
  const set = await call(app, 'tasks/pushNotificationConfig/set', { taskId: id, pushNotificationConfig: { url: hook.url } })
  t.equal(set.body.result.pushNotificationConfig.id, 'default')
  await until(async () => (await query(url, 'SELECT count(*)::int AS n FROM a2a_tasks'))[0].n === 0, 1500)
  t.same(await query(url, 'SELECT count(*)::int AS n FROM a2a_task_events'), [{ n: 0 }], 'and its events')
  await until(async () => (await query(url, 'SELECT count(*)::int AS n FROM a2a_push_configs'))[0].n === 0, 1500)
  t.pass('and its push configs, tasks.ttl after they were set')
  t.equal((await call(app, 'tasks/get', { id })).body.error.code, -32001)
})

t.test('a sweep that fails is logged and tried again; the database gone makes the calls and /ready 503, until it is back', async t => {
  const url = await testDatabase(t)
  const name = new URL(url).pathname.slice(1)
  const lines: any[] = []
  const app = Fastify({
    logger: {
      level: 'warn',
      stream: new Writable({ write (chunk, _enc, done) { lines.push(JSON.parse(chunk.toString())); done() } })
    }
  })
  await app.register(a2a, { config: { ...postgres(url, { statement_timeout_ms: 2000 }), tasks: { backend: 'postgres', ttl: 1 }, push_notifications: { backend: 'postgres' } } })
  await app.ready()
  t.teardown(() => app.close())
  const admin = new URL(url)
  admin.pathname = '/postgres'
  // Each backend waited for until it has exited (up to 5 s): a signalled one could still answer a query meanwhile.
  const cut = `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = '${name}'`
  // An idle connection of the pool cut (the server restarted, say): logged, and the next query opens another.
  t.equal((await app.inject('/ready')).statusCode, 200)
  await query(admin.href, cut)
  await until(() => app.a2aPostgres?.idleCount === 0)
  t.match(lines.find(line => line.msg === 'postgres connection lost'), { code: '57P01' }, 'the pool logged the connection it lost')
  t.equal((await app.inject('/ready')).statusCode, 200, 'and goes on')

  // The tables gone from under the app: every query of the store fails, the sweep's each second.
  await query(url, 'ALTER TABLE a2a_tasks RENAME TO a2a_tasks_away; ALTER TABLE a2a_push_configs RENAME TO a2a_push_away')
  await until(() => lines.filter(line => line.msg === 'expired tasks not deleted').length >= 2, 1500)
  await until(() => lines.some(line => line.msg === 'expired push configs not deleted'), 1500)
  t.equal(lines.find(line => line.msg === 'expired tasks not deleted').err.message, 'Storage unavailable: postgres error 42P01', 'a short reason, no query')
  await query(url, 'ALTER TABLE a2a_tasks_away RENAME TO a2a_tasks; ALTER TABLE a2a_push_away RENAME TO a2a_push_configs')

  // The database refusing connections, and those open cut: as when its server goes down.
  await query(admin.href, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false; ${cut}`)
  // A connection the pool was opening as the database closed may get through the first cut: cut until none is left.
  await until(async () => (await query(admin.href, cut)).length === 0)
  const refused = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: userMessage('x') } } })
  t.same([refused.statusCode, refused.headers['retry-after'], refused.json().error.code], [503, '1', -32603])
  const down = await app.inject('/ready')
  t.same([down.statusCode, down.json()], [503, { status: 'unavailable', checks: { tasks: 'unavailable', postgres: 'unavailable' } }])

  await query(admin.href, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
  const back = await app.inject('/ready')
  t.same([back.statusCode, back.json()], [200, { status: 'ready', checks: { tasks: 'ok', postgres: 'ok' } }])
  const sent = await call(app, 'message/send', { message: userMessage('after') })
  t.equal(sent.body.result.status.state, 'completed', 'served again')
})

t.test('a start that cannot use its database fails before serving, with one line, and opens nothing', async t => {
  const register = async (services: NonNullable<NonNullable<A2AOptions['config']>['services']>) => {
    const app = Fastify({ logger: false })
    try {
      await app.register(a2a, { config: { tasks: { backend: 'postgres' }, push_notifications: { enabled: false }, services } })
      await app.ready()
      return null
    } catch (err) {
      return err as Error & { code: string }
    } finally {
      await app.close()
    }
  }
  const refused = await register({ postgres: { url: 'postgres://a2a@127.0.0.1:1/a2a' } })
  t.same([refused?.code, refused?.message], ['A2A_ERR_POSTGRES', 'PostgreSQL at a2a@127.0.0.1:1/a2a: connection refused (is it running, on that port?)'])

  const url = await testDatabase(t)
  const unmigrated = await register({ postgres: { url, migrate: false } })
  t.equal(unmigrated?.code, 'A2A_ERR_SCHEMA')
  t.match(unmigrated?.message, /^the database's schema is at version 0, older than this fastify-a2a needs \(\d+\): run "fastify-a2a migrate"/)
  t.same(await query(url, "SELECT to_regclass('a2a_tasks') AS t"), [{ t: null }], 'nothing created')

  await query(url, `CREATE TABLE a2a_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
    INSERT INTO a2a_schema_migrations (version, name) VALUES (${SCHEMA_VERSION + 1}, 'from the future')`)
  const newer = await register({ postgres: { url } })
  t.equal(newer?.code, 'A2A_ERR_SCHEMA')
  t.match(newer?.message, `the database's schema is at version ${SCHEMA_VERSION + 1}, newer than this fastify-a2a knows (${SCHEMA_VERSION})`)
})

t.test('validate: the postgres backends need services.postgres, push configs live with their tasks, keys are 32 bytes', async t => {
  // services.postgres alone, no backend on it: nothing connects (the server named does not exist).
  const unused = await build(t, { config: { services: { postgres: { url: 'postgres://a2a@127.0.0.1:1/a2a' } } } })
  t.equal(unused.a2aPostgres, null)
  t.equal((await call(unused, 'message/send', { message: userMessage('x') })).body.result.status.state, 'completed')
  const refused = async (config: NonNullable<A2AOptions['config']>) => {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    try {
      await app.register(a2a, { config })
      return []
    } catch (err) {
      return (err as { problems: string[] }).problems
    }
  }
  t.same(await refused({ tasks: { backend: 'postgres' }, push_notifications: { enabled: false } }), ['tasks.backend: postgres needs services.postgres (with its url)'])
  t.same(await refused({ push_notifications: { backend: 'postgres' } }), ['push_notifications.backend: postgres needs services.postgres (with its url)'])
  const pgService = { postgres: { url: 'postgres://127.0.0.1/a2a' } }
  t.same(await refused({ tasks: { backend: 'postgres' }, services: pgService }), ['push_notifications.backend: must be postgres when tasks.backend is postgres (push configs live with their tasks)'])
  t.same(await refused({ push_notifications: { backend: 'postgres', encryption_key: 'hunter2', previous_encryption_keys: ['short'] }, services: pgService }), [
    'push_notifications.encryption_key: must be 32 bytes in base64 (make one with: openssl rand -base64 32)',
    'push_notifications.previous_encryption_keys.0: must be 32 bytes in base64'
  ], 'and never echo a key')
  t.same(await refused({ push_notifications: { backend: 'postgres', previous_encryption_keys: [KEY] }, services: pgService }),
    ['push_notifications.previous_encryption_keys: needs push_notifications.encryption_key (the key configs are sealed with now)'])
})

t.test('push on PostgreSQL: configs kept sealed with their task, deliveries made, and both still there for a later app', async t => {
  const url = await testDatabase(t)
  const hook = await receiver(t)
  const config = {
    tasks: { backend: 'postgres' as const },
    push_notifications: { backend: 'postgres' as const, encryption_key: KEY, config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01 } },
    services: { postgres: { url } }
  }
  const app = await build(t, { config })
  const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: hook.url, token: 'tk-secret' } } })
  t.equal(sent.body.result.status.state, 'completed')
  await until(() => hook.received.length === 2)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'completed'])
  const rows = await query(url, 'SELECT task_id, id, url, record FROM a2a_push_configs')
  t.same(rows.map(r => [r.task_id, r.id, r.url]), [[sent.body.result.id, 'default', hook.url]])
  t.notMatch(rows[0].record, /tk-secret/, 'the token is sealed at rest')
  const ready = await app.inject('/ready')
  t.same(ready.json().checks, { tasks: 'ok', postgres: 'ok' })
  await app.close()

  const later = await build(t, { config })
  const list = await call(later, 'tasks/pushNotificationConfig/list', { id: sent.body.result.id })
  t.same(list.body.result, [{ taskId: sent.body.result.id, pushNotificationConfig: { id: 'default', url: hook.url, token: 'tk-secret' } }])
})

t.test('a migration applied under running instances (a rolling upgrade): their requests wait for its lock and go on, during and after', async t => {
  const url = await testDatabase(t)
  const config = { ...postgres(url), push_notifications: { backend: 'postgres' as const } }
  const [a, b] = [await build(t, { config }), await build(t, { config })]
  // A later release's migration: it changes the tasks table and holds its lock for 300 ms.
  const later = { version: SCHEMA_VERSION + 1, name: 'later', sql: 'ALTER TABLE a2a_tasks ADD COLUMN later text; SELECT pg_sleep(0.3)' }
  const { connectOnce } = await import('../../services/postgres/connect.js')
  const { migrate, checkSchema } = await import('../../services/postgres/migrate.js')
  const { MIGRATIONS } = await import('../../services/postgres/migrations.js')
  const client = await connectOnce(url)
  t.teardown(() => client.end())
  const sends = Array.from({ length: 40 }, async (_, i) => await call(i % 2 === 0 ? a : b, 'message/send', { message: userMessage(`during ${i}`) }))
  const migrated = migrate(client, { migrations: [...MIGRATIONS, later] })
  const answers = await Promise.all(sends)
  t.same((await migrated).applied.map(m => m.version), [SCHEMA_VERSION + 1])
  t.ok(answers.every(r => r.body.result?.status.state === 'completed'), 'every send made during the migration completed')
  t.equal(await checkSchema(client).catch((err: Error) => err.message), `the database's schema is at version ${SCHEMA_VERSION + 1}, newer than this fastify-a2a knows (${SCHEMA_VERSION}): run the fastify-a2a that migrated it, or a later one`,
    'a start of the old release would now be refused')
  const after = await call(b, 'message/send', { message: userMessage('after') })
  t.equal(after.body.result.status.state, 'completed', 'the running instances go on')
  t.equal((await call(a, 'tasks/get', { id: after.body.result.id })).body.result.id, after.body.result.id)
})
