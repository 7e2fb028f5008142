import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import { logFormatOf, prettyMessage, prettyStream } from '../../../services/kernel/logger.js'

t.test('auto is pretty on a terminal outside CI, and json anywhere else; json and pretty are as asked', async t => {
  t.equal(logFormatOf('auto', { isTTY: true, env: {} }), 'pretty')
  t.equal(logFormatOf('auto', { isTTY: true, env: { CI: '' } }), 'pretty', 'an empty CI is unset')
  t.equal(logFormatOf('auto', { isTTY: true, env: { CI: 'false' } }), 'pretty')
  t.equal(logFormatOf('auto', { isTTY: true, env: { CI: 'true' } }), 'json', 'CI')
  t.equal(logFormatOf('auto', { isTTY: false, env: {} }), 'json', 'a pipe or a file')
  t.equal(logFormatOf('auto', { env: {} }), 'json', 'no stdout to ask')
  t.equal(logFormatOf('json', { isTTY: true, env: {} }), 'json')
  t.equal(logFormatOf('pretty', { isTTY: false, env: { CI: 'true' } }), 'pretty')
})

t.test('a pretty line about a request starts with its method, url, status and time', async t => {
  const req = { method: 'GET', url: '/ready' }
  t.equal(prettyMessage({ msg: 'request completed', req, res: { statusCode: 503 }, responseTime: 12.345 }, 'msg'), 'GET /ready 503 12.3 ms')
  t.equal(prettyMessage({ msg: 'request errored', req, res: { statusCode: 500 }, responseTime: 1 }, 'msg'), 'GET /ready 500 1.0 ms request errored')
  t.equal(prettyMessage({ msg: 'refused', req }, 'msg'), 'GET /ready refused', 'no answer yet')
  t.equal(prettyMessage({ msg: 'agent serving', req: null }, 'msg'), 'agent serving')
  t.equal(prettyMessage({ msg: 'agent serving' }, 'msg'), 'agent serving')
})

t.test('prettyStream writes one readable line per entry, the request fields in its message', async t => {
  let text = ''
  const destination = new Writable({ write (chunk, _enc, cb) { text += String(chunk); cb() } })
  const log = pino({ level: 'info' }, await prettyStream(destination))
  log.info({ req: { method: 'POST', url: '/' }, res: { statusCode: 200 }, responseTime: 2.04, reqId: 'req-1' }, 'request completed')
  log.warn({ component: 'redis', code: 'ECONNREFUSED' }, 'redis is not answering; retrying every 1 s')
  const lines = text.trimEnd().split('\n')
  t.equal(lines.length, 2)
  t.match(lines[0], /^\[\d\d:\d\d:\d\d\.\d\d\d\] INFO: POST \/ 200 2\.0 ms \{"reqId":"req-1"\}$/)
  t.match(lines[1], /^\[[\d:.]+\] WARN: redis is not answering; retrying every 1 s \{"component":"redis","code":"ECONNREFUSED"\}$/)
  t.notOk(text.includes('\u001b['), 'no colours in a stream that is not a terminal')
  t.notMatch(text, /"pid"|hostname|remoteAddress/)
})

t.test('prettyStream writes to stdout when given no destination', async t => {
  const stream = await prettyStream()
  t.equal(typeof stream.write, 'function')
  // pino-pretty's stdout is a SonicBoom on fd 1, written synchronously: nothing is written here, nothing to close.
  t.equal((stream as unknown as { fd?: number }).fd ?? 1, 1)
})
