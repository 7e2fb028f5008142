/* eslint-disable no-template-curly-in-string -- the config holds a ${VAR} reference on purpose */
// `fastify-a2a migrate` as a user runs it (the built CLI), against a real PostgreSQL: each test on a database of its
// own (test/helper.ts `testDatabase`).
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { SCHEMA_VERSION, MIGRATIONS } from '../services/postgres/migrations.js'
import { CLI, privatePostgres, runChild, testDatabase } from './helper.js'

const ENV = { ...process.env }
for (const name of ['A2A_CONFIG', 'HOST', 'PORT', 'LOG_LEVEL', 'REDIS_URL', 'DATABASE_URL']) delete ENV[name]

t.ok(existsSync(CLI), 'dist/cli.js exists (run `npm run build` first)')

async function migrateCli (t: Parameters<typeof runChild>[0], dir: string, args: string[], env: Record<string, string> = {}) {
  const { status, stdout, stderr } = await runChild(t, process.execPath, [CLI, 'migrate', '--config', join(dir, 'agent.yml'), ...args], { cwd: dir, env: { ...ENV, ...env } })
  return { status, stdout, stderr }
}

/** Records a migration later than this version knows in the (migrated) database at `url`. */
async function fromTheFuture (url: string): Promise<void> {
  const pg = (await import('pg')).default
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('INSERT INTO a2a_schema_migrations (version, name) VALUES ($1, $2)', [SCHEMA_VERSION + 1, 'from a later version'])
  await client.end()
}

const NEWER = `fastify-a2a: the database's schema is at version ${SCHEMA_VERSION + 1}, newer than this fastify-a2a knows (${SCHEMA_VERSION}): run the fastify-a2a that migrated it, or a later one\n`

t.test('migrate applies the schema once, prints each migration, and finds nothing to do the second time', async t => {
  const url = await testDatabase(t)
  // The URL from the environment, as the template suggests.
  const dir = t.testdir({ 'agent.yml': 'services:\n  postgres:\n    url: ${DATABASE_URL}\n' })
  const dry = await migrateCli(t, dir, ['--dry-run'], { DATABASE_URL: url })
  t.equal(dry.status, 0, dry.stderr)
  t.equal(dry.stdout, [...MIGRATIONS.map(m => `would apply ${m.version} ${m.name}`), `schema at version 0 (${MIGRATIONS.length} to apply)`, ''].join('\n'))
  const first = await migrateCli(t, dir, [], { DATABASE_URL: url })
  t.equal(first.status, 0, first.stderr)
  t.equal(first.stdout, [...MIGRATIONS.map(m => `applied ${m.version} ${m.name}`), `schema at version ${SCHEMA_VERSION}`, ''].join('\n'))
  const second = await migrateCli(t, dir, [], { DATABASE_URL: url })
  t.same([second.status, second.stdout, second.stderr], [0, `schema at version ${SCHEMA_VERSION}: up to date\n`, ''])
})

t.test('no services.postgres, an unreachable server, a missing database: one line each, exit 1, no stack', async t => {
  const none = t.testdir({ 'agent.yml': 'agent:\n  name: Nobody\n' })
  const missingEntry = await migrateCli(t, none, [])
  t.equal(missingEntry.status, 1)
  t.equal(missingEntry.stderr, `fastify-a2a: migrate needs services.postgres.url in ${join(none, 'agent.yml')}\n`)
  const defaults = await runChild(t, process.execPath, [CLI, 'migrate'], { cwd: t.testdir({}), env: ENV })
  t.same([defaults.status, defaults.stderr], [1, 'fastify-a2a: migrate needs services.postgres.url in the configuration\n'], 'no config file: the built-in defaults')

  const url = new URL(await testDatabase(t))
  url.pathname = '/a2a_no_such_database'
  url.password = 'hunter2-secret'
  const dir = t.testdir({ 'agent.yml': `services:\n  postgres:\n    url: ${url.href}\n` })
  const missingDb = await migrateCli(t, dir, [])
  t.equal(missingDb.status, 1)
  t.match(missingDb.stderr, /^fastify-a2a: PostgreSQL at .*\/a2a_no_such_database: the database does not exist \(create it, or name another in services\.postgres\.url\)\n$/)
  t.notMatch(missingDb.stderr, /hunter2/, 'the password is never printed')

  const wrong = t.testdir({ 'agent.yml': 'services:\n  postgres:\n    url: redis://127.0.0.1:6379\n' })
  const invalid = await migrateCli(t, wrong, [])
  t.same([invalid.status, invalid.stderr], [1, 'services.postgres.url: must be a postgres:// or postgresql:// URL\n'])
})

t.test('a database at a newer schema than this version knows: one line, exit 1', async t => {
  const url = await testDatabase(t)
  const dir = t.testdir({ 'agent.yml': `services:\n  postgres:\n    url: ${url}\n` })
  t.equal((await migrateCli(t, dir, [])).status, 0)
  await fromTheFuture(url)
  const newer = await migrateCli(t, dir, [])
  t.equal(newer.status, 1)
  t.equal(newer.stderr, NEWER)
})

t.test('serve with tasks in PostgreSQL: a missing database or a newer schema ends the start with one line, exit 1', async t => {
  const serveCli = async (dir: string) => await runChild(t, process.execPath, [CLI, 'serve', '--config', join(dir, 'agent.yml'), '--port', '0'], { cwd: dir, env: ENV, timeoutMs: 60_000 })
  const config = (url: string) => ({ 'agent.yml': `tasks:\n  backend: postgres\npush_notifications:\n  enabled: false\nservices:\n  postgres:\n    url: ${url}\n` })

  const url = await testDatabase(t)
  const missing = new URL(url)
  missing.pathname = '/a2a_no_such_database'
  const gone = await serveCli(t.testdir(config(missing.href)))
  t.equal(gone.status, 1)
  t.match(gone.stderr, /^fastify-a2a: PostgreSQL at .*\/a2a_no_such_database: the database does not exist \(create it, or name another in services\.postgres\.url\)\n$/)

  const dir = t.testdir(config(url))
  t.equal((await migrateCli(t, dir, [])).status, 0)
  await fromTheFuture(url)
  const newer = await serveCli(dir)
  t.equal(newer.status, 1)
  t.equal(newer.stderr, NEWER)
  t.equal(newer.stdout, '', 'no log line either: nothing started')
})

t.test('serve and migrate against a server that refuses the password: one line naming the server, never the password, exit 1', async t => {
  const cluster = await privatePostgres(t, { password: 'right' })
  const wrong = new URL(cluster.url)
  wrong.password = 'wrong'
  const dir = t.testdir({ 'agent.yml': `tasks:\n  backend: postgres\npush_notifications:\n  enabled: false\nservices:\n  postgres:\n    url: ${wrong.href}\n` })
  const served = await runChild(t, process.execPath, [CLI, 'serve', '--config', join(dir, 'agent.yml'), '--port', '0'], { cwd: dir, env: ENV, timeoutMs: 60_000 })
  t.equal(served.status, 1)
  t.match(served.stderr, /^fastify-a2a: PostgreSQL at postgres@127\.0\.0\.1:\d+\/postgres: the server refused the credentials \(password authentication failed for user "postgres"\)\n$/)
  t.notMatch(served.stderr, /wrong/, 'the password is never printed')
  const migrated = await migrateCli(t, dir, [])
  t.equal(migrated.status, 1)
  t.equal(migrated.stderr, served.stderr)
})
