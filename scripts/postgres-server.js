// A throwaway PostgreSQL cluster: initdb in a temp folder, then a postgres of its own on a free port of 127.0.0.1,
// the folder removed when it stops. Used by the test command when A2A_TEST_POSTGRES_URL names no server
// (scripts/with-services.js).
import { execFile, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { accessSync, chownSync, closeSync, constants, mkdtempSync, openSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import pg from 'pg'
import { freePort } from './redis-server.js'

/** One line on how to get PostgreSQL's server programs. */
export const POSTGRES_INSTALL_HINT = 'install it (Debian/Ubuntu: apt-get install -y postgresql; macOS: brew install postgresql)'

function executable (file) {
  try {
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The folder `initdb` on the PATH really lives in (a symlink's target's: that is where `postgres` is), or null. */
function fromPath () {
  /* c8 ignore next -- a process without a PATH */
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && executable(join(dir, 'initdb'))) return dirname(realpathSync(join(dir, 'initdb')))
  }
  return null
}

function fromPgConfig () {
  const out = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' })
  return out.status === 0 ? out.stdout.trim() : null
}

/** The bin folder of the newest version under `root` (Debian's /usr/lib/postgresql/<N>/bin) that has both programs. */
function newestUnder (root) {
  let versions
  try {
    versions = readdirSync(root).filter(name => /^\d+(\.\d+)?$/.test(name))
  } catch {
    return null
  }
  versions.sort((a, b) => Number(b) - Number(a))
  return versions.map(version => join(root, version, 'bin')).find(holdsServer) ?? null
}

function holdsServer (dir) {
  return dir !== null && executable(join(dir, 'initdb')) && executable(join(dir, 'postgres'))
}

/**
 * The folder that holds `initdb` and `postgres`: that of `initdb` on the PATH, else `pg_config --bindir`, else the
 * newest `<root>/<N>/bin` (Debian keeps them off the PATH); null when none has both.
 */
export function postgresBinDir (root = '/usr/lib/postgresql') {
  for (const find of [fromPath, fromPgConfig, () => newestUnder(root)]) {
    const dir = find()
    if (holdsServer(dir)) return dir
  }
  return null
}

/** Whether the PostgreSQL at `url` answers `SELECT 1` (within about 2 s). */
export async function pingPostgres (url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000, query_timeout: 2000 })
  client.on('error', () => {})
  const answered = await client.connect().then(() => client.query('SELECT 1')).then(() => true, () => false)
  // Not awaited: a server that never answered may never acknowledge the goodbye either.
  client.end().catch(() => {})
  return answered
}

/** The user the cluster runs as: this process's own, or, as root (which PostgreSQL refuses), the postgres user. */
function clusterUser () {
  /* c8 ignore next -- getuid is missing on Windows only */
  if (process.getuid?.() !== 0) return {}
  const id = flag => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' })
  const [uid, gid] = [id('-u'), id('-g')]
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error('PostgreSQL refuses to run as root and there is no postgres user to run the throwaway cluster as: ' +
      'create one (installing the postgresql package does), run as another user, or set A2A_TEST_POSTGRES_URL')
  }
  return { uid: Number(uid.stdout), gid: Number(gid.stdout) }
}

function lastLine (text) {
  return String(text).trim().split('\n').pop()
}

async function initdb (bin, dir, user, password) {
  const args = ['-D', join(dir, 'data'), '--auth=trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']
  if (password !== undefined) {
    // Connections over TCP must then give the password; the socket in the folder stays trusted.
    const file = join(dir, 'password')
    writeFileSync(file, password)
    if (user.uid !== undefined) chownSync(file, user.uid, user.gid)
    args.push('--auth-host=scram-sha-256', `--pwfile=${file}`)
  }
  try {
    // From the cluster's folder: the postgres user may not be allowed into this process's.
    await promisify(execFile)(join(bin, 'initdb'), args, { cwd: dir, timeout: 60_000, ...user })
  } catch (err) {
    throw new Error(`initdb failed: ${lastLine(err.stderr || err.message)}`)
  }
}

/** The processes `pid` started (Linux; elsewhere none): postgres's own leave its process group, so a group kill misses them. */
export function childrenOf (pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
  /* c8 ignore next 3 -- not Linux, or postgres gone between the timer and the read */
  } catch {
    return []
  }
}

