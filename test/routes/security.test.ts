import t from 'tap'
import type { A2AConfigInput } from '../../index.js'
import Fastify from 'fastify'
import a2a from '../../index.js'
import { TEST_REDIS, buildLogged, listen, logCapture, redisDb, rpc, until, userMessage } from '../helper.js'
import { stubIdp } from '../services/auth/idp.js'

const API_KEY = 'key-alpha-0123456789'
const READER_KEY = 'key-reader-9876'
const OPS_TOKEN = 'static-ops-token'

function secured (extra: A2AConfigInput['security'] = {}, idpEndpoint?: string): A2AConfigInput {
  return {
    security: {
      enabled: true,
      auth: {
        api_key: {
          keys: [
            { key: API_KEY, scopes: ['agent:admin', 'files:read'], id: 'alpha' },
            { key: READER_KEY, scopes: ['api:read'], id: 'reader' }
          ]
        },
        bearer: { tokens: [{ token: OPS_TOKEN, user: 'ops', scopes: ['admin'] }] },
        ...(idpEndpoint === undefined
          ? {}
          : { oauth2: { introspection_endpoint: idpEndpoint, client_id: 'a2a-server', client_secret: 'idp-client-secret', required_scopes: ['api:read'], timeout: 0.3 } })
      },
      scope_hierarchy: { admin: ['*'], 'agent:admin': ['agent:read', 'agent:execute'], 'api:write': ['api:read'] },
      ...extra
    }
  }
}

async function post (app: any, body: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({ method: 'POST', url: '/', headers, payload: body })
  return { status: res.statusCode, headers: res.headers, body: res.json() }
}

t.test('without credentials the answer is 401 with the challenge and -32010', async t => {
  const { app } = await buildLogged(t, { config: secured() })
  const res = await post(app, rpc('status', undefined, 1))
  t.equal(res.status, 401)
  t.equal(res.headers['www-authenticate'], 'Bearer realm="a2a"')
  t.same(res.body, { jsonrpc: '2.0', id: null, error: { code: -32010, message: 'Unauthenticated', data: 'credentials required' } })
  const bad = await post(app, rpc('status'), { 'x-api-key': 'wrong' })
  t.equal(bad.status, 401)
  t.equal(bad.headers['www-authenticate'], 'Bearer realm="a2a", error="invalid_token"')
  const notBearer = await post(app, rpc('status'), { authorization: 'Basic dXNlcjpwYXNz' })
  t.equal(notBearer.status, 401)
  t.match(notBearer.headers['www-authenticate'], /invalid_token/)
})

t.test('public routes stay public with security on', async t => {
  const { app } = await buildLogged(t, { config: secured() })
  t.equal((await app.inject('/health')).statusCode, 200)
  t.equal((await app.inject('/ready')).statusCode, 200)
  const card = (await app.inject('/.well-known/agent-card.json')).json()
  t.same(Object.keys(card.securitySchemes), ['apiKey', 'bearer'])
})

t.test('API keys in X-API-Key or as a bearer token, and static bearer tokens, authenticate', async t => {
  const { app } = await buildLogged(t, { config: secured() })
  const variants: Array<Record<string, string>> = [{ 'x-api-key': API_KEY }, { authorization: `Bearer ${API_KEY}` }, { authorization: `bearer ${OPS_TOKEN}` }]
  for (const headers of variants) {
    const res = await post(app, rpc('status'), headers)
    t.equal(res.status, 200, JSON.stringify(headers))
    t.equal(res.body.result.status, 'ok')
  }
})

