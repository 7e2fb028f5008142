import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import type { AgentExecutor } from '../../index.js'
import { build, listen, postStream, receiver, rpc, until, userMessage } from '../helper.js'
import { stubIdp } from '../services/auth/idp.js'

interface Sample { name: string, labels: Record<string, string>, value: number }

/** Parses the Prometheus text format (the lines this server writes: no escapes inside label values). */
function parse (text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) continue
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(l => [l[1], l[2]]))
    samples.push({ name: m[1], labels, value: Number(m[3]) })
  }
  return samples
}

/** The value of the one sample with this name and these labels; undefined when there is none. */
function value (samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter(s => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) &&
    Object.keys(s.labels).length === Object.keys(labels).length)
  if (found.length > 1) throw new Error(`${found.length} samples match ${name}`)
  return found[0]?.value
}

async function scrape (url: string): Promise<{ samples: Sample[], text: string, type: string | null }> {
  const res = await fetch(new URL('metrics', url))
  t.equal(res.status, 200)
  const text = await res.text()
  return { samples: parse(text), text, type: res.headers.get('content-type') }
}

async function post (url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number, body: any }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

const METRICS = { metrics: { enabled: true } }

t.test('metrics off: GET /metrics is 404 and nothing is decorated', async t => {
  const app = await build(t)
  t.equal(app.a2aMetrics, null)
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
})

t.test('JSON-RPC requests are counted by method and outcome code, and timed', async t => {
  const { app, url } = await listen(t, { config: METRICS })
  t.not(app.a2aMetrics, null)
  for (let i = 0; i < 2; i++) t.equal((await post(url, rpc('status'))).status, 200)
  await post(url, rpc('tasks/get', { id: 'nope' }))
  await post(url, rpc('tasks/get', {}))
  await post(url, rpc('no/such'))
  await post(url, rpc('other/unknown'))
  await post(url, [rpc('status')])
  t.equal((await post(url, '{"jsonrpc":')).status, 400)
  await post(url, rpc('rpc.discover'))

  const { samples, text, type } = await scrape(url)
  t.equal(type, 'text/plain; version=0.0.4; charset=utf-8')
  const requests = (method: string, code: string) => value(samples, 'a2a_rpc_requests_total', { method, code })
  t.equal(requests('status', '0'), 2)
  t.equal(requests('tasks/get', '-32001'), 1)
  t.equal(requests('tasks/get', '-32602'), 1)
  t.equal(requests('unknown', '-32601'), 2, 'unregistered names share one label')
  t.equal(requests('unknown', '-32600'), 1, 'a batch names no method')
  t.equal(requests('unknown', '-32700'), 1, 'nor does a body that is not JSON')
  t.equal(requests('rpc.discover', '0'), 1)
  t.notMatch(text, /no\/such|other\/unknown/)
  t.equal(value(samples, 'a2a_rpc_request_duration_seconds_count', { method: 'status' }), 2)
  t.equal(value(samples, 'a2a_rpc_request_duration_seconds_bucket', { method: 'status', le: '+Inf' }), 2)
  t.ok((value(samples, 'a2a_rpc_request_duration_seconds_sum', { method: 'status' }) as number) >= 0)
  t.ok(value(samples, 'process_cpu_user_seconds_total') !== undefined, 'the default process metrics come along')
  t.ok(value(samples, 'nodejs_heap_size_total_bytes') !== undefined)
})

