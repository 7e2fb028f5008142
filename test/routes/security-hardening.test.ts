import t from 'tap'
import type { A2AConfigInput, AgentExecutor } from '../../index.js'
import { build, buildLogged, privateRedis, rpc, until, userMessage } from '../helper.js'
import { stubIdp } from '../services/auth/idp.js'

const ADMIN_KEY = 'key-admin-0123456789'
const USER_KEY = 'key-user-9876543210'
const OPS_TOKEN = 'static-ops-token-01'

function secured (extra: A2AConfigInput['security'] = {}, idpEndpoint?: string): A2AConfigInput {
  return {
    security: {
      enabled: true,
      auth: {
        api_key: { keys: [{ key: ADMIN_KEY, scopes: ['admin'], id: 'root' }, { key: USER_KEY, scopes: ['api:read'], id: 'user' }] },
        bearer: { tokens: [{ token: OPS_TOKEN, user: 'ops', scopes: ['admin'] }] },
        ...(idpEndpoint === undefined
          ? {}
          : { oauth2: { introspection_endpoint: idpEndpoint, client_id: 'a2a-server', client_secret: 'idp-client-secret', timeout: 2 } })
      },
      scope_hierarchy: { admin: ['*'] },
      ...extra
    }
  }
}

async function post (app: any, body: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({ method: 'POST', url: '/', headers, payload: body })
  return { status: res.statusCode, headers: res.headers, body: res.json() }
}

t.test('concurrent guesses against the identity provider: at most failed_auth_per_minute reach it', async t => {
  const idp = await stubIdp(t)
  const app = await build(t, { config: secured({ rate_limit: { failed_auth_per_minute: 30 } }, idp.endpoint) })
  const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => post(app, rpc('status'), { authorization: `Bearer guess-${i}` })))
  t.ok(idp.calls() <= 30, `the identity provider saw ${idp.calls()} lookups`)
  t.equal(answers.filter(a => a.status === 401).length, idp.calls(), 'each lookup made is a 401')
  t.equal(answers.filter(a => a.status === 429).length, 200 - idp.calls(), 'the rest are refused before any lookup')
})

t.test('a token that proves good is not held against its address; the provider failing is not either', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('good', { active: true, sub: 'carol', scope: 'api:read' })
  const app = await build(t, { config: secured({ rate_limit: { failed_auth_per_minute: 2 } }, idp.endpoint) })
  for (let i = 0; i < 5; i++) {
    idp.tokens.set(`good-${i}`, { active: true, sub: 'carol', scope: 'api:read' })
    t.equal((await post(app, rpc('status'), { authorization: `Bearer good-${i}` })).status, 200)
  }
  idp.mode('error')
  for (let i = 0; i < 3; i++) t.equal((await post(app, rpc('status'), { authorization: `Bearer down-${i}` })).status, 503)
  idp.mode('ok')
  t.equal((await post(app, rpc('status'), { authorization: 'Bearer bad-1' })).status, 401)
  t.equal((await post(app, rpc('status'), { authorization: 'Bearer bad-2' })).status, 401)
  t.equal((await post(app, rpc('status'), { authorization: 'Bearer bad-3' })).status, 429, 'two failures fill the window')
})

t.test('with Redis, the introspection reservation is shared and forgiven the same way', async t => {
  const redis = await privateRedis(t)
  const idp = await stubIdp(t)
  idp.tokens.set('good', { active: true, sub: 'carol', scope: 'api:read' })
  const app = await build(t, {
    config: { ...secured({ rate_limit: { failed_auth_per_minute: 5 } }, idp.endpoint), services: { cache: { type: 'cache', url: redis.url } } }
  })
  t.equal((await post(app, rpc('status'), { authorization: 'Bearer good' })).status, 200)
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => post(app, rpc('status'), { authorization: `Bearer guess-${i}` })))
  t.ok(idp.calls() <= 1 + 5, `the identity provider saw ${idp.calls()} lookups`)
  t.equal(answers.filter(a => a.status === 429).length, 40 - (idp.calls() - 1))
})

t.test('a wrong X-API-Key beside a valid bearer token is refused and counted; the right one gives no other identity for free', async t => {
  const { app, logs } = await buildLogged(t, { config: secured({ rate_limit: { failed_auth_per_minute: 3 } }) })
  for (let i = 0; i < 3; i++) {
    const res = await post(app, rpc('status'), { authorization: `Bearer ${OPS_TOKEN}`, 'x-api-key': `guess-${i}` })
    t.equal(res.status, 401, `guess ${i} under a valid bearer`)
    t.match(res.body.error, { code: -32010 })
  }
  const blocked = await post(app, rpc('status'), { authorization: `Bearer ${OPS_TOKEN}`, 'x-api-key': USER_KEY })
  t.equal(blocked.status, 429, 'the guesses counted: even the right key now waits')
  t.equal(logs.lines().filter(l => l.msg === 'auth failure' && l.scheme === 'api_key').length, 3)
})

t.test('a valid API key beside a bearer token that fails is refused too', async t => {
  const app = await build(t, { config: secured() })
  const res = await post(app, rpc('status'), { authorization: 'Bearer not-a-token', 'x-api-key': USER_KEY })
  t.equal(res.status, 401)
  const both = await post(app, rpc('status'), { authorization: `Bearer ${OPS_TOKEN}`, 'x-api-key': USER_KEY })
  t.equal(both.status, 200, 'two valid credentials: the API key names the caller')
})