t.test('scopes go through the hierarchy: 403 names the missing scope, admin reaches everything', async t => {
  const { app, logs } = await buildLogged(t, { config: secured() })
  const denied = await post(app, rpc('capabilities', undefined, 'c'), { 'x-api-key': READER_KEY })
  t.equal(denied.status, 403)
  t.equal(denied.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="agent:read"')
  t.same(denied.body, { jsonrpc: '2.0', id: 'c', error: { code: -32011, message: 'Insufficient scope', data: 'needs scope agent:read' } })
  const viaHierarchy = await post(app, rpc('capabilities'), { 'x-api-key': API_KEY })
  t.equal(viaHierarchy.status, 200, 'agent:admin implies agent:read')
  const byName = Object.fromEntries(viaHierarchy.body.result.methods.map((m: any) => [m.name, m.allowed]))
  t.equal(byName.list_directory, true)
  const admin = await post(app, rpc('list_directory', { path: '.' }), { authorization: `Bearer ${OPS_TOKEN}` })
  t.not(admin.status, 403, 'admin implies every scope')
  const scopeLine = logs.lines().find(l => l.msg === 'scope denied')
  t.match(scopeLine, { audit: true, principal: 'reader', scheme: 'api_key', method: 'capabilities', outcome: 'denied' })
})

t.test('at warn the audit log keeps scope denials and failures, and writes no success line', async t => {
  const logs = logCapture()
  const app = Fastify({ logger: { level: 'warn', stream: logs.stream } })
  await app.register(a2a, { config: secured() })
  t.teardown(() => app.close())
  t.equal((await post(app, rpc('status'), { 'x-api-key': API_KEY })).status, 200)
  t.equal((await post(app, rpc('capabilities'), { 'x-api-key': READER_KEY })).status, 403)
  t.equal((await post(app, rpc('status'), { 'x-api-key': 'wrong' })).status, 401)
  const audit = logs.lines().filter(l => l.audit === true)
  t.same(audit.map(l => l.msg), ['scope denied', 'auth failure'])
  t.match(audit[0], { principal: 'reader', method: 'capabilities', outcome: 'denied' })
})

t.test('a streaming method that needs a scope answers a caller without it with JSON 403, audited, before any SSE byte', async t => {
  const { app, logs } = await buildLogged(t, { config: secured({ method_scopes: { 'message/stream': ['agent:execute'] } }) })
  const denied = await post(app, rpc('message/stream', { message: userMessage('x') }, 's'), { 'x-api-key': READER_KEY })
  t.equal(denied.status, 403)
  t.match(denied.headers['content-type'], /application\/json/)
  t.same(denied.body, { jsonrpc: '2.0', id: 's', error: { code: -32011, message: 'Insufficient scope', data: 'needs scope agent:execute' } })
  t.match(logs.lines().find(l => l.msg === 'scope denied'), { audit: true, principal: 'reader', method: 'message/stream', outcome: 'denied' })
  const allowed = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': API_KEY }, payload: rpc('message/stream', { message: userMessage('x') }) })
  t.equal(allowed.statusCode, 200, 'agent:admin implies agent:execute')
  t.match(allowed.headers['content-type'], /text\/event-stream/)
})

t.test('the built-in agent refuses a tool the caller may not use', async t => {
  const { app } = await buildLogged(t, { config: secured() })
  const res = await post(app, rpc('message/send', { message: userMessage('list_directory .') }), { 'x-api-key': READER_KEY })
  t.equal(res.body.result.status.state, 'rejected')
  t.match(res.body.result.status.message.parts[0].text, /files:read/)
})

t.test('each caller\'s tasks call tools as that caller, whoever called them before', async t => {
  // The tools are kept per principal: a reader (no agent:read), an admin key, then the reader again, on one server.
  const { app } = await buildLogged(t, { config: secured() })
  const send = async (key: string) => (await post(app, rpc('message/send', { message: userMessage('capabilities') }), { 'x-api-key': key })).body.result
  t.equal((await send(READER_KEY)).status.state, 'rejected')
  const allowed = await send(API_KEY)
  t.equal(allowed.status.state, 'completed')
  t.equal(allowed.artifacts[0].parts[0].kind, 'data')
  const again = await send(READER_KEY)
  t.equal(again.status.state, 'rejected')
  t.match(again.status.message.parts[0].text, /agent:read/)
  t.equal((await send(API_KEY)).status.state, 'completed')
})

t.test('tasks belong to their creator: others get -32001, admins see them, tasks/list is one\'s own', async t => {
  const { app } = await buildLogged(t, { config: secured() })
  const alpha = { 'x-api-key': API_KEY }
  const reader = { 'x-api-key': READER_KEY }
  const ops = { authorization: `Bearer ${OPS_TOKEN}` }
  const task = (await post(app, rpc('message/send', { message: userMessage('mine') }), alpha)).body.result
  const other = await post(app, rpc('tasks/get', { id: task.id }), reader)
  t.same(other.body.error, { code: -32001, message: 'Task not found', data: `task "${task.id}" was not found` })
  t.equal((await post(app, rpc('tasks/cancel', { id: task.id }), reader)).body.error.code, -32001)
  const resub = await app.inject({ method: 'POST', url: '/', headers: reader, payload: rpc('tasks/resubscribe', { id: task.id }, 'r') })
  t.equal(resub.body, `data: {"jsonrpc":"2.0","id":"r","error":{"code":-32001,"message":"Task not found","data":"task \\"${task.id}\\" was not found"}}\n\n`)
  t.equal((await post(app, rpc('tasks/pushNotificationConfig/list', { id: task.id }), reader)).body.error.code, -32001)
  t.equal((await post(app, rpc('message/send', { message: userMessage('join', { taskId: task.id }) }), reader)).body.error.code, -32001)
  t.equal((await post(app, rpc('tasks/get', { id: task.id }), ops)).body.result.id, task.id, 'admin sees it')
  t.same((await post(app, rpc('tasks/list', {}), reader)).body.result.tasks, [])
  t.equal((await post(app, rpc('tasks/list', {}), alpha)).body.result.tasks.length, 1)
})

t.test('the extended card needs authentication and lists the tools the caller may use', async t => {
  const { app } = await buildLogged(t, { config: secured() })
  const anonymous = await post(app, rpc('agent/getAuthenticatedExtendedCard'))
  t.equal(anonymous.status, 401)
  const reader = await post(app, rpc('agent/getAuthenticatedExtendedCard'), { 'x-api-key': READER_KEY })
  t.same(reader.body.result.skills.map((s: any) => s.id), ['echo', 'tool-status'])
})

t.test('OAuth2 tokens are introspected once, cached, and checked for required scopes', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok-good', { active: true, sub: 'carol', scope: 'api:write agent:read' })
  idp.tokens.set('tok-weak', { active: true, sub: 'dave', scope: 'agent:read' })
  const { app, logs } = await buildLogged(t, { config: secured({}, idp.endpoint) })
  const good = await post(app, rpc('capabilities'), { authorization: 'Bearer tok-good' })
  t.equal(good.status, 200, 'api:write implies the required api:read')
  await post(app, rpc('status'), { authorization: 'Bearer tok-good' })
  t.equal(idp.calls(), 1, 'the second call used the cache')
  const weak = await post(app, rpc('status'), { authorization: 'Bearer tok-weak' })
  t.equal(weak.status, 401)
  t.match(weak.body.error, { code: -32010, data: /api:read/ })
  const inactive = await post(app, rpc('status'), { authorization: 'Bearer tok-unknown' })
  t.equal(inactive.status, 401)
  const success = logs.lines().find(l => l.msg === 'auth success' && l.principal === 'oauth2:carol')
  t.match(success, { audit: true, scheme: 'oauth2', method: 'capabilities', outcome: 'success' })
  t.notMatch(logs.text(), /tok-good|tok-weak|idp-client-secret/)
})

