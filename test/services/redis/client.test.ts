import { once } from 'node:events'
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { pino, type Logger } from 'pino'
import { Writable } from 'node:stream'
import type { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import type { CacheService } from '../../../schemas/config.js'
import { validateConfig } from '../../../services/config/validate.js'
import { redisService } from '../../../services/config/redis-service.js'
import { createRedisClient, quitWithin } from '../../../services/redis/client.js'
import { REDIS_UNREACHABLE, TEST_REDIS, silentServer, until } from '../../helper.js'

// This file owns db 12 of the tests' Redis (TEST_REDIS) (the push store tests own db 11; files run in parallel).
const DB = 12

function service (opts: Partial<CacheService> = {}): CacheService {
  return { type: 'cache', url: TEST_REDIS.url, db: DB, max_connections: 20, retry_on_timeout: true, ...opts }
}

function client (t: Test, ...args: Parameters<typeof createRedisClient>): Redis {
  const redis = createRedisClient(...args)
  t.teardown(() => quitWithin(redis, 500))
  return redis
}

function capture (): { log: Logger, lines: Array<{ level: number, msg: string }> } {
  const lines: Array<{ level: number, msg: string }> = []
  const stream = new Writable({
    write (chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)))
      cb()
    }
  })
  return { log: pino({ level: 'debug' }, stream), lines }
}

t.test('createRedisClient connects to the service db and answers commands', async t => {
  const redis = client(t, service())
  try {
    t.equal(await redis.ping(), 'PONG')
  } catch {
    t.fail(REDIS_UNREACHABLE)
    return
  }
  await redis.set('test:redis:db', 'here')
  const info = await redis.call('CLIENT', 'INFO') as string
  t.match(info, / db=12 /)
  t.equal(await redis.del('test:redis:db'), 1)
})

t.test('a /N path in the url picks the db, else db applies', async t => {
  t.equal(client(t, service({ url: `${TEST_REDIS.url}/3` })).options.db, 3)
  t.equal(client(t, service({ db: 5 })).options.db, 5)
})

t.test('timeouts default to 2 s and can be set; the client connects at once and keeps an offline queue', async t => {
  const defaults = client(t, service()).options
  t.match(defaults, { connectTimeout: 2_000, commandTimeout: 2_000, lazyConnect: false, enableOfflineQueue: true })
  const set = client(t, service(), { connectTimeoutMs: 100, commandTimeoutMs: 300 }).options
  t.match(set, { connectTimeout: 100, commandTimeout: 300 })
})

t.test('it reconnects forever, backing off by 100 ms up to 1 s', async t => {
  const { retryStrategy } = client(t, service()).options
  t.same([1, 2, 5, 10, 11, 1_000].map(n => retryStrategy!(n)), [100, 200, 500, 1_000, 1_000, 1_000])
})

t.test('retry_on_timeout re-sends a command once after a reconnect; off, a command fails at the first drop', async t => {
  t.match(client(t, service()).options, { maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: true })
  t.match(client(t, service({ retry_on_timeout: false })).options,
    { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false })
})

t.test('a command to an unreachable Redis fails instead of waiting, with or without a logger', async t => {
  const { log, lines } = capture()
  const logged = client(t, service({ url: 'redis://127.0.0.1:1' }), { log })
  const quiet = client(t, service({ url: 'redis://127.0.0.1:1', retry_on_timeout: false }))
  let attempts = 0
  logged.on('error', () => { attempts++ })
  await t.rejects(logged.get('x'), { name: 'MaxRetriesPerRequestError' })
  await t.rejects(quiet.get('x'), { name: 'MaxRetriesPerRequestError' })
  await until(() => attempts >= 4)
  // Several failed attempts, 100 ms apart and more: a warning when the first failed (and one a second later, on a
  // machine slow enough), with no stack.
  t.match(lines[0], { level: 40, msg: 'redis is not answering; retrying every 1 s', redis: 'redis://127.0.0.1:1', code: 'ECONNREFUSED' })
  t.ok(lines.length < attempts, `${lines.length} lines for ${attempts} attempts`)
  t.ok(lines.every(l => l.msg === lines[0].msg && !('err' in l)))
})

t.test('a stalled Redis fails a command after commandTimeoutMs', async t => {
  const port = await silentServer(t)
  const redis = client(t, service({ url: `redis://127.0.0.1:${port}` }), { commandTimeoutMs: 200 })
  const started = Date.now()
  await t.rejects(redis.get('x'), { message: 'Command timed out' })
  t.ok(Date.now() - started < 1_000)
})

