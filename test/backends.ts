// The Redis and PostgreSQL the tests use: the run's own (scripts/with-services.js) or those its environment names,
// and the databases each test takes of them, given back as they were. test/helper.ts re-exports all of it.
import { randomBytes } from 'node:crypto'
import type { Teardown } from './helper.js'

/**
 * The Redis the tests use (each file its own database numbers): A2A_TEST_REDIS_URL, which `npm test` sets
 * (scripts/with-services.js: a throwaway redis-server it starts and stops, unless the variable names one already).
 */
export const TEST_REDIS = (() => {
  const url = new URL(process.env.A2A_TEST_REDIS_URL || 'redis://127.0.0.1:0')
  return { url: `redis://${url.host}`, host: url.hostname, port: Number(url.port || 6379) }
})()

/** The run started TEST_REDIS itself (scripts/with-services.js): its databases are the tests' own to empty. */
const OWNED_REDIS = process.env.A2A_TEST_REDIS_OWNED === '1'

/** The YAML of a config whose tasks and push configs are in the Redis at `url` (the kvcache backends). */
export const kvcacheYaml = (url: string): string => `
tasks:
  backend: kvcache
push_notifications:
  backend: kvcache
services:
  cache:
    type: cache
    url: ${url}
`

export const REDIS_UNREACHABLE = process.env.A2A_TEST_REDIS_URL
  ? `Redis is not reachable at ${TEST_REDIS.url} (A2A_TEST_REDIS_URL): start it, or unset the variable and run the ` +
    'suite with npm test or npm run test:only -- <file>, which start a throwaway redis-server'
  : 'A2A_TEST_REDIS_URL is not set: run the suite with npm test, or one file with npm run test:only -- <file>; both ' +
    'start a throwaway redis-server for the run'

/** Databases of a Redis given in A2A_TEST_REDIS_URL that were empty when this process first used them. */
const takenDbs = new Set<number>()

/**
 * Empties database `db` of TEST_REDIS for a test. The tests never empty a database they did not create: on a Redis
 * the run started, `FLUSHDB`; on one given in A2A_TEST_REDIS_URL, a database is used only if it is empty when this
 * process first uses it (else this throws, naming it), and later only the keys in it, this process's own, are
 * deleted.
 */
export async function clearDb (client: import('ioredis').Redis, db: number, owned = OWNED_REDIS): Promise<void> {
  if (owned) {
    await client.flushdb()
    return
  }
  if (!takenDbs.has(db)) {
    const size = await client.dbsize()
    if (size > 0) {
      throw new Error(`db ${db} of the Redis at ${TEST_REDIS.url} (A2A_TEST_REDIS_URL) holds ${size} keys: the tests ` +
        `use only databases that are empty when they start, and never empty one they did not create; free db ${db}, ` +
        'or unset A2A_TEST_REDIS_URL to let the run start a Redis of its own')
    }
    takenDbs.add(db)
    return
  }
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await client.unlink(...keys)
  } while (cursor !== '0')
}

/**
 * A Redis client on TEST_REDIS in the test's own `db`, emptied before and after (`clearDb`). Fails the test (never
 * skips) with how to get a Redis when none answers.
 */
