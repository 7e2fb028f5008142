// PostgreSQL for `npm run bench`: a throwaway cluster (scripts/postgres-server.js: fsync and synchronous_commit off,
// for ours and the peer alike; pg_stat_statements loaded) unless --postgres names a server, a database of its own for
// each target, and what a run of sends costs the server: its statements (round trips) and the CPU of its processes.
import pg from 'pg'
import { childrenOf, startPostgres } from '../scripts/postgres-server.js'
import { cpuSeconds } from './proc.js'

/** The server the run uses: `given` (a URL), or a throwaway cluster; `{ url, pid, stop }` (no pid for a given one). */
export async function postgresServer (given) {
  if (given !== undefined) return { url: given, pid: undefined, stop: async () => {} }
  return await startPostgres({ settings: ['shared_preload_libraries=pg_stat_statements'] })
}

async function onServer (url, sql) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(sql)
  } finally {
    await client.end()
  }
}

/** A new, empty database `name` on the server at `url` (one of the same name dropped first); its URL. */
export async function freshDatabase (url, name) {
  await onServer(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await onServer(url, `CREATE DATABASE ${name}`)
  const at = new URL(url)
  at.pathname = `/${name}`
  // Where the server loads it (the throwaway cluster does), the statements are counted.
  await onServer(at.href, 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements').catch(() => {})
  return at.href
}

export async function dropDatabase (url, name) {
  await onServer(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}

/**
 * The statements run in the database at `url` since the last reset, by text (pg_stat_statements, which the run's
 * throwaway cluster loads: every statement a client sends, BEGIN and COMMIT included, is a round trip); null when
 * the server has not loaded it.
 */
async function statements (url, reset = false) {
  try {
    const { rows } = await onServer(url, `SELECT query, calls FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'`)
    if (reset) await onServer(url, 'SELECT pg_stat_statements_reset()')
    return rows
  } catch {
    return null
  }
}

/** CPU seconds of each process of the cluster (postgres and the processes it started), by pid. */
function clusterCpu (pid) {
  const out = new Map()
  for (const one of [pid, ...childrenOf(pid)]) {
    try {
      out.set(one, cpuSeconds(one))
    } catch {
      // Gone meanwhile.
    }
  }
  return out
}

/**
 * What `sends` message/sends (`send(amount)`) cost the database at `url`: the statements per send (round trips; null
 * without pg_stat_statements) with the three most called, and, for a cluster whose postgres pid is known, its CPU ms
 * per 1,000 sends (processes that started meanwhile counted whole).
 */
export async function postgresCost (url, pid, sends, send) {
  await statements(url, true)
  const cpu0 = pid === undefined ? undefined : clusterCpu(pid)
  const sent = await send(sends)
  const cpu1 = pid === undefined ? undefined : clusterCpu(pid)
  const ran = await statements(url)
  let cpuMs = null
  if (cpu0 !== undefined) {
    let seconds = 0
    for (const [one, now] of cpu1) seconds += now - (cpu0.get(one) ?? 0)
    cpuMs = Math.round(seconds * 1e6 / sends * 10) / 10
  }
  const perSend = n => Math.round(Number(n) / sends * 100) / 100
  return {
    sends,
    errors: sent.errors,
    statementsPerSend: ran === null ? null : perSend(ran.reduce((sum, row) => sum + Number(row.calls), 0)),
    topStatements: ran === null
      ? null
      : ran.sort((a, b) => Number(b.calls) - Number(a.calls)).slice(0, 3).map(row => ({ query: row.query.replace(/\s+/g, ' ').slice(0, 80), perSend: perSend(row.calls) })),
    postgresCpuMsPer1000: cpuMs
  }
}