t.test('an identity provider that is down, slow or answers garbage gives 503 -32013, failing closed', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'erin', scope: 'api:read' })
  const { app } = await buildLogged(t, { config: secured({}, idp.endpoint) })
  for (const mode of ['slow', 'garbage', 'error'] as const) {
    idp.mode(mode)
    const res = await post(app, rpc('status'), { authorization: 'Bearer tok' })
    t.equal(res.status, 503, mode)
    t.match(res.body.error, { code: -32013 }, mode)
  }
  idp.mode('ok')
  t.equal((await post(app, rpc('status'), { authorization: 'Bearer tok' })).status, 200)
  await idp.close()
  idp.tokens.set('tok2', { active: true, sub: 'erin', scope: 'api:read' })
  const down = await post(app, rpc('status'), { authorization: 'Bearer tok2' })
  t.equal(down.status, 503)
})

t.test('requests per principal are rate limited with 429, Retry-After and -32012', async t => {
  const { app } = await buildLogged(t, { config: secured({ rate_limit: { requests_per_minute: 60, burst: 3 } }) })
  const headers = { 'x-api-key': API_KEY }
  for (let i = 0; i < 3; i++) t.equal((await post(app, rpc('status'), headers)).status, 200)
  const limited = await post(app, rpc('status', undefined, 'r'), headers)
  t.equal(limited.status, 429)
  t.ok(Number(limited.headers['retry-after']) >= 1)
  t.match(limited.body, { jsonrpc: '2.0', error: { code: -32012 } })
  t.equal((await post(app, rpc('status'), { 'x-api-key': READER_KEY })).status, 200, 'another principal has its own bucket')
})

