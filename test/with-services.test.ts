// The test command's services (scripts/with-services.js): the Redis and the PostgreSQL that A2A_TEST_REDIS_URL and
// A2A_TEST_POSTGRES_URL name, or throwaways it starts and stops, or one line on how to install what is missing. Run as
// `npm test` runs it, in a process of its own. Also the throwaway cluster itself (scripts/postgres-server.js) and the
// tests' own databases on the run's PostgreSQL (testDatabase).
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { pingPostgres, postgresBinDir, startPostgres } from '../scripts/postgres-server.js'
import { hasRedisServer, ping, startRedis } from '../scripts/redis-server.js'
import { TEST_REDIS, clearDb, privateRedis, silentServer, testDatabase, until } from './helper.js'
import { runChild, spawnChild, type ChildRun, type Teardown } from './processes.js'

const WRAPPER = fileURLToPath(new URL('../scripts/with-services.js', import.meta.url))
// What the wrapper runs in these tests: prints the URL it was given, what a Redis there answers to PING, and whether
// the tests may empty its databases (A2A_TEST_REDIS_OWNED).
const PROBE = `const url = new URL(process.env.A2A_TEST_REDIS_URL)
const socket = require('node:net').connect(Number(url.port), url.hostname)
const owned = process.env.A2A_TEST_REDIS_OWNED === '1' ? 'owned' : 'given'
socket.on('error', err => { console.log(process.env.A2A_TEST_REDIS_URL + ' ' + err.code + ' ' + owned); process.exit(0) })
socket.on('data', data => { console.log(process.env.A2A_TEST_REDIS_URL + ' ' + String(data).trim() + ' ' + owned); process.exit(Number(process.env.EXIT_WITH ?? 0)) })
socket.write('PING\\r\\n')`

// The same for PostgreSQL: the URL it was given, what a server there answers to `SELECT 1` (or the error's code), and
// whether the run started it (A2A_TEST_POSTGRES_OWNED).
const PG_PROBE = `const url = process.env.A2A_TEST_POSTGRES_URL
const owned = process.env.A2A_TEST_POSTGRES_OWNED === '1' ? 'owned' : 'given'
const client = new (require(${JSON.stringify(createRequire(import.meta.url).resolve('pg'))}).Client)({ connectionString: url, connectionTimeoutMillis: 10000 })
client.on('error', () => {})
client.connect().then(() => client.query('SELECT 1 AS one')).then(r => String(r.rows[0].one), err => err.code)
  .then(answer => { console.log(url + ' ' + answer + ' ' + owned); return client.end() })`

