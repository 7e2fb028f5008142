import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import t, { type Test } from 'tap'
import { createServer, REDACT_PATHS } from '../../../server.js'
import { validateConfig } from '../../../services/config/load.js'
import { LazyChildLogger } from '../../../services/kernel/lazy-logger.js'
import type { Logger as ServiceLogger } from '../../../services/kernel/logger.js'

/** A pino logger writing JSON lines into an array, with the standalone server's redaction, and a count of its children. */
function parent (level: string): { log: Logger, lines: any[], children: () => number } {
  const lines: any[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb() } })
  const log = pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, stream)
  let children = 0
  // Counts every child made from the root or its children; `this` is kept, so each child has its own bindings.
  const child = log.child
  log.child = function (this: Logger, ...args: Parameters<Logger['child']>) {
    children++
    return child.apply(this, args)
  } as Logger['child']
  return { log, lines, children: () => children }
}

t.test('the child is made at the first line written at an enabled level, once, with the bindings and redaction', async t => {
  const { log, lines, children } = parent('warn')
  const lazy = new LazyChildLogger(log, { reqId: 'req-1' })
  lazy.trace('not written')
  lazy.debug('not written')
  lazy.info({ step: 1 }, 'not written')
  lazy.silent()
  t.equal(children(), 0, 'nothing at a disabled level makes the child')
  t.same(lines, [])
  t.equal(lazy.level, 'warn')
  t.equal(lazy.isLevelEnabled('info'), false)
  t.equal(lazy.isLevelEnabled('warn'), true)

  lazy.warn({ config: { token: 'sekret-1' } }, 'first')
  lazy.error('second')
  lazy.fatal('third')
  t.equal(children(), 1, 'the child is made once')
  t.match(lines, [
    { reqId: 'req-1', level: 40, msg: 'first', config: { token: '[redacted]' } },
    { reqId: 'req-1', level: 50, msg: 'second' },
    { reqId: 'req-1', level: 60, msg: 'third' }
  ])
  t.notMatch(JSON.stringify(lines), /sekret/)
})

t.test('setting the level makes the child and changes only its level; its own children carry both bindings', async t => {
  const { log, lines } = parent('warn')
  const lazy = new LazyChildLogger(log, { reqId: 'req-2' })
  lazy.level = 'debug'
  t.equal(lazy.level, 'debug')
  t.equal(log.level, 'warn', 'the parent keeps its level')
  lazy.debug('now written')
  const grandchild = lazy.child({ step: 'inner' })
  grandchild.warn('from the grandchild')
  t.match(lines, [
    { reqId: 'req-2', level: 20, msg: 'now written' },
    { reqId: 'req-2', step: 'inner', msg: 'from the grandchild' }
  ])
})

t.test('a parent that cannot tell its level gets the child at the first line of any level', async t => {
  const written: Array<{ bindings: Record<string, unknown>, args: unknown[] }> = []
  let made = 0
  const plain = (bindings: Record<string, unknown>): ServiceLogger => {
    const write = (...args: unknown[]) => { written.push({ bindings, args }) }
    return { fatal: write, error: write, warn: write, info: write, debug: write, trace: write, child: b => { made++; return plain({ ...bindings, ...b }) } }
  }
  const lazy = new LazyChildLogger(plain({}), { taskId: 't-1' })
  t.equal(lazy.isLevelEnabled('trace'), true)
  t.equal(made, 0)
  lazy.trace('x')
  lazy.info('y')
  t.equal(made, 1)
  t.same(written, [{ bindings: { taskId: 't-1' }, args: ['x'] }, { bindings: { taskId: 't-1' }, args: ['y'] }])
})

/** The standalone server with its logs captured as JSON lines. */
async function server (t: Test, logLevel: string) {
  const lines: any[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb() } })
  const app = await createServer(validateConfig({ server: { log_level: logLevel as 'warn' } }), { logStream: stream })
  t.teardown(() => app.close())
  return { app, lines }
}

t.test('the standalone server binds each request\'s reqId to its lines, and to none of another request', async t => {
  const { app, lines } = await server(t, 'info')
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  const requestLines = lines.filter(l => l.msg === 'incoming request' || l.msg === 'request completed')
  t.equal(requestLines.length, 2)
  t.ok(typeof requestLines[0].reqId === 'string' && requestLines[0].reqId !== '')
  t.equal(requestLines[1].reqId, requestLines[0].reqId)
})

t.test('at warn, a request that fails logs its error with its reqId; a route with its own log level gets it', async t => {
  const { app, lines } = await server(t, 'warn')
  app.get('/boom', async () => { throw new Error('exploded') })
  app.get('/chatty', { logLevel: 'debug' }, async request => {
    request.log.debug('a debug line from a debug route')
    return { ok: true }
  })
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
  t.same(lines.filter(l => l.reqId !== undefined), [], 'a request that logs nothing writes nothing')
  t.equal((await app.inject({ method: 'GET', url: '/boom' })).statusCode, 500)
  t.match(lines.find(l => l.msg === 'request failed'), { level: 50, reqId: /./, err: { message: 'exploded' } })
  t.equal((await app.inject({ method: 'GET', url: '/chatty' })).statusCode, 200)
  t.match(lines.find(l => l.msg === 'a debug line from a debug route'), { level: 20, reqId: /./ })
})
