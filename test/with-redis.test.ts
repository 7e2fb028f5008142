// The test command's Redis (scripts/with-redis.js): the one A2A_TEST_REDIS_URL names, or a throwaway redis-server it
// starts and stops, or one line on how to install redis-server. Run as `npm test` runs it, in a process of its own.
import { once } from 'node:events'
import { connect, createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { hasRedisServer, ping, startRedis } from '../scripts/redis-server.js'
import { TEST_REDIS, clearDb, privateRedis, silentServer, until } from './helper.js'
import { runChild, spawnChild, type ChildRun, type Teardown } from './processes.js'

const WRAPPER = fileURLToPath(new URL('../scripts/with-redis.js', import.meta.url))
// What the wrapper runs in these tests: prints the URL it was given, what a Redis there answers to PING, and whether
// the tests may empty its databases (A2A_TEST_REDIS_OWNED).
const PROBE = `const url = new URL(process.env.A2A_TEST_REDIS_URL)
const socket = require('node:net').connect(Number(url.port), url.hostname)
const owned = process.env.A2A_TEST_REDIS_OWNED === '1' ? 'owned' : 'given'
socket.on('error', err => { console.log(process.env.A2A_TEST_REDIS_URL + ' ' + err.code + ' ' + owned); process.exit(0) })
socket.on('data', data => { console.log(process.env.A2A_TEST_REDIS_URL + ' ' + String(data).trim() + ' ' + owned); process.exit(Number(process.env.EXIT_WITH ?? 0)) })
socket.write('PING\\r\\n')`

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
  t.equal(run.status, 0)
  const [url, reply, owned] = run.stdout.trim().split(' ')
  t.equal(new URL(url).hostname, '127.0.0.1')
  t.not(url, TEST_REDIS.url, 'not the Redis of this run')
  t.not(new URL(url).port, '6379', 'never a Redis that happens to answer on the usual port')
  t.equal(reply, '+PONG', 'the throwaway Redis answered the command')
  t.equal(owned, 'owned')
  t.equal(run.stderr, '')
  t.notOk(await listening(Number(new URL(url).port)), 'nothing listens there once the wrapper has exited')
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
  t.equal(none.stderr, 'usage: node scripts/with-redis.js COMMAND [ARGS...]\n')
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
