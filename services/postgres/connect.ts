import pg from 'pg'

/** A PostgreSQL server that cannot be used, said in one line that names the server but never its password. */
export class PostgresUnreachable extends Error {
  readonly code = 'A2A_ERR_POSTGRES'
}

/** `user@host:port/database` of a postgres:// URL: what the messages name. */
export function describeUrl (url: string): string {
  const parsed = new URL(url)
  const user = decodeURIComponent(parsed.username) || 'the default user'
  // (A postgres:// URL without a database has the path '', or '/'.)
  return `${user}@${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname.length > 1 ? parsed.pathname : ''}`
}

/**
 * One connection to `url`, for a job of its own (migrating, listening): no statement timeout. Throws
 * PostgresUnreachable with a line that says what was wrong (refused, unknown host, no such database, refused
 * credentials) instead of the driver's error. `keepAlive`: TCP keepalive, for a connection that waits for ever, so
 * that a server whose host vanished is noticed.
 */
export async function connectOnce (url: string, timeoutMs = 5000, keepAlive = false): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, application_name: 'fastify-a2a', keepAlive })
  // An error after connecting (the server gone) reaches the query that runs then; this keeps it off the process.
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (err) {
    await client.end().catch(() => {})
    throw new PostgresUnreachable(connectProblem(err as NodeJS.ErrnoException, url))
  }
  return client
}

/** Why a connection to `url` failed, in words, from the driver's error code (PostgreSQL's SQLSTATE, or errno). */
export function connectProblem (err: NodeJS.ErrnoException, url: string): string {
  const where = describeUrl(url)
  switch (err.code) {
    case 'ECONNREFUSED':
      return `PostgreSQL at ${where}: connection refused (is it running, on that port?)`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `PostgreSQL at ${where}: unknown host`
    case '3D000':
      return `PostgreSQL at ${where}: the database does not exist (create it, or name another in services.postgres.url)`
    case '28P01':
    case '28000':
      return `PostgreSQL at ${where}: the server refused the credentials (${err.message})`
    case '57P03':
      return `PostgreSQL at ${where}: the server is starting up or shutting down; try again`
    default:
      return `PostgreSQL at ${where}: ${/timeout/i.test(err.message) ? 'no answer in time' : err.message}`
  }
}