/** Stops postgres: SIGINT, its fast shutdown (it ends its own processes first); SIGKILL to them all after `graceMs`. */
async function halt (child, graceMs) {
  // Not started (spawn failed), or exited already.
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGINT')
  const timer = setTimeout(() => {
    for (const pid of [...childrenOf(child.pid), child.pid]) {
      try {
        process.kill(pid, 'SIGKILL')
      /* c8 ignore next 3 -- gone between the read and the kill */
      } catch {
        // Gone meanwhile.
      }
    }
  }, graceMs)
  await exited
  clearTimeout(timer)
}

/**
 * Starts postgres on the cluster in `dir`, on `port` or a free one; resolves once it answers, with the `{ url, port,
 * pid, dir, stop }` of startPostgres and `halt`, which stops it and keeps the folder.
 */
async function serve (bin, dir, user, { answerWithinMs, graceMs, password, settings, port: given }) {
  const port = given ?? await freePort()
  const log = join(dir, 'postgres.log')
  const fd = openSync(log, 'a')
  // A throwaway: speed over durability. Nothing is flushed to disk, and a crash may lose it all, which is fine.
  const child = spawn(join(bin, 'postgres'), ['-D', join(dir, 'data'), '-p', String(port), '-k', dir,
    '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
    ...settings.flatMap(setting => ['-c', setting])],
  // Its log goes to a file, not a pipe: a pipe nobody reads would stall it once full.
  { cwd: dir, stdio: ['ignore', 'ignore', fd], ...user })
  closeSync(fd)
  let failure = null
  child.once('error', err => { failure = err.message })
  child.once('exit', () => { failure ??= `postgres exited before it answered: ${lastLine(readFileSync(log, 'utf8'))}` })
  let stopping = null
  const stop = () => {
    stopping ??= halt(child, graceMs).then(() => rmSync(dir, { recursive: true, force: true }))
    return stopping
  }
  const url = `postgres://postgres${password === undefined ? '' : `:${encodeURIComponent(password)}`}@127.0.0.1:${port}/postgres`
  const deadline = Date.now() + answerWithinMs
  while (failure === null) {
    if (await pingPostgres(url)) return { url, port, pid: child.pid, dir, stop, halt: () => halt(child, graceMs) }
    if (Date.now() > deadline) failure = `postgres on port ${port} did not answer within ${answerWithinMs / 1000} s`
    else await sleep(100)
  }
  await stop()
  throw new Error(failure)
}

/**
 * Starts a throwaway cluster: `initdb` in a temp folder, then `postgres` on a free port of 127.0.0.1, as the postgres
 * user when this runs as root. Resolves `{ url, port, pid, dir, stop, down, up, restart }` once it answers `SELECT 1`; `stop()`
 * shuts it down and removes its folder; `down()` shuts it down (fast shutdown: its connections are cut) and keeps its
 * folder, `up()` starts it again on the same port and data, resolving once it answers, and `restart()` does both. Rejects, leaving nothing behind, when PostgreSQL is
 * not installed, when as root there is no postgres user, and when the cluster does not start. Options: `password`,
 * which connections over TCP must then give (the url carries it; default none: every connection is trusted);
 * `settings`, more `name=value` server settings (the bench's `shared_preload_libraries=pg_stat_statements`); for the
 * tests of the failures, `bin`, the folder of the programs (default `postgresBinDir()`); `answerWithinMs` (30 s);
 * `graceMs`, how long a stop waits for the fast shutdown before it kills (10 s).
 */
export async function startPostgres ({ bin = postgresBinDir(), answerWithinMs = 30_000, graceMs = 10_000, password, settings = [] } = {}) {
  if (bin === null) throw new Error(`PostgreSQL's initdb and postgres were not found: ${POSTGRES_INSTALL_HINT}`)
  const user = clusterUser()
  const dir = mkdtempSync(join(tmpdir(), 'a2a-postgres-'))
  try {
    if (user.uid !== undefined) chownSync(dir, user.uid, user.gid)
    await initdb(bin, dir, user, password)
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  const options = { answerWithinMs, graceMs, password, settings }
  let current = await serve(bin, dir, user, options)
  return {
    url: current.url,
    port: current.port,
    dir,
    get pid () { return current.pid },
    stop: () => current.stop(),
    down: () => current.halt(),
    async up () {
      current = await serve(bin, dir, user, { ...options, port: current.port })
    },
    async restart () {
      await this.down()
      await this.up()
    }
  }
}
