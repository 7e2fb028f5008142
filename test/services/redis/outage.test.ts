import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import t from 'tap'
import { OutageReport, isConnectionError, logUnlessConnectionError, redisAddress } from '../../../services/redis/outage.js'

function capture (): { log: Logger, lines: any[] } {
  const lines: any[] = []
  const stream = new Writable({
    write (chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)))
      cb()
    }
  })
  return { log: pino({ level: 'debug' }, stream), lines }
}

const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6399'), { code: 'ECONNREFUSED', syscall: 'connect' })

t.test('isConnectionError: refused, reset and timed-out connections, and commands that found none', async t => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']) {
    t.ok(isConnectionError(Object.assign(new Error('x'), { code })), code)
  }
  t.ok(isConnectionError(Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' })))
  t.ok(isConnectionError(new Error('Connection is closed.')))
  t.ok(isConnectionError(new Error('Command timed out')))
  t.notOk(isConnectionError(Object.assign(new Error('WRONGPASS invalid username-password pair'), { name: 'ReplyError' })))
  t.notOk(isConnectionError(Object.assign(new Error('x'), { code: 42 })), 'a code that is not a string')
  t.notOk(isConnectionError('ECONNREFUSED'), 'not an Error')
  t.notOk(isConnectionError(undefined))
})

t.test('redisAddress leaves the credentials out of the url it logs', async t => {
  t.equal(redisAddress('redis://user:s3cret@cache.internal:6380/2'), 'redis://cache.internal:6380/2')
  t.equal(redisAddress('redis://:s3cret@127.0.0.1:6379'), 'redis://127.0.0.1:6379')
  t.equal(redisAddress('redis://127.0.0.1:6379'), 'redis://127.0.0.1:6379')
  t.equal(redisAddress('not a url s3cret'), '(a url that does not parse)')
})

t.test('an outage is reported at once, then at doubling intervals up to a minute, never once per attempt', async t => {
  const { log, lines } = capture()
  let now = 1_000_000
  const report = new OutageReport({ log, url: 'redis://:s3cret@127.0.0.1:6399', retryMs: 1_000, now: () => now })
  // A failed attempt every second for five minutes.
  const reportedAt: number[] = []
  for (let s = 0; s <= 300; s++) {
    now = 1_000_000 + s * 1_000
    const before = lines.length
    report.failed(refused())
    if (lines.length > before) reportedAt.push(s)
  }
  t.same(reportedAt, [0, 1, 3, 7, 15, 31, 63, 123, 183, 243], 'at once, then after 1, 2, 4 … 60 s')
  t.match(lines[0], { level: 40, msg: 'redis is not answering; retrying every 1 s', redis: 'redis://127.0.0.1:6399', code: 'ECONNREFUSED', downForS: 0 })
  t.match(lines[3], { downForS: 7 })
  t.notOk(JSON.stringify(lines).includes('s3cret'), 'the password is not logged')
  t.ok(lines.every(l => l.err === undefined), 'no error object, so no stack')

  now += 2_500
  report.restored()
  t.match(lines.at(-1), { level: 30, msg: 'redis connection restored', redis: 'redis://127.0.0.1:6399', downForS: 303 })
  report.restored()
  t.equal(lines.length, 11, 'restored once per outage')

  // The next outage starts its schedule afresh.
  report.failed(refused())
  t.match(lines.at(-1), { msg: 'redis is not answering; retrying every 1 s', downForS: 0 })
})

t.test('an error that is not a plain outage is reported with the error, on the same schedule', async t => {
  const { log, lines } = capture()
  let now = 0
  const report = new OutageReport({ log, url: 'redis://127.0.0.1:6399', retryMs: 500, now: () => now })
  const wrongPass = Object.assign(new Error('WRONGPASS invalid username-password pair'), { name: 'ReplyError' })
  report.failed(wrongPass)
  now = 200
  report.failed(wrongPass)
  t.equal(lines.length, 1)
  t.match(lines[0], { level: 40, msg: 'redis connection failed; retrying every 0.5 s', err: { name: 'ReplyError', message: /WRONGPASS/ } })
  report.restored()
  t.equal(lines.length, 2)
})

t.test('a connected client that never failed reports nothing, with the real clock', async t => {
  const { log, lines } = capture()
  const report = new OutageReport({ log, url: 'redis://127.0.0.1:6379', retryMs: 1_000 })
  report.restored()
  t.same(lines, [])
  // A connection error with no code is named by its class.
  report.failed(Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' }))
  t.match(lines, [{ msg: 'redis is not answering; retrying every 1 s', code: 'MaxRetriesPerRequestError' }])
})

t.test('logUnlessConnectionError leaves connection errors to the outage report and logs the others', async t => {
  const { log, lines } = capture()
  const listener = logUnlessConnectionError(log, 'webhook worker error')
  listener(refused())
  listener(new Error('Connection is closed.'))
  t.same(lines, [])
  listener(new Error('Missing lock for job 7'))
  t.match(lines, [{ level: 40, msg: 'webhook worker error', err: { message: 'Missing lock for job 7' } }])
})
