import type pg from 'pg'
import { StorageUnavailable } from '../kernel/errors.js'

/**
 * Runs one query of a PostgreSQL store. Whatever the driver throws becomes StorageUnavailable with a short, fixed
 * reason: the driver's error may carry the query's values, and those hold tasks, tokens and credentials.
 */
export async function storeQuery (pool: pg.Pool, text: string, values: unknown[]): Promise<pg.QueryResult> {
  try {
    return await pool.query(text, values)
  } catch (err) {
    throw new StorageUnavailable(reason(err as NodeJS.ErrnoException))
  }
}

function reason (err: NodeJS.ErrnoException): string {
  if (err.code === '57014') return 'postgres statement timed out'
  if (typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code)) return `postgres error ${err.code}`
  return 'postgres unreachable'
}