// The wrapper records no coverage: like the bench's scripts, it is a tool around the suite, not the server.
function wrap (t: Teardown, args: string[], env: Record<string, string> = {}): Promise<ChildRun> {
  return runChild(t, process.execPath, [WRAPPER, ...args], { env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', ...env } })
}

async function closedPort (): Promise<number> {
  const srv = createServer().listen(0, '127.0.0.1')
  await once(srv, 'listening')
  const { port } = srv.address() as { port: number }
  srv.close()
  await once(srv, 'close')
  return port
}

/** Whether anything accepts a connection on the port. */
async function listening (port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1')
  try {
    await once(socket, 'connect')
    return true
  } catch {
    return false
  } finally {
    socket.destroy()
  }
}

/**
 * What a probe printed (`<url> <answer> owned|...`) when the wrapper started a throwaway server for it: a server of
 * its own, not this run's, never on the usual port, that answered, that the tests own, and that is gone once the
 * wrapper has exited. Its URL.
 */
async function servedByThrowaway (t: Test, run: { status: number | null, stdout: string, stderr: string },
  expected: { ours: string | undefined, usualPort: string, answer: string }): Promise<string> {
  t.equal(run.status, 0, run.stderr)
  const [url, answer, owned] = run.stdout.trim().split(' ')
  t.not(url, expected.ours, 'not the server of this run')
  t.not(new URL(url).port, expected.usualPort, 'never a server that happens to answer on the usual port')
  t.equal(answer, expected.answer, 'the throwaway server answered the command')
  t.equal(owned, 'owned')
  t.equal(run.stderr, '')
  t.notOk(await listening(Number(new URL(url).port)), 'nothing listens there once the wrapper has exited')
  return url
}

t.test('the Redis A2A_TEST_REDIS_URL names is used, as given, and the command\'s status is the exit status', async t => {
  const run = await wrap(t, ['node', '-e', PROBE], { A2A_TEST_REDIS_URL: TEST_REDIS.url, A2A_TEST_REDIS_OWNED: '1', EXIT_WITH: '3' })
  t.equal(run.status, 3)
  t.equal(run.stdout, `${TEST_REDIS.url} +PONG given\n`, 'a Redis the run did not start is never the tests\' to empty')
  t.equal(run.stderr, '')
})

t.test('a Redis named in A2A_TEST_REDIS_URL that does not answer fails the run at once, in one line', async t => {
  const silent = `redis://127.0.0.1:${await silentServer(t)}`
  for (const wanted of [`redis://127.0.0.1:${await closedPort()}`, silent]) {
    const run = await wrap(t, ['node', '-e', PROBE], { A2A_TEST_REDIS_URL: wanted })
    t.equal(run.status, 1, wanted)
    t.equal(run.stdout, '', 'the command never ran')
    t.equal(run.stderr, `No Redis answers at ${wanted} (A2A_TEST_REDIS_URL): start it, or unset the variable to let the run ` +
      'start a throwaway redis-server.\n')
  }
})

t.test('without A2A_TEST_REDIS_URL, a throwaway redis-server serves the run, is the tests\' own, and is stopped at its end', async t => {
  const run = await wrap(t, ['node', '-e', PROBE], { A2A_TEST_REDIS_URL: '' })
  const url = await servedByThrowaway(t, run, { ours: TEST_REDIS.url, usualPort: '6379', answer: '+PONG' })
  t.equal(new URL(url).hostname, '127.0.0.1')
})

t.test('without redis-server on the PATH it fails at once with one line on how to install it', async t => {
  const run = await wrap(t, [process.execPath, '-e', 'console.log("ran")'], { PATH: '/nonexistent' })
  t.equal(run.status, 1)
  t.equal(run.stdout, '', 'the command never ran')
  t.equal(run.stderr, 'The tests need redis-server on the PATH: install it (Debian/Ubuntu: apt-get install -y redis-server; ' +
    'macOS: brew install redis).\n')
})

t.test('a missing command and a missing argument are errors of their own', async t => {
  const none = await wrap(t, [])
  t.equal(none.status, 2)
  t.equal(none.stderr, 'usage: node scripts/with-services.js COMMAND [ARGS...]\n')
  const unknown = await wrap(t, ['no-such-command-a2a'], { A2A_TEST_REDIS_URL: TEST_REDIS.url })
  t.equal(unknown.status, 127)
  t.match(unknown.stderr, /^no-such-command-a2a: spawn no-such-command-a2a ENOENT\n$/)
})

t.test('SIGTERM to the wrapper reaches the command; the exit status says which signal ended it', async t => {
  const child = spawnChild(t, process.execPath, [WRAPPER, 'node', '-e', 'console.log(process.pid); setInterval(() => {}, 1000)'],
    { env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', A2A_TEST_REDIS_URL: TEST_REDIS.url } })
  let stdout = ''
  child.stdout?.on('data', chunk => { stdout += chunk })
  const closed = once(child, 'close')
  await until(() => stdout.endsWith('\n'), 2000)
  const pid = Number(stdout.trim())
  child.kill('SIGTERM')
  const [status] = await closed
  t.equal(status, 143, '128 + SIGTERM')
  t.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'the command is gone')
})

t.test('the throwaway redis-server itself: started on a free port, answering, stopped once; without the binary, a clear error', async t => {
  t.equal(hasRedisServer(), true)
  const redis = await startRedis()
  t.match(redis.url, /^redis:\/\/127\.0\.0\.1:\d+$/)
  t.equal(await ping(redis.url), true)
  await redis.stop()
  await redis.stop()
  t.equal(await ping(redis.url), false, 'gone once stopped')
  const path = process.env.PATH
  process.env.PATH = '/nonexistent'
  try {
    t.equal(hasRedisServer(), false)
    await t.rejects(startRedis('no redis-server here'), { message: 'no redis-server here' })
    await t.rejects(startRedis(), { message: /^redis-server is not on the PATH: install it \(Debian\/Ubuntu: apt-get install -y redis-server/ })
  } finally {
    process.env.PATH = path
  }
})

t.test('on a Redis the run did not start, the tests use only databases empty at first sight, and delete only their own keys', async t => {
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const developers = new Redis(`${redis.url}/3`)
  const ours = new Redis(`${redis.url}/4`)
  t.teardown(() => { developers.disconnect(); ours.disconnect() })
  await developers.set('precious', 'data')
  await t.rejects(clearDb(developers, 3, false), {
    message: /^db 3 of the Redis at .* holds 1 keys: the tests use only databases that are empty when they start/
  })
  t.equal(await developers.get('precious'), 'data', 'a database holding keys is left as it is')
  await clearDb(ours, 4, false)
  await ours.set('a', '1')
  await ours.set('b', '2')
  await clearDb(ours, 4, false)
  t.equal(await ours.dbsize(), 0, 'a database empty at first sight is emptied again of what the tests wrote')
  t.equal(await developers.get('precious'), 'data', 'no other database is touched')
  await ours.set('c', '3')
  await clearDb(ours, 4, true)
  t.equal(await ours.dbsize(), 0, 'a Redis the run started is flushed')
})

/** Whether `pid` is a live process (a zombie, dead and not yet reaped, is not). */
function alive (pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/** The processes `pid` started: postgres's own each lead a process group of their own. */
function childrenOf (pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
}

/** The real user id process `pid` runs as, or null once it has exited (a backend, say, whose client went away). */
function uidOf (pid: number): number | null {
  try {
    return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
  } catch {
    return null
  }
}

/** The user the throwaway cluster runs as: this process's own, or the postgres user's when root. */
function clusterUid (): number {
  if (process.getuid?.() !== 0) return process.getuid?.() ?? -1
  const entry = readFileSync('/etc/passwd', 'utf8').split('\n').find(line => line.startsWith('postgres:'))
  return Number(entry?.split(':')[2])
}

/** A shell script `name` in `dir`, executable. */
function script (dir: string, name: string, body: string): void {
  writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 })
}

/** Runs `fn` with `path` as the PATH of this process (the programs it looks up). */
async function withPath<T> (path: string, fn: () => T | Promise<T>): Promise<T> {
  const saved = process.env.PATH
  process.env.PATH = path
  try {
    return await fn()
  } finally {
    process.env.PATH = saved
  }
}

t.test('the PostgreSQL A2A_TEST_POSTGRES_URL names is used, as given, and is never the tests\' own', async t => {
  const given = process.env.A2A_TEST_POSTGRES_URL as string
  const run = await wrap(t, ['node', '-e', PG_PROBE], { A2A_TEST_REDIS_URL: TEST_REDIS.url, A2A_TEST_POSTGRES_URL: given, A2A_TEST_POSTGRES_OWNED: '1' })
  t.equal(run.status, 0, run.stderr)
  t.equal(run.stdout, `${given} 1 given\n`)
  t.equal(run.stderr, '')
})

t.test('a PostgreSQL named in A2A_TEST_POSTGRES_URL that does not answer fails the run at once, in one line', async t => {
  const silent = `postgres://postgres@127.0.0.1:${await silentServer(t)}/postgres`
  for (const wanted of [`postgres://postgres@127.0.0.1:${await closedPort()}/postgres`, silent]) {
    const run = await wrap(t, ['node', '-e', PG_PROBE], { A2A_TEST_REDIS_URL: TEST_REDIS.url, A2A_TEST_POSTGRES_URL: wanted })
    t.equal(run.status, 1, wanted)
    t.equal(run.stdout, '', 'the command never ran')
    t.equal(run.stderr, `No PostgreSQL answers at ${wanted} (A2A_TEST_POSTGRES_URL): start it, or unset the variable to let the ` +
      'run start a throwaway cluster.\n')
  }
})

t.test('without A2A_TEST_POSTGRES_URL, a throwaway cluster serves the run, is the tests\' own, and is stopped at its end', async t => {
  const run = await wrap(t, ['node', '-e', PG_PROBE], { A2A_TEST_REDIS_URL: TEST_REDIS.url, A2A_TEST_POSTGRES_URL: '' })
  const url = await servedByThrowaway(t, run, { ours: process.env.A2A_TEST_POSTGRES_URL, usualPort: '5432', answer: '1' })
  t.match(url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/)
})

t.test('the throwaway cluster itself: on a free port, answering, not as root; stopped once, it leaves no folder and no process', async t => {
  const cluster = await startPostgres()
  t.teardown(() => cluster.stop())
  t.equal(cluster.url, `postgres://postgres@127.0.0.1:${cluster.port}/postgres`)
  t.not(cluster.url, process.env.A2A_TEST_POSTGRES_URL, 'a cluster of its own')
  t.equal(await pingPostgres(cluster.url), true)
  t.ok(existsSync(join(cluster.dir, 'data', 'PG_VERSION')), 'initdb made the cluster in its folder')
  const processes = [cluster.pid, ...childrenOf(cluster.pid)]
  t.ok(processes.length > 1, 'postgres and the processes it started')
  t.same([...new Set(processes.map(uidOf).filter(uid => uid !== null))], [clusterUid()], 'all run as the postgres user when this runs as root')
  await cluster.stop()
  await cluster.stop()
  t.notOk(existsSync(cluster.dir), 'its folder is removed')
  t.same(processes.filter(alive), [], 'postgres and every process it started are gone')
  t.equal(await pingPostgres(cluster.url), false)
})

t.test('a cluster with a password refuses a connection without it; restarted, it answers on its port with its data', async t => {
  const cluster = await startPostgres({ password: 'p@ss word', settings: ['application_name=from-the-settings'] })
  t.teardown(() => cluster.stop())
  t.equal(cluster.url, `postgres://postgres:p%40ss%20word@127.0.0.1:${cluster.port}/postgres`)
  t.equal(await pingPostgres(cluster.url), true)
  t.equal(await pingPostgres(`postgres://postgres@127.0.0.1:${cluster.port}/postgres`), false, 'no password, no connection')
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: cluster.url })
  await client.connect()
  t.same((await client.query('SHOW application_name')).rows, [{ application_name: 'from-the-settings' }], 'with the settings given')
  await client.query('CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)')
  await client.end()
  const before = cluster.pid
  await cluster.restart()
  t.not(cluster.pid, before, 'a new postgres')
  const again = new pg.Client({ connectionString: cluster.url })
  await again.connect()
  t.same((await again.query('SELECT x FROM kept')).rows, [{ x: 7 }], 'the same data, on the same port')
  await again.end()
})

t.test('a cluster that does not start leaves nothing behind, and says why: initdb failing, postgres exiting, or not answering', async t => {
  // Stand-ins for the programs, in a folder of the system's temp folder that the postgres user may read (they run
  // as it when this runs as root; the test's own folder may be in a clone it cannot enter).
  const standIns = mkdtempSync(join(tmpdir(), 'a2a-stand-ins-'))
  chmodSync(standIns, 0o755)
  t.teardown(() => rmSync(standIns, { recursive: true, force: true }))
  const bin = (name: string, initdb: string, postgres: string): string => {
    const dir = join(standIns, name)
    mkdirSync(dir, { mode: 0o755 })
    script(dir, 'initdb', initdb)
    script(dir, 'postgres', postgres)
    return dir
  }
  const folders = () => readdirSync(tmpdir()).filter(name => name.startsWith('a2a-postgres-')).sort()
  const before = folders()
  await t.rejects(startPostgres({ bin: bin('failing', 'echo "initdb: could not create directory" >&2; exit 1', 'exit 0') }),
    { message: 'initdb failed: initdb: could not create directory' })
  await t.rejects(startPostgres({ bin: bin('quiet', 'exit 3', 'exit 0') }), { message: /^initdb failed: Command failed: .*initdb/ })
  await t.rejects(startPostgres({ bin: null }), { message: /^PostgreSQL's initdb and postgres were not found: install it \(Debian/ })
  await t.rejects(startPostgres({ bin: bin('exiting', 'exit 0', 'echo "FATAL:  bad setting" >&2; exit 1') }),
    { message: 'postgres exited before it answered: FATAL:  bad setting' })
  // One that never answers and ignores the fast shutdown: the stop kills it once its grace is over.
  await t.rejects(startPostgres({ bin: bin('silent', 'exit 0', "trap '' INT; exec sleep 60"), answerWithinMs: 300, graceMs: 200 }),
    { message: /^postgres on port \d+ did not answer within 0\.3 s$/ })
  t.same(folders(), before, 'no folder is left')
})

t.test('as root without a postgres user to run the cluster as, a clear error', { skip: process.getuid?.() !== 0 && 'only root needs the postgres user' }, async t => {
  const bin = t.testdir({})
  script(bin, 'id', 'exit 1')
  await withPath(`${bin}:${process.env.PATH}`, () => t.rejects(startPostgres(), {
    message: /^PostgreSQL refuses to run as root and there is no postgres user to run the throwaway cluster as: create one/
  }))
})

t.test('the PostgreSQL programs are found on the PATH, else through pg_config, else under /usr/lib/postgresql', async t => {
  const dir = t.testdir({ linked: {}, installed: {}, config: {}, lib: { 9.6: { bin: {} }, 10: { bin: {} }, 11: { bin: {} }, notes: {} }, empty: {} })
  for (const bin of ['installed', 'lib/9.6/bin', 'lib/10/bin']) {
    for (const name of ['initdb', 'postgres']) script(join(dir, bin), name, 'exit 0')
  }
  script(join(dir, 'lib/11/bin'), 'initdb', 'exit 0')
  symlinkSync(join(dir, 'installed', 'initdb'), join(dir, 'linked', 'initdb'))
  script(join(dir, 'config'), 'pg_config', `echo ${join(dir, 'installed')}`)
  const lib = join(dir, 'lib')
  t.equal(await withPath(join(dir, 'installed'), () => postgresBinDir(lib)), join(dir, 'installed'), 'initdb on the PATH')
  t.equal(await withPath(join(dir, 'linked'), () => postgresBinDir(lib)), join(dir, 'installed'), 'through a symlink, where postgres is too')
  t.equal(await withPath(join(dir, 'config'), () => postgresBinDir(lib)), join(dir, 'installed'), 'pg_config --bindir')
  t.equal(await withPath('/nonexistent', () => postgresBinDir(lib)), join(lib, '10', 'bin'), 'the newest version that has both')
  t.equal(await withPath('/nonexistent', () => postgresBinDir(join(dir, 'empty'))), null, 'none')
  t.equal(await withPath('/nonexistent', () => postgresBinDir(join(dir, 'missing'))), null, 'no such folder')
})

t.test('testDatabase: a database of the test\'s own, dropped at teardown with what is connected to it; no other is touched', async t => {
  const server = process.env.A2A_TEST_POSTGRES_URL as string
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: server })
  await admin.connect()
  // Named as the helper names its own, but not made by it: it must survive.
  const bystander = `a2a_test_${randomBytes(8).toString('hex')}`
  await admin.query(`CREATE DATABASE ${bystander}`)
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${bystander}`)
    await admin.end()
  })
  const databases = async (): Promise<string[]> => (await admin.query('SELECT datname FROM pg_database')).rows.map(row => row.datname)
  // Other test files make and drop databases of their own meanwhile: compare the rest.
  const before = (await databases()).filter(name => !name.startsWith('a2a_test_') || name === bystander)
  let name = ''
  const open: { client?: import('pg').Client } = {}
  t.teardown(() => open.client?.end().catch(() => {}))
  await t.test('a test that uses one, and leaves a connection to it open', async t => {
    const url = await testDatabase(t)
    name = new URL(url).pathname.slice(1)
    t.match(name, /^a2a_test_[0-9a-f]{16}$/)
    t.equal(new URL(url).host, new URL(server).host, 'on the run\'s server')
    t.ok((await databases()).includes(name), 'it exists')
    open.client = new pg.Client({ connectionString: url })
    open.client.on('error', () => {})
    await open.client.connect()
    t.equal((await open.client.query('SELECT current_database() AS db')).rows[0].db, name, 'its URL leads to it')
  })
  const after = await databases()
  t.notOk(after.includes(name), 'dropped at teardown')
  await t.rejects(async () => { await open.client?.query('SELECT 1') }, 'the connection left open was ended')
  t.same(before.filter(db => !after.includes(db)), [], 'every other database is still there')
  t.ok(after.includes(bystander), 'one named like the tests\' own, that the helper did not make, too')
})

t.test('testDatabase without a PostgreSQL says how to get one', async t => {
  const given = process.env.A2A_TEST_POSTGRES_URL
  const closed = `postgres://postgres@127.0.0.1:${await closedPort()}/postgres`
  try {
    process.env.A2A_TEST_POSTGRES_URL = closed
    await t.rejects(testDatabase(t), { message: `PostgreSQL is not reachable at ${closed} (A2A_TEST_POSTGRES_URL): start it, or unset the variable and run the suite with npm test or npm run test:only -- <file>, which start a throwaway cluster` })
    process.env.A2A_TEST_POSTGRES_URL = ''
    await t.rejects(testDatabase(t), { message: /^A2A_TEST_POSTGRES_URL is not set: run the suite with npm test/ })
  } finally {
    if (given === undefined) delete process.env.A2A_TEST_POSTGRES_URL
    else process.env.A2A_TEST_POSTGRES_URL = given
  }
})