export async function redisDb (t: Teardown, db: number): Promise<import('ioredis').Redis> {
  const { Redis } = await import('ioredis')
  const client = new Redis({ host: TEST_REDIS.host, port: TEST_REDIS.port, db, lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
  } catch {
    client.disconnect()
    throw new Error(REDIS_UNREACHABLE)
  }
  try {
    await clearDb(client, db)
  } catch (err) {
    client.disconnect()
    throw err
  }
  t.teardown(async () => {
    await clearDb(client, db).catch(() => {})
    client.disconnect()
  })
  return client
}

/** Why the tests have no PostgreSQL, and how to give them one: `url` is A2A_TEST_POSTGRES_URL. */
const postgresUnreachable = (url: string | undefined): string => url
  ? `PostgreSQL is not reachable at ${url} (A2A_TEST_POSTGRES_URL): start it, or unset the variable and run the ` +
    'suite with npm test or npm run test:only -- <file>, which start a throwaway cluster'
  : 'A2A_TEST_POSTGRES_URL is not set: run the suite with npm test, or one file with npm run test:only -- <file>; both ' +
    'start a throwaway PostgreSQL cluster for the run'

/** Runs `use` with a client of its own on the PostgreSQL at `url`, closed after. */
async function withPostgres<T> (url: string, use: (client: import('pg').Client) => Promise<T>): Promise<T> {
  // Imported here: most test files never touch PostgreSQL, and they all import this file.
  const { connectOnce } = await import('../services/postgres/connect.js')
  const client = await connectOnce(url).catch(() => { throw new Error(postgresUnreachable(url)) })
  try {
    return await use(client)
  } finally {
    await client.end()
  }
}

/** Drops database `name` of the server at `url`, ending the connections to it first. */
async function dropDatabase (url: string, name: string): Promise<void> {
  await withPostgres(url, async client => {
    // A pool the test left open keeps the database in use, and one that reconnects may come back before the drop:
    // end them, and again while a drop finds one (55006: object in use).
    for (let attempt = 1; ; attempt++) {
      await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name])
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name}`)
        return
      } catch (err) {
        if (attempt === 5 || (err as { code?: string }).code !== '55006') throw err
      }
    }
  })
}

/**
 * A database of the test's own, `a2a_test_<random hex>`, created on the PostgreSQL at A2A_TEST_POSTGRES_URL (which
 * `npm test` sets: scripts/with-services.js); resolves its URL (that server, that database). At teardown the
 * connections left to it are ended and it is dropped. No other database of the server is touched, whoever made it.
 */
export async function testDatabase (t: Teardown): Promise<string> {
  const server = process.env.A2A_TEST_POSTGRES_URL
  if (!server) throw new Error(postgresUnreachable(server))
  const name = `a2a_test_${randomBytes(8).toString('hex')}`
  await withPostgres(server, client => client.query(`CREATE DATABASE ${name}`))
  t.teardown(() => dropDatabase(server, name))
  const url = new URL(server)
  url.pathname = `/${name}`
  return url.href
}

let schemas = 0

/**
 * A schema of the test's own in the database at `url` (of `testDatabase`), migrated, and a pool whose connections
 * use it; the pool ended and the schema dropped at teardown. Cheaper than a database per test: CREATE and DROP
 * DATABASE copy and checkpoint (9 to 17 s for a contract suite's file instead of 4). The migrations and the stores'
 * functions name no schema, so they work in whichever the connection's search_path gives.
 */
export async function migratedSchema (t: Teardown, url: string): Promise<import('pg').Pool> {
  const { default: pg } = await import('pg')
  const { connectOnce } = await import('../services/postgres/connect.js')
  const { migrate } = await import('../services/postgres/migrate.js')
  const schema = `case_${process.pid}_${++schemas}`
  const client = await connectOnce(url)
  await client.query(`CREATE SCHEMA ${schema}`)
  await client.query(`SET search_path = ${schema}`)
  await migrate(client)
  const pool = new pg.Pool({ connectionString: url, max: 4, options: `-c search_path=${schema}` })
  // An idle connection ended by the server (the database dropped at the file's end) is the pool's to drop.
  pool.on('error', () => {})
  t.teardown(async () => {
    await pool.end()
    await client.query(`DROP SCHEMA ${schema} CASCADE`)
    await client.end()
  })
  return pool
}

/**
 * The URL of a schema of the test's own, empty, in the database at `url` (of `testDatabase`): its connections use
 * it (`options=-c search_path=…`), so an app on it migrates and keeps its tables there. Dropped at teardown.
 */
export async function postgresSchema (t: Teardown, url: string): Promise<string> {
  const schema = `app_${process.pid}_${++schemas}`
  await withPostgres(url, client => client.query(`CREATE SCHEMA ${schema}`))
  t.teardown(() => withPostgres(url, client => client.query(`DROP SCHEMA ${schema} CASCADE`)))
  const withSchema = new URL(url)
  withSchema.searchParams.set('options', `-c search_path=${schema}`)
  return withSchema.href
}

/** A PostgreSQL cluster of the test's own (scripts/postgres-server.js): its restarts and password are the test's. */
export interface PrivatePostgres {
  readonly url: string
  readonly port: number
  /** Shuts it down (a fast shutdown: its connections are cut), keeping its data. */
  down (): Promise<void>
  /** Starts it again after `down`, on the same port and data; resolves once it answers. */
  up (): Promise<void>
  /** `down`, then `up`. */
  restart (): Promise<void>
}

/**
 * Starts a PostgreSQL cluster for one test (`initdb` takes a second or more), stopped and removed at teardown.
 * `password`: connections over TCP must give it (the url does).
 */
export async function privatePostgres (t: Teardown, opts: { password?: string } = {}): Promise<PrivatePostgres> {
  const { startPostgres } = await import('../scripts/postgres-server.js')
  const cluster = await startPostgres(opts)
  t.teardown(() => cluster.stop())
  return cluster
}
