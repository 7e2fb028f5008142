import { Writable } from 'node:stream'
import t from 'tap'
import { createServer } from '../server.js'
import { validateConfig } from '../services/config/load.js'

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
  const rpc = await app.inject('/')
  t.equal(rpc.statusCode, 404, 'GET / (the JSON-RPC endpoint) keeps Fastify\'s answer')
  t.match(rpc.json(), { error: 'Not Found', statusCode: 404 })

  const off = await createServer(validateConfig({ server: { log_level: 'silent' }, protocol: { rest: false } }))
  t.teardown(() => off.close())
  t.match((await off.inject('/no/such/route')).json(), { error: 'Not Found', statusCode: 404 }, 'without REST, Fastify\'s 404')
})
