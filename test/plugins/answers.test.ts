// reset() in plugins/answers.ts: how a connection is closed when its client stops taking an answer, on each kind of
// connection an embedding app may serve the plugin on.
import { once } from 'node:events'
import { createServer as createHttpServer, request, type ServerResponse } from 'node:http'
import { connect as connectHttp2, createServer as createHttp2Server, type ClientHttp2Session } from 'node:http2'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { until } from '../helper.js'
import pino from 'pino'
import { HttpAnswers, reset, untaken } from '../../plugins/answers.js'
import { AnswerBudget } from '../../services/serving/answer-budget.js'

t.test('on HTTP/2 only the stream is reset: the connection goes on serving its other streams', async t => {
  const server = createHttp2Server((req, res) => {
    if (req.url === '/cut') {
      res.writeHead(200)
      res.write('part of an answer')
      reset(res as unknown as ServerResponse)
    } else {
      res.end('whole')
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const session: ClientHttp2Session = connectHttp2(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  t.teardown(() => { session.close(); server.close() })

  const cut = session.request({ ':path': '/cut' })
  cut.resume()
  const [error] = await Promise.race([
    once(cut, 'error'),
    once(cut, 'close').then(() => [new Error(`closed with code ${cut.rstCode}`)])
  ]) as [Error]
  t.match(String(error), /NGHTTP2|code [1-9]/, 'the stream ends with a reset, not a clean end')

  const next = session.request({ ':path': '/next' })
  let body = ''
  next.setEncoding('utf8')
  next.on('data', (chunk: string) => { body += chunk })
  await once(next, 'end')
  t.equal(body, 'whole', 'the same connection answers the next request')
})

t.test('on HTTP/1 a socket already destroyed is left as it is, and nothing throws', async t => {
  let thrown: unknown = null
  const server = createHttpServer((_req, res) => {
    res.socket?.destroy()
    try { reset(res) } catch (err) { thrown = err }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const req = request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', path: '/' })
  req.end()
  const [err] = await once(req, 'error') as [NodeJS.ErrnoException]
  t.equal(err.code, 'ECONNRESET', 'the client sees its connection gone')
  t.equal(thrown, null)
})

t.test('watch leaves alone a response that is done, gone or already watched; a write under way counts what is not yet sent', async t => {
  const answers = new HttpAnswers(new AnswerBudget({ maxBytes: Infinity, maxBytesPerConnection: Infinity }), 60_000, pino({ level: 'silent' }))
  t.teardown(() => answers.close())
  let seen: ServerResponse | undefined
  const server = createHttpServer((_req, res) => {
    seen = res
    res.write('x'.repeat(8 * 1024 * 1024))
    // (With the headers and the chunk's framing: a few hundred bytes more.)
    t.ok(untaken(res) <= 8 * 1024 * 1024 + 1024, `a write under way is not counted twice (${untaken(res)})`)
    answers.watch(res)
    answers.watch(res)
    t.equal(answers.watching, 1, 'watched once')
    res.end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const req = request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', path: '/' })
  req.end()
  const [res] = await once(req, 'response')
  res.resume()
  await once(res, 'end')
  await until(() => seen?.writableFinished === true)
  answers.watch(seen as ServerResponse)
  t.equal(answers.watching, 0, 'a finished response is not watched')
})
