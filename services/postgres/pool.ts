import pg from 'pg'
import type { PostgresService } from '../../schemas/config.js'
import type { Logger } from '../kernel/logger.js'
import { connectOnce } from './connect.js'
import { checkSchema, migrate } from './migrate.js'

/** How long a request waits for a pooled connection, or a new one to open, before its store call fails (503). */
const CONNECT_TIMEOUT_MS = 5_000
/**
 * A query is abandoned by the client this long after the server's own `statement_timeout` would have cut it: only a
 * server that stopped answering (gone, or its host unreachable) gets that far, and the request is refused (503)
 * rather than left waiting on a socket.
 */
const QUERY_TIMEOUT_MARGIN_MS = 1_000

/**
 * The pool of `services.postgres` every PostgreSQL store of the process borrows: `pool_size` connections at most,
 * each statement cut off after `statement_timeout_ms`. An idle connection that breaks (the server restarted) is
 * logged and dropped; the next query opens a new one.
 */
export function createPool (service: PostgresService, log: Logger): pg.Pool {
  const pool = new pg.Pool({
    connectionString: service.url,
    max: service.pool_size,
    statement_timeout: service.statement_timeout_ms,
    query_timeout: service.statement_timeout_ms + QUERY_TIMEOUT_MARGIN_MS,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    application_name: 'fastify-a2a'
  })
  pool.on('error', err => log.warn({ code: (err as NodeJS.ErrnoException).code, reason: err.message }, 'postgres connection lost'))
  return pool
}

/**
 * What a start does before serving: one connection, without a statement timeout, that applies the missing
 * migrations under their advisory lock (`migrate: true`) or checks that the schema is the one this code needs.
 * Throws PostgresUnreachable or SchemaMismatch, each a one-line message; the migrations applied are logged.
 */
export async function prepareDatabase (service: PostgresService, log: Logger): Promise<void> {
  const client = await connectOnce(service.url)
  try {
    if (service.migrate) {
      const { from, to, applied } = await migrate(client)
      if (applied.length > 0) log.info({ from, to, applied: applied.map(m => `${m.version} ${m.name}`) }, 'postgres schema migrated')
    } else {
      await checkSchema(client)
    }
  } finally {
    await client.end()
  }
}
