import { Writable } from 'node:stream'
import t from 'tap'
import { createServer } from '../server.js'
import { validateConfig } from '../services/config/load.js'
import { StorageUnavailable } from '../services/kernel/errors.js'

function capture () {
  const chunks: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { chunks.push(String(chunk)); cb() } })
  return { stream, text: () => chunks.join('') }
}

t.test('the standalone root handler passes client errors through and masks server errors', async t => {
  const logs = capture()
  const app = await createServer(validateConfig({ server: { log_level: 'info' } }), { logStream: logs.stream })
  app.get('/client', async () => { throw Object.assign(new Error('bad thing'), { statusCode: 422, code: 'X_BAD' }) })
  app.get('/server', async () => { throw new Error('db password leaked') })
  t.teardown(() => app.close())
  const client = await app.inject('/client')
  t.equal(client.statusCode, 422)
  t.match(client.json(), { statusCode: 422, code: 'X_BAD', message: 'bad thing' })
  const server = await app.inject('/server')
  t.equal(server.statusCode, 500)
  t.same(server.json(), { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' })
  t.notMatch(server.body, /leaked/)
  t.match(logs.text(), /security is off/)
})

t.test('authorization headers and tokens are redacted in the standalone logs', async t => {
  const logs = capture()
  const app = await createServer(validateConfig({ server: { log_level: 'info' } }), { logStream: logs.stream })
  t.teardown(() => app.close())
  await app.inject({ method: 'GET', url: '/health', headers: { authorization: 'Bearer sekret-token-1', 'x-api-key': 'sekret-key-2' } })
  app.log.info({ config: { token: 'sekret-token-3', credentials: 'sekret-4' } }, 'a line with secrets')
  t.notMatch(logs.text(), /sekret/)
  t.match(logs.text(), /\[redacted\]/)
})

t.test('server.trust_proxy decides whose address the failed-authentication limit counts', async t => {
  const security = {
    enabled: true,
    auth: { api_key: { keys: [{ key: 'the-right-key' }] } },
    rate_limit: { failed_auth_per_minute: 1 }
  }
  const bad = (app: Awaited<ReturnType<typeof createServer>>, forwardedFor: string) => app.inject({
    method: 'POST',
    url: '/',
    remoteAddress: '10.0.0.9',
    headers: { 'x-api-key': 'wrong', 'x-forwarded-for': forwardedFor },
    payload: { jsonrpc: '2.0', id: 1, method: 'status' }
  })
  for (const trust of [true, ['10.0.0.0/8']]) {
    const app = await createServer(validateConfig({ server: { log_level: 'silent', trust_proxy: trust }, security }))
    t.teardown(() => app.close())
    t.equal((await bad(app, '203.0.113.1')).statusCode, 401)
    t.equal((await bad(app, '203.0.113.1')).statusCode, 429, `${JSON.stringify(trust)}: the forwarded client is limited`)
    t.equal((await bad(app, '203.0.113.2')).statusCode, 401, `${JSON.stringify(trust)}: another client behind the proxy is not`)
  }
  // One trusted hop takes the address the proxy added last; what the client wrote before it changes nothing.
  const hop = await createServer(validateConfig({ server: { log_level: 'silent', proxy_hops: 1 }, security }))
  t.teardown(() => hop.close())
  t.equal((await bad(hop, '198.51.100.7, 203.0.113.1')).statusCode, 401)
  t.equal((await bad(hop, '198.51.100.8, 203.0.113.1')).statusCode, 429, '1: a client rotating its own X-Forwarded-For is still limited')
  t.equal((await bad(hop, '203.0.113.1, 203.0.113.2')).statusCode, 401, '1: and cannot lock out another address by naming it')
  const direct = await createServer(validateConfig({ server: { log_level: 'silent' }, security }))
  t.teardown(() => direct.close())
  t.equal((await bad(direct, '203.0.113.1')).statusCode, 401)
  t.equal((await bad(direct, '203.0.113.2')).statusCode, 429, 'by default X-Forwarded-For is ignored: the peer address counts')
})

t.test('behind a trusted proxy the card takes https from X-Forwarded-Proto, and nothing else', async t => {
  const app = await createServer(validateConfig({ server: { log_level: 'silent', proxy_hops: 1 } }))
  t.teardown(() => app.close())
  const card = (proto: string) => app.inject({ url: '/.well-known/agent-card.json', headers: { host: 'agents.example.com', 'x-forwarded-proto': proto } })
  t.equal((await card('https')).json().url, 'https://agents.example.com/')
  t.equal((await card('javascript')).json().url, 'http://agents.example.com/')
  t.throws(() => validateConfig({ server: { proxy_hops: 1, trust_proxy: true } }), /server.proxy_hops: set either proxy_hops or trust_proxy, not both/)
})

t.test('row 17: Fastify\'s own refusals on v1.0 REST paths are google.rpc.Status bodies; /v1 ones the v0.3 error object', async t => {
  const app = await createServer(validateConfig({ server: { log_level: 'silent' } }))
  t.teardown(() => app.close())
  const long = 'a'.repeat(1100)
  const cases: Array<[string, string, number, string]> = [
    ['GET', '/no/such/route', 404, 'NOT_FOUND'],
    ['GET', `/${'x'.repeat(4000)}`, 404, 'NOT_FOUND'],
    ['GET', '//tasks/abc', 404, 'NOT_FOUND'],
    ['POST', '//message:send', 404, 'NOT_FOUND'],
    ['GET', `/tasks/${long}`, 414, 'INVALID_ARGUMENT'],
    ['DELETE', `/tasks/t/pushNotificationConfigs/${long}`, 414, 'INVALID_ARGUMENT'],
    ['GET', '/tasks/%zz', 400, 'INVALID_ARGUMENT'],
    ['POST', '/tasks/%E0%A4%A:cancel', 400, 'INVALID_ARGUMENT']
  ]
  for (const [method, url, code, status] of cases) {
    const res = await app.inject({ method: method as 'GET', url })
    const name = `${method} ${url.slice(0, 40)}`
    t.equal(res.statusCode, code, name)
    t.match(res.headers['content-type'], /^application\/a2a\+json/, name)
    t.match(res.json(), { error: { code, status, message: String, details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo' }] } }, name)
    t.ok(res.body.length < 1000, `${name}: the answer does not echo a long path`)
  }
  const v03 = await app.inject(`/v1/tasks/${long}`)
  t.equal(v03.statusCode, 414)
  t.same(Object.keys(v03.json()).sort(), ['code', 'data', 'message'], 'the v0.3 error object under /v1')
  t.match(v03.json(), { code: -32600 })
  t.match((await app.inject('/v1/no/such')).json(), { code: -32601 })
  t.equal((await app.inject('/v1/tasks/%zz')).statusCode, 400)
  const root = await app.inject('/')
  t.equal(root.statusCode, 200, 'GET / (POST / is the JSON-RPC endpoint) says where things are')
  t.match(root.json(), { name: 'Echo Agent', links: { card: '/.well-known/agent-card.json' } })
  for (const method of ['PUT', 'DELETE'] as const) {
    const other = await app.inject({ method, url: '/?x=1' })
    t.equal(other.statusCode, 404, `${method} / (the JSON-RPC endpoint) keeps Fastify's answer`)
    t.same(other.json(), { message: `Route ${method}:/ not found`, error: 'Not Found', statusCode: 404 })
  }

  const off = await createServer(validateConfig({ server: { log_level: 'silent' }, protocol: { rest: false } }))
  t.teardown(() => off.close())
  t.match((await off.inject('/no/such/route')).json(), { error: 'Not Found', statusCode: 404 }, 'without REST, Fastify\'s 404')
})

t.test('the pretty format writes one readable line per request; json keeps Fastify\'s two', async t => {
  const pretty = capture()
  const app = await createServer(validateConfig({ server: { log_level: 'info' } }), { logStream: pretty.stream, logFormat: 'pretty' })
  app.get('/after', async () => 'ok')
  app.addHook('onResponse', async request => { if (request.url === '/after') throw new Error('an onResponse hook failed') })
  t.teardown(() => app.close())
  await app.inject('/health')
  await app.inject('/after')
  const lines = pretty.text().trimEnd().split('\n')
  t.match(lines[0], /^\[[\d:.]+\] WARN: security is off/)
  t.match(lines[1], /^\[[\d:.]+\] INFO: GET \/health 200 \d+\.\d ms \{"reqId":"req-1"\}$/)
  t.match(lines[2], /^\[[\d:.]+\] ERROR: GET \/after 200 \d+\.\d ms request errored \{"reqId":"req-2"\}$/)
  t.match(pretty.text(), /an onResponse hook failed/, 'with the error below it')
  t.notMatch(pretty.text(), /incoming request/)

  const json = capture()
  const plain = await createServer(validateConfig({ server: { log_level: 'info' } }), { logStream: json.stream, logFormat: 'auto' })
  t.teardown(() => plain.close())
  await plain.inject('/health')
  const entries = json.text().trimEnd().split('\n').map(line => JSON.parse(line))
  t.same(entries.filter(e => e.reqId !== undefined).map(e => e.msg), ['incoming request', 'request completed'], 'auto with a log stream is json')
})

t.test('errors that only say Redis cannot be reached are logged without a stack; others keep theirs', async t => {
  const logs = capture()
  const app = await createServer(validateConfig({ server: { log_level: 'info' } }), { logStream: logs.stream })
  t.teardown(() => app.close())
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6399'), { code: 'ECONNREFUSED', syscall: 'connect' })
  app.log.warn({ err: refused }, 'refused')
  app.log.warn({ err: new StorageUnavailable('redis unreachable') }, 'unavailable')
  app.log.warn({ err: new Error('a bug') }, 'bug')
  const lines = logs.text().trimEnd().split('\n').map(line => JSON.parse(line))
  const by = (msg: string) => lines.find(l => l.msg === msg)
  t.match(by('refused').err, { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:6399', code: 'ECONNREFUSED', syscall: 'connect' })
  t.notOk('stack' in by('refused').err)
  t.match(by('unavailable').err, { code: 'A2A_ERR_STORAGE_UNAVAILABLE', message: 'Storage unavailable: redis unreachable' })
  t.notOk('stack' in by('unavailable').err)
  t.match(by('bug').err.stack, /^Error: a bug\n\s+at /)
})
