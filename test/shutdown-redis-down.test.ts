// SIGTERM while Redis is down (issue 39 follow-up): every close step is bounded (the webhook queue's worker is
// closed by force, the Redis clients quit within a bound and are then dropped), so the built CLI (`npm run build`
// first) drains and exits 0 within `server.shutdown_timeout` and a little (about 3.5 s past it, Redis stalled, a task
// running), instead of hanging until the force exit (exit code 1, `shutdown_timeout` + 5 s after the signal). What
// could not be stored was already refused. The last test closes the plugin in process (`app.close()`).
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import a2a from '../index.js'
import { freePort, startRedis } from '../scripts/redis-server.js'
import { validateConfig } from '../services/config/load.js'
import { kvcacheYaml, logCapture, privateRedis, rpc, serve, until, userMessage, type Served } from './helper.js'

const SHUTDOWN_TIMEOUT_S = 2
/** What the Redis client logs while Redis does not answer (services/redis/outage.ts). */
const OUTAGE = 'redis is not answering; retrying every 1 s'
/** Far below the force exit (shutdown_timeout + 5 s after the signal), and generous for a loaded machine. */
const PROMPT_EXIT_MS = 5_000
/** A generous upper bound, not a speed check: the process is killed (and the test fails) only past it. */
const GONE_WITHIN_MS = 30_000

const CONFIG = (url: string) => `
agent:
  name: Closing Agent
  delay_ms: 60000
server:
  shutdown_timeout: ${SHUTDOWN_TIMEOUT_S}
` + kvcacheYaml(url)

async function server (t: Test, url: string): Promise<Served> {
  const dir = t.testdir({ 'agent.yml': CONFIG(url) })
  return await serve(t, ['--config', `${dir}/agent.yml`])
}

/** Resolves once the server has logged this line. */
async function logged (s: Served, text: string): Promise<void> {
  await new Promise<void>(resolve => {
    const seen = (): boolean => s.logs.some(line => line.includes(text))
    if (seen()) return resolve()
    s.child.stdout?.on('data', () => { if (seen()) resolve() })
  })
}

/** Sends SIGTERM; resolves with how the process exited. */
async function terminate (t: Test, s: Served): Promise<{ code: number | null, signal: string | null }> {
  const killer = setTimeout(() => s.child.kill('SIGKILL'), GONE_WITHIN_MS)
  const exited = new Promise<{ code: number | null, signal: string | null }>(resolve => {
    s.child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  s.child.kill('SIGTERM')
  const result = await exited
  clearTimeout(killer)
  t.notOk(s.logs.some(line => line.includes('killed by timeout')), 'not cut short by the force exit')
  return result
}

t.test('SIGTERM with Redis refusing connections and a task running: the server drains and exits 0 on its own', async t => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const s = await server(t, redis.url)
  // A task held in progress (agent.delay_ms): the drain waits for it, then its failure cannot be written.
  const res = await fetch(s.url + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(rpc('message/stream', { message: userMessage('held') }))
  })
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  let head = ''
  while (!head.includes('in_progress') && !head.includes('working')) {
    const { value, done } = await reader.read()
    if (done) break
    head += Buffer.from(value as Uint8Array).toString()
  }
  t.match(head, /in_progress|working/, 'the task is running')
  const drained = (async () => { while (!(await reader.read().catch(() => ({ done: true }))).done); })()
  await redis.stop()
  // The clients are then waiting to reconnect: the state in which BullMQ's graceful close never ended.
  await logged(s, OUTAGE)
  const { code, signal } = await terminate(t, s)
  t.equal(signal, null, 'gone on its own, not killed')
  t.equal(code, 0, 'exit code 0')
  await drained
})

t.test('SIGTERM with Redis stalled (accepting, never answering): the server drains and exits 0 on its own', async t => {
  const redis = await privateRedis(t)
  const s = await server(t, redis.url)
  // A stalled Redis breaks no connection: nothing is logged before the signal.
  redis.stop()
  const { code, signal } = await terminate(t, s)
  t.equal(signal, null, 'gone on its own, not killed')
  t.equal(code, 0, 'exit code 0')
})