t.test('failed authentications are limited per IP before any introspection', async t => {
  const idp = await stubIdp(t)
  const { app } = await buildLogged(t, { config: secured({ rate_limit: { failed_auth_per_minute: 3 } }, idp.endpoint) })
  for (let i = 0; i < 3; i++) t.equal((await post(app, rpc('status'), { authorization: `Bearer bad-${i}` })).status, 401)
  const calls = idp.calls()
  const blocked = await post(app, rpc('status'), { authorization: 'Bearer bad-again' })
  t.equal(blocked.status, 429)
  t.ok(Number(blocked.headers['retry-after']) >= 1)
  t.match(blocked.body.error, { code: -32012 })
  t.equal(idp.calls(), calls, 'no introspection call was made')
  t.equal((await post(app, rpc('status'), { 'x-api-key': API_KEY })).status, 429, 'even a good credential waits for the window')
})

t.test('streams: a refused caller gets JSON 401 before any SSE byte; at most 10 open streams per principal', async t => {
  const { url } = await listen(t, { config: { ...secured({ rate_limit: { max_streams_per_principal: 1 } }), agent: { name: 'Slow', delay_ms: 60_000 }, server: { shutdown_timeout: 0.1 } } })
  const anon = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(rpc('message/stream', { message: userMessage('x') })) })
  t.equal(anon.status, 401)
  t.match(anon.headers.get('content-type'), /application\/json/)
  const headers = { 'content-type': 'application/json', 'x-api-key': API_KEY }
  const ac = new AbortController()
  const first = await fetch(url, { method: 'POST', signal: ac.signal, headers, body: JSON.stringify(rpc('message/stream', { message: userMessage('x') })) })
  t.equal(first.status, 200)
  const second = await fetch(url, { method: 'POST', headers, body: JSON.stringify(rpc('message/stream', { message: userMessage('y') })) })
  t.equal(second.status, 429)
  t.match(await second.json(), { error: { code: -32012, data: 'too many open streams for this principal' } })
  const other = await fetch(url, { method: 'POST', headers: { ...headers, 'x-api-key': READER_KEY }, body: JSON.stringify(rpc('tasks/resubscribe', { id: 'nope' })) })
  t.equal(other.status, 200, 'another principal may stream')
  await other.text()
  ac.abort()
})