t.test('identity comes from sub only, namespaced: an IdP username never owns a static user\'s tasks', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('no-sub', { active: true, username: 'ops', scope: 'api:read' })
  idp.tokens.set('sub-ops', { active: true, sub: 'ops', scope: 'api:read' })
  const app = await build(t, { config: secured({}, idp.endpoint) })
  const task = (await post(app, rpc('message/send', { message: userMessage('mine') }), { authorization: `Bearer ${OPS_TOKEN}` })).body.result
  const noSub = await post(app, rpc('tasks/get', { id: task.id }), { authorization: 'Bearer no-sub' })
  t.equal(noSub.status, 401, 'a token with a username and no sub names nobody')
  t.match(noSub.body.error, { data: 'token has no subject' })
  const same = await post(app, rpc('tasks/get', { id: task.id }), { authorization: 'Bearer sub-ops' })
  t.match(same.body.error, { code: -32001 }, 'sub "ops" is oauth2:ops, not the static user ops')
  const mine = (await post(app, rpc('message/send', { message: userMessage('x') }), { authorization: 'Bearer sub-ops' })).body.result
  t.equal((await post(app, rpc('tasks/get', { id: mine.id }), { authorization: `Bearer ${OPS_TOKEN}` })).status, 200, 'the admin still sees every task')
})

t.test('user_claim and principal_prefix map IdP identities explicitly', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('by-name', { active: true, sub: 'x-123', preferred_username: 'ops', scope: 'api:read' })
  const config = secured({}, idp.endpoint)
  Object.assign((config.security as any).auth.oauth2, { user_claim: 'preferred_username', principal_prefix: '' })
  const app = await build(t, { config })
  const task = (await post(app, rpc('message/send', { message: userMessage('mine') }), { authorization: `Bearer ${OPS_TOKEN}` })).body.result
  t.equal((await post(app, rpc('tasks/get', { id: task.id }), { authorization: 'Bearer by-name' })).status, 200, 'mapped together on purpose')
  t.equal((await post(app, rpc('tasks/get', { id: task.id }), { authorization: 'Bearer by-name' })).body.result.id, task.id)
})

t.test('a message joined to a running task runs as its sender: no borrowed scopes, tools or audit', async t => {
  const seen: Array<{ principal: string, allowed: string[] }> = []
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  const executor: AgentExecutor = async function * (ctx) {
    seen.push({ principal: ctx.principal.id, allowed: ['list_directory', 'capabilities'].filter(name => ctx.tools.available().includes(name)) })
    // The first turn holds the run, so that the next messages queue behind it.
    if (seen.length === 1) await gate
    yield `turn ${seen.length}`
  }
  const app = await build(t, { executor, config: secured() })
  const userRun = post(app, rpc('message/send', { message: userMessage('user starts') }), { 'x-api-key': USER_KEY })
  await until(() => seen.length === 1)
  const task = (await post(app, rpc('tasks/list', {}), { 'x-api-key': USER_KEY })).body.result.tasks[0]
  // An admin may join any task; the user's own next message is queued behind the admin's.
  await post(app, rpc('message/send', { message: userMessage('admin joins', { taskId: task.id }), configuration: { blocking: false } }), { 'x-api-key': ADMIN_KEY })
  await post(app, rpc('message/send', { message: userMessage('user again', { taskId: task.id }), configuration: { blocking: false } }), { 'x-api-key': USER_KEY })
  release()
  await userRun
  await until(() => seen.length === 3)
  t.same(seen.map(s => s.principal), ['user', 'root', 'user'], 'each turn runs as the sender of its message')
  t.same(seen[2].allowed, [], "the user's turn has the user's tools only")
  t.same(seen[1].allowed, ['list_directory', 'capabilities'], "the admin's turn has the admin's")
})

t.test('Redis down with security on: the limits answer 503 -32603 storage unavailable with Retry-After', async t => {
  const redis = await privateRedis(t)
  const app = await build(t, { config: { ...secured(), services: { cache: { type: 'cache', url: redis.url } } } })
  t.equal((await post(app, rpc('status'), { 'x-api-key': USER_KEY })).status, 200)
  redis.stop()
  for (const headers of [{ 'x-api-key': USER_KEY }, { 'x-api-key': 'wrong' }]) {
    const res = await post(app, rpc('status', undefined, 'down'), headers)
    t.equal(res.status, 503)
    t.equal(res.headers['retry-after'], '1')
    t.match(res.body, { jsonrpc: '2.0', error: { code: -32603, message: 'Internal error', data: 'storage unavailable' } })
  }
  redis.resume()
  await until(async () => (await post(app, rpc('status'), { 'x-api-key': USER_KEY })).status === 200)
})

t.test('a duplicated X-API-Key header is refused; a token the provider called inactive is refused from the cache', async t => {
  const idp = await stubIdp(t)
  const app = await build(t, { config: secured({}, idp.endpoint) })
  const twice = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': [USER_KEY, USER_KEY] }, payload: rpc('status') })
  t.equal(twice.statusCode, 401)
  t.equal((await post(app, rpc('status'), { authorization: 'Bearer revoked' })).status, 401)
  const calls = idp.calls()
  t.equal((await post(app, rpc('status'), { authorization: 'Bearer revoked' })).status, 401)
  t.equal(idp.calls(), calls, 'the second refusal came from the cache')
})