t.test('tasks by state and open streams follow the tasks and the streams', async t => {
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  const executor: AgentExecutor = async function * (ctx) {
    const text = ctx.message.parts.map(p => p.kind === 'text' ? p.text : '').join('')
    if (text === 'hold') await gate
    if (text === 'until-canceled') await new Promise(resolve => ctx.signal.addEventListener('abort', resolve))
    yield 'done'
  }
  const { app, url } = await listen(t, { executor, config: METRICS })
  const tasks = (samples: Sample[]) => Object.fromEntries(samples.filter(s => s.name === 'a2a_tasks').map(s => [s.labels.state, s.value]))
  const before = await scrape(url)
  t.same(tasks(before.samples), { submitted: 0, in_progress: 0, input_required: 0, auth_required: 0, completed: 0, canceled: 0, failed: 0, rejected: 0 })
  t.equal(value(before.samples, 'a2a_open_streams'), 0)

  await post(url, rpc('message/send', { message: userMessage('quick') }))
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/stream', { message: userMessage('hold') })) })
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  await reader.read()
  const during = await scrape(url)
  t.equal(value(during.samples, 'a2a_open_streams'), 1)
  t.match(tasks(during.samples), { submitted: 0, in_progress: 1, completed: 1 })
  t.equal(value(during.samples, 'a2a_rpc_requests_total', { method: 'message/stream', code: '0' }), 1, 'a stream counts once it opens')

  release()
  for (let r = await reader.read(); !r.done; r = await reader.read());
  await until(() => app.a2aStreams.size === 0)
  const canceled = await post(url, rpc('message/send', { message: userMessage('until-canceled'), configuration: { blocking: false } }))
  await post(url, rpc('tasks/cancel', { id: canceled.body.result.id }))
  const bad = await postStream(url, rpc('message/stream', {}))
  t.equal(bad.events[0].error.code, -32602)
  const after = await scrape(url)
  t.equal(value(after.samples, 'a2a_open_streams'), 0)
  t.match(tasks(after.samples), { submitted: 0, in_progress: 0, completed: 2, canceled: 1 })
  t.equal(value(after.samples, 'a2a_rpc_requests_total', { method: 'message/stream', code: '-32602' }), 1, 'an SSE error event counts with its code')
})

