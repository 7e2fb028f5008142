import type { ClientBase } from 'pg'
import { MIGRATIONS, type Migration } from './migrations.js'

/** What `migrate` found and did (or, in a dry run, would do). */
export interface MigrateResult {
  /** The schema version found: 0 for a database the migrations never touched. */
  readonly from: number
  /** The version it is at now (a dry run: still `from`). */
  readonly to: number
  /** The migrations applied, oldest first (a dry run: those it would apply). */
  readonly applied: readonly Migration[]
}

export interface MigrateOptions {
  /** Apply nothing: only say what would be applied. */
  dryRun?: boolean
  /** Tests: another list than the shipped one. */
  migrations?: readonly Migration[]
}

/** A database whose schema this code cannot use: newer than it knows, or (without migrating) older. */
export class SchemaMismatch extends Error {
  readonly code = 'A2A_ERR_SCHEMA'
}

/**
 * The advisory lock every migrating instance takes first, so that instances starting together migrate once: the
 * first applies what is missing, the others wait and then find nothing to do. (A fixed 64-bit key: "a2aschem".)
 */
const LOCK_KEY = '6967303456004892013'

const RECORD = 'a2a_schema_migrations'

/**
 * Brings the database's schema up to the last migration, each missing one in its own transaction, recorded in
 * `a2a_schema_migrations`. Refuses a database at a version newer than the code knows (SchemaMismatch). `client` is
 * one connection, used by nothing else meanwhile, with no statement timeout: waiting for the lock and building an
 * index on a large table may take longer than a request may.
 */
export async function migrate (client: ClientBase, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const migrations = opts.migrations ?? MIGRATIONS
  await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY])
  try {
    const from = await schemaVersion(client)
    const latest = migrations[migrations.length - 1].version
    if (from > latest) throw newerThanKnown(from, latest)
    const pending = migrations.filter(m => m.version > from)
    if (opts.dryRun === true || pending.length === 0) return { from, to: from, applied: pending }
    await client.query(`CREATE TABLE IF NOT EXISTS ${RECORD} (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`)
    for (const migration of pending) await apply(client, migration)
    return { from, to: latest, applied: pending }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY])
  }
}

/**
 * For an instance that does not migrate (`services.postgres.migrate: false`): the schema version found, or
 * SchemaMismatch when it is not the one this code is written for.
 */
export async function checkSchema (client: ClientBase, migrations: readonly Migration[] = MIGRATIONS): Promise<number> {
  const found = await schemaVersion(client)
  const latest = migrations[migrations.length - 1].version
  if (found > latest) throw newerThanKnown(found, latest)
  if (found < latest) {
    throw new SchemaMismatch(`the database's schema is at version ${found}, older than this fastify-a2a needs (${latest}): ` +
      'run "fastify-a2a migrate", or set services.postgres.migrate: true')
  }
  return found
}

/** The last migration recorded; 0 when none is. */
async function schemaVersion (client: ClientBase): Promise<number> {
  const { rows: [{ known }] } = await client.query(`SELECT to_regclass('${RECORD}') IS NOT NULL AS known`)
  if (known !== true) return 0
  const { rows: [{ version }] } = await client.query(`SELECT coalesce(max(version), 0)::int AS version FROM ${RECORD}`)
  return version as number
}

async function apply (client: ClientBase, migration: Migration): Promise<void> {
  await client.query('BEGIN')
  try {
    await client.query(migration.sql)
    await client.query(`INSERT INTO ${RECORD} (version, name) VALUES ($1, $2)`, [migration.version, migration.name])
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK')
    throw Object.assign(new Error(`migration ${migration.version} (${migration.name}) failed, nothing of it applied: ${(err as Error).message}`), { cause: err })
  }
}

function newerThanKnown (found: number, latest: number): SchemaMismatch {
  return new SchemaMismatch(`the database's schema is at version ${found}, newer than this fastify-a2a knows (${latest}): ` +
    'run the fastify-a2a that migrated it, or a later one')
}
