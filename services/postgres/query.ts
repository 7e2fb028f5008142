import type pg from 'pg'
import { StorageUnavailable } from '../kernel/errors.js'

/**
 * Runs one query of a PostgreSQL store. Whatever the driver throws becomes StorageUnavailable with a short, fixed
 * reason: the driver's error may carry the query's values, and those hold tasks, tokens and credentials. `name`
 * makes it a prepared statement, parsed and planned once per connection: for the statements of the hot path, whose
 * plan does not depend on their values (a function call, a lookup by key). One planned per call with its values (a
 * filtered list) has none.
 */
export async function storeQuery (pool: pg.Pool, text: string, values: unknown[], name?: string): Promise<pg.QueryResult> {
  try {
    return await pool.query(name === undefined ? { text, values } : { name, text, values })
  } catch (err) {
    throw new StorageUnavailable(reason(err as NodeJS.ErrnoException))
  }
}

function reason (err: NodeJS.ErrnoException): string {
  if (err.code === '57014') return 'postgres statement timed out'
  if (typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code)) return `postgres error ${err.code}`
  return 'postgres unreachable'
}