t.test('the commands issued in one turn of the event loop go out in one write, on every connection of the client', async t => {
  const redis = client(t, service())
  await once(redis, 'ready')
  /** Counts the writes the socket makes (a corked socket hands its chunks to _writev in one call). */
  const spy = (): { writes: number, chunks: number } => {
    const socket = redis.stream as unknown as { _write: Function, _writev: Function }
    const seen = { writes: 0, chunks: 0 }
    const write = socket._write
    const writev = socket._writev
    socket._write = function (this: unknown, ...args: unknown[]) { seen.writes++; seen.chunks++; return write.apply(this, args) }
    socket._writev = function (this: unknown, chunks: unknown[], ...rest: unknown[]) { seen.writes++; seen.chunks += chunks.length; return writev.call(this, chunks, ...rest) }
    return seen
  }
  for (const round of ['first connection', 'after a reconnect']) {
    const seen = spy()
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.echo(`n${i}`)))
    t.same(replies, Array.from({ length: 20 }, (_, i) => `n${i}`), `${round}: every reply, in order`)
    t.same(seen, { writes: 1, chunks: 20 }, `${round}: twenty commands, one write`)
    if (round === 'first connection') {
      redis.stream.destroy()
      await once(redis, 'ready')
    }
  }
})

t.test('after an outage the client reconnects and says so once', async t => {
  // A proxy to the real Redis, on a port that is first closed, then opened.
  const probe = createServer()
  probe.listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  probe.close()
  await once(probe, 'close')

  const { log, lines } = capture()
  const redis = client(t, service({ url: `redis://127.0.0.1:${port}` }), { log })
  await once(redis, 'error')
  await once(redis, 'reconnecting')

  const sockets = new Set<Socket>()
  const proxy: Server = createServer(socket => {
    const upstream = createConnection(TEST_REDIS.port, TEST_REDIS.host)
    sockets.add(socket).add(upstream)
    socket.pipe(upstream).pipe(socket)
    socket.on('error', () => upstream.destroy())
    upstream.on('error', () => socket.destroy())
  })
  proxy.listen(port, '127.0.0.1')
  await once(proxy, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    proxy.close()
  })
  await once(redis, 'ready')
  t.equal(await redis.ping(), 'PONG')
  // One line when it failed (more only if the outage outlasted a second), and one when it was back.
  t.equal(lines[0].msg, 'redis is not answering; retrying every 1 s')
  t.equal(lines.at(-1)?.msg, 'redis connection restored')
  t.ok(lines.slice(0, -1).every(l => l.msg === lines[0].msg))
})

t.test('quitWithin quits a connected client', async t => {
  const redis = createRedisClient(service())
  await redis.ping()
  const started = Date.now()
  await quitWithin(redis, 1_000)
  t.ok(Date.now() - started < 1_000)
  if (redis.status !== 'end') await once(redis, 'end')
  t.equal(redis.status, 'end')
  // A second call has nothing to do.
  await t.resolves(quitWithin(redis, 1_000))
})

t.test('quitWithin disconnects hard when QUIT gets no answer in time', async t => {
  const port = await silentServer(t)
  const { log, lines } = capture()
  for (const logger of [log, undefined]) {
    const redis = createRedisClient(service({ url: `redis://127.0.0.1:${port}` }), { commandTimeoutMs: 5_000 })
    // A queued command keeps QUIT behind it, waiting for a connection that never becomes ready.
    const pending = redis.get('x').catch((err: Error) => err)
    const started = Date.now()
    await quitWithin(redis, 100, logger)
    t.ok(Date.now() - started < 1_000)
    t.match(await pending, { message: 'Connection is closed.' })
  }
  t.match(lines, [{ level: 40, msg: 'redis did not quit in time: disconnecting', timeoutMs: 100 }])
  t.equal(lines.length, 1)
})

t.test('redisService picks the first type: cache entry of the services', async t => {
  const none = validateConfig({ agent: { name: 'a' } })
  t.equal(redisService(none), undefined)
  const two = validateConfig({
    agent: { name: 'a' },
    services: { main: { type: 'cache', url: 'redis://main:6379' }, other: { type: 'cache', url: 'redis://other:6379' } }
  })
  t.match(redisService(two), { type: 'cache', url: 'redis://main:6379', db: 0, retry_on_timeout: true })
})