t.test('a2a_answer_bytes and a2a_request_bytes read the bytes in flight: an answer nobody reads, a body still coming', async t => {
  const { app, url } = await listen(t, { config: { ...METRICS, server: { max_request_size: 16 * 1024 * 1024 } } })
  const before = await scrape(url)
  t.equal(value(before.samples, 'a2a_answer_bytes'), 0)
  t.equal(value(before.samples, 'a2a_request_bytes'), 0)
  // An answer of about 8 MB, more than the kernel's buffers take: what its client does not read stays in flight.
  const sent = await post(url, rpc('message/send', { message: userMessage('x'.repeat(4_000_000)) }))
  const { port } = new URL(url)
  const reader = connect(Number(port), '127.0.0.1')
  const trickle = connect(Number(port), '127.0.0.1')
  t.teardown(() => { reader.destroy(); trickle.destroy() })
  await Promise.all([once(reader, 'connect'), once(trickle, 'connect')])
  reader.pause()
  reader.write(`GET /tasks/${sent.body.result.id as string} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
  // A body of 100,000 bytes of which one has come: the request holds its Content-Length until it is answered.
  trickle.write('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{')
  await until(() => app.a2aAnswers.bytes > 0 && app.a2aRequests.bytes > 0)
  const during = await scrape(url)
  t.ok((value(during.samples, 'a2a_answer_bytes') as number) > 1_000_000, 'the unread answer is in flight')
  t.equal(value(during.samples, 'a2a_answer_bytes'), app.a2aAnswers.bytes)
  t.equal(value(during.samples, 'a2a_request_bytes'), 100_000)
  reader.destroy()
  trickle.destroy()
  await until(() => app.a2aAnswers.bytes === 0 && app.a2aRequests.bytes === 0)
  const after = await scrape(url)
  t.equal(value(after.samples, 'a2a_answer_bytes'), 0, 'given back when the connections go')
  t.equal(value(after.samples, 'a2a_request_bytes'), 0)
})

t.test('webhook deliveries, failures and retries are counted', async t => {
  const good = await receiver(t)
  good.script(503, 200)
  const bad = await receiver(t)
  bad.script(404)
  const push = { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1, max_retries: 2 }
  const { url } = await listen(t, { config: { ...METRICS, push_notifications: { config: push } } })
  const before = await scrape(url)
  t.equal(value(before.samples, 'a2a_webhook_deliveries_total', { outcome: 'success' }), 0)
  t.equal(value(before.samples, 'a2a_webhook_deliveries_total', { outcome: 'failure' }), 0)
  t.equal(value(before.samples, 'a2a_webhook_retries_total'), 0)

  // Each task goes in_progress, then completed: two deliveries per config.
  await post(url, rpc('message/send', { message: userMessage('a'), configuration: { pushNotificationConfig: { url: `${good.url}/hook` } } }))
  await post(url, rpc('message/send', { message: userMessage('b'), configuration: { pushNotificationConfig: { url: `${bad.url}/hook` } } }))
  let samples: Sample[] = []
  await until(async () => {
    samples = (await scrape(url)).samples
    return (value(samples, 'a2a_webhook_deliveries_total', { outcome: 'success' }) as number) +
      (value(samples, 'a2a_webhook_deliveries_total', { outcome: 'failure' }) as number) === 4
  })
  t.equal(value(samples, 'a2a_webhook_deliveries_total', { outcome: 'success' }), 2)
  t.equal(value(samples, 'a2a_webhook_deliveries_total', { outcome: 'failure' }), 2, 'a 404 is final')
  t.equal(value(samples, 'a2a_webhook_retries_total'), 1, 'the 503 was retried once')
  t.equal(good.received.length, 3)
  t.equal(bad.received.length, 2)
})

t.test('introspection cache hits and misses are counted; refused callers count under unknown', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok-metrics', { active: true, sub: 'mia', scope: 'api:read' })
  const security = {
    enabled: true,
    auth: { oauth2: { introspection_endpoint: idp.endpoint, client_id: 'a2a-server', client_secret: 'idp-client-secret', required_scopes: ['api:read'] } }
  }
  const { url } = await listen(t, { config: { ...METRICS, security } })
  const before = await scrape(url)
  t.equal(value(before.samples, 'a2a_introspection_cache_total', { result: 'hit' }), 0)
  t.equal(value(before.samples, 'a2a_introspection_cache_total', { result: 'miss' }), 0)
  const auth = { authorization: 'Bearer tok-metrics' }
  for (let i = 0; i < 3; i++) t.equal((await post(url, rpc('status'), auth)).status, 200)
  t.equal((await post(url, rpc('status'), { authorization: 'Bearer tok-other' })).status, 401)
  t.equal((await post(url, rpc('status'))).status, 401)
  t.equal((await fetch(new URL('openrpc.json', url))).status, 401, 'not a JSON-RPC request: not counted')
  const { samples } = await scrape(url)
  t.equal(idp.calls(), 2)
  t.equal(value(samples, 'a2a_introspection_cache_total', { result: 'miss' }), 2)
  t.equal(value(samples, 'a2a_introspection_cache_total', { result: 'hit' }), 2)
  t.equal(value(samples, 'a2a_rpc_requests_total', { method: 'status', code: '0' }), 3)
  // A refusal of a small body is answered once the body is read: it is counted under its method.
  t.equal(value(samples, 'a2a_rpc_requests_total', { method: 'status', code: '-32010' }), 2, 'refused after the body is read')
})

t.test('two agents in one process keep their own metrics, each under its prefix', async t => {
  const first = await build(t, { prefix: '/one', config: METRICS })
  const second = await build(t, { prefix: '/two', config: METRICS })
  await first.inject({ method: 'POST', url: '/one', payload: rpc('status') })
  const count = async (app: typeof first, path: string) =>
    value(parse((await app.inject({ method: 'GET', url: path })).body), 'a2a_rpc_requests_total', { method: 'status', code: '0' })
  t.equal(await count(first, '/one/metrics'), 1)
  t.equal(await count(second, '/two/metrics'), undefined)
  t.equal((await second.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
})