t.test('app.close() with Redis refusing connections ends on its own: the webhook worker is closed by force', async t => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const logs = logCapture()
  const app = Fastify({ logger: { level: 'warn', stream: logs.stream } })
  await app.register(a2a, { config: validateConfig(parse(CONFIG(redis.url))) })
  await app.ready()
  await redis.stop()
  // Once the clients have failed to reconnect for a second or more (two outage lines), the queue's worker spends most
  // of its time waiting for the next try.
  await until(() => logs.lines().filter(l => l.msg === OUTAGE).length >= 2)
  let timer: NodeJS.Timeout | undefined
  const closed = await Promise.race([
    app.close().then(() => true),
    new Promise<boolean>(resolve => { timer = setTimeout(resolve, GONE_WITHIN_MS, false) })
  ])
  clearTimeout(timer)
  t.ok(closed, 'closed')
})

t.test('Redis not running at start: one stackless line per growing interval, /ready 503, and SIGTERM exits at once', async t => {
  // Nothing listens on this port: every connection attempt of every client is refused.
  const url = `redis://127.0.0.1:${await freePort()}`
  const dir = t.testdir({ 'agent.yml': CONFIG(url).replace(/shutdown_timeout: \d+/, 'shutdown_timeout: 10') })
  const s = await serve(t, ['--config', `${dir}/agent.yml`])
  const ready = await fetch(s.url + '/ready')
  t.equal(ready.status, 503, 'not ready while Redis is down')
  t.match(await ready.json(), { status: 'unavailable', checks: { redis: 'unavailable', tasks: 'unavailable' } })
  t.equal((await fetch(s.url + '/health')).status, 200, 'alive meanwhile')
  const sent = await fetch(s.url + '/', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage('while down') }))
  })
  t.equal(sent.status, 503, 'a call that needs Redis is refused, not held')
  t.equal(sent.headers.get('retry-after'), '1')
  t.match(await sent.json(), { error: { code: -32603, data: 'storage unavailable' } })
  // Three reports: the first failure, then 1 s and 2 s apart at least (the clients retry every second meanwhile).
  const entries = () => s.logs.filter(line => line.startsWith('{')).map(line => JSON.parse(line))
  await new Promise<void>(resolve => {
    const enough = (): boolean => entries().filter(e => e.msg === OUTAGE).length >= 3
    if (enough()) resolve()
    s.child.stdout?.on('data', () => { if (enough()) resolve() })
  })
  const outage = entries().filter(e => e.msg === OUTAGE)
  t.match(outage[0], { level: 40, component: 'redis', redis: url, code: 'ECONNREFUSED' })
  for (let i = 1; i < outage.length; i++) {
    // The clock of the lines: each report comes no sooner than its interval (1 s, then doubling) after the last.
    t.ok(outage[i].time - outage[i - 1].time >= 1000 * 2 ** (i - 1) - 50, `report ${i + 1} waited its interval`)
  }
  t.same(s.logs.filter(line => !line.startsWith('{')), [], 'nothing but JSON lines, nothing on stderr')
  t.notOk(s.logs.some(line => line.includes('"stack"') || line.includes('\\n    at ')), 'no line carries a stack')
  t.notOk(s.logs.some(line => /webhook (queue|worker) error/.test(line)), 'the queue leaves the outage to the report')
  // The other warnings (the start's own, the readiness checks) are one-offs, not one per attempt.
  const others = entries().filter(e => e.level >= 40 && e.msg !== OUTAGE).map(e => `${e.msg} ${e.check ?? ''}`)
  t.ok(others.every(msg => others.filter(m => m === msg).length === 1), `no repeated warning: ${others.join('; ')}`)

  const exited = new Promise<{ code: number | null, signal: string | null }>(resolve => {
    s.child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const killer = setTimeout(() => s.child.kill('SIGKILL'), GONE_WITHIN_MS)
  const signalled = Date.now()
  s.child.kill('SIGTERM')
  const { code, signal } = await exited
  const tookMs = Date.now() - signalled
  clearTimeout(killer)
  t.equal(signal, null, 'gone on its own, not killed')
  t.equal(code, 0, 'exit code 0')
  t.ok(tookMs < PROMPT_EXIT_MS, `exited ${tookMs} ms after SIGTERM`)
})