t.test('no secret used in these requests appears in any log line', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('oauth-secret-token', { active: true, sub: 'frank', scope: 'api:read' })
  const logs = logCapture()
  const { default: Fastify } = await import('fastify')
  const { REDACT_PATHS } = await import('../../server.js')
  const { default: a2a } = await import('../../index.js')
  const app = Fastify({ logger: { level: 'trace', stream: logs.stream, redact: { paths: REDACT_PATHS, censor: '[redacted]' } } })
  await app.register(a2a, { config: secured({}, idp.endpoint) })
  t.teardown(() => app.close())
  await post(app, rpc('status'), { 'x-api-key': API_KEY })
  await post(app, rpc('status'), { authorization: `Bearer ${OPS_TOKEN}` })
  await post(app, rpc('status'), { authorization: 'Bearer oauth-secret-token' })
  await post(app, rpc('status'), { authorization: 'Bearer wrong-secret-token' })
  const text = logs.text()
  t.ok(text.includes('auth success') && text.includes('auth failure'))
  for (const secret of [API_KEY, OPS_TOKEN, 'oauth-secret-token', 'wrong-secret-token', 'idp-client-secret']) {
    t.notOk(text.includes(secret), `${secret} is not logged`)
  }
})

t.test('with Redis configured, two instances share the request buckets', async t => {
  await redisDb(t, 14)
  const config = { ...secured({ rate_limit: { requests_per_minute: 60, burst: 2 } }), services: { cache: { type: 'cache' as const, url: TEST_REDIS.url, db: 14 } } }
  const { app: a } = await buildLogged(t, { config })
  const { app: b } = await buildLogged(t, { config })
  const headers = { 'x-api-key': API_KEY }
  t.equal((await post(a, rpc('status'), headers)).status, 200)
  t.equal((await post(b, rpc('status'), headers)).status, 200)
  t.equal((await post(a, rpc('status'), headers)).status, 429, 'the bucket emptied on the other instance counts here')
})

t.test('rate limiting off lets a principal through without a bucket', async t => {
  const { app } = await buildLogged(t, { config: secured({ rate_limit: { enabled: false, burst: 1 } }) })
  for (let i = 0; i < 3; i++) t.equal((await post(app, rpc('status'), { 'x-api-key': API_KEY })).status, 200)
})

t.test('with Redis configured, the open-stream limit per principal holds across instances', async t => {
  await redisDb(t, 14)
  const config = {
    ...secured({ rate_limit: { max_streams_per_principal: 1 } }),
    agent: { name: 'Slow', delay_ms: 60_000 },
    server: { shutdown_timeout: 0.1 },
    services: { cache: { type: 'cache' as const, url: TEST_REDIS.url, db: 14 } }
  }
  const a = await listen(t, { config })
  const b = await listen(t, { config })
  const headers = { 'content-type': 'application/json', 'x-api-key': API_KEY }
  const open = (url: string, signal?: AbortSignal) =>
    fetch(url, { method: 'POST', signal, headers, body: JSON.stringify(rpc('message/stream', { message: userMessage('x') })) })
  const ac = new AbortController()
  t.equal((await open(a.url, ac.signal)).status, 200)
  const refused = await open(b.url)
  t.equal(refused.status, 429, 'the stream open on A counts on B')
  t.match(await refused.json(), { error: { code: -32012, data: 'too many open streams for this principal' } })
  ac.abort()
  await until(() => a.app.a2aStreams.size === 0)
  const again = new AbortController()
  await until(async () => {
    const res = await open(b.url, again.signal)
    if (res.status === 200) return true
    await res.text()
    return false
  })
  t.equal(b.app.a2aStreams.size, 1, 'once A\'s stream is gone, B may open one')
  again.abort()
})

t.test('a refusal answered while the server closes closes its connection, so the close does not wait on it', async t => {
  const idp = await stubIdp(t)
  idp.mode('slow')
  const { app, url } = await listen(t, { config: secured({}, idp.endpoint) })
  // The refusal comes from the authentication hook, not from a method: the route's error handler sends it.
  const pending = fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tok-slow' }, body: JSON.stringify(rpc('status', undefined, 'slow')) })
  await until(() => idp.calls() === 1)
  const closed = app.close()
  // Past the close of the idle sockets: the introspection times out (0.3 s) only after it.
  await until(() => !app.server.listening)
  const res = await pending
  t.equal(res.status, 503)
  t.equal(res.headers.get('connection'), 'close')
  t.match(await res.json(), { id: null, error: { code: -32013 } })
  await closed
})
