import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import { IntrospectionClient, type IntrospectionOptions } from '../../../services/auth/introspection.js'
import { stubIdp, type StubIdp } from './idp.js'

interface Teardown {
  teardown (fn: () => unknown): void
}

const CLIENT_ID = 'a2a-server'
const CLIENT_SECRET = 'idp-client-secret'
const HIERARCHY = { admin: ['*'], 'agent:admin': ['agent:read', 'agent:execute'] }
/** A fixed start for the injected clock, in ms. */
const T0 = 1_700_000_000_000
const IDP_UNAVAILABLE = { code: -32013, httpStatus: 503, message: 'Identity provider unavailable', headers: { 'retry-after': '1' } }

function capture () {
  const chunks: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { chunks.push(String(chunk)); cb() } })
  const text = () => chunks.join('')
  return { stream, text, lines: () => text().split('\n').filter(Boolean).map(l => JSON.parse(l)) }
}

function client (t: Teardown, idp: StubIdp, opts: Partial<IntrospectionOptions> = {}) {
  const logs = capture()
  const c = new IntrospectionClient({
    endpoint: idp.endpoint,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    requiredScopes: [],
    cacheTtlSeconds: 60,
    timeoutSeconds: 2,
    hierarchy: HIERARCHY,
    ...opts
  }, pino({ level: 'debug' }, logs.stream))
  t.teardown(() => c.close())
  return { c, logs }
}

/** A controllable clock for the cache tests. */
function clock () {
  let now = T0
  return { now: () => now, advance: (ms: number) => { now += ms } }
}

const sorted = (scopes: ReadonlySet<string>) => [...scopes].sort()

t.test('an active token gives an oauth2 principal with scopes expanded through the hierarchy', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok-alice', { active: true, sub: 'alice', scope: 'agent:admin files:read' })
  const { c } = client(t, idp)
  const res = await c.introspect('tok-alice')
  t.equal(res.ok, true)
  if (!res.ok) return
  t.match(res.principal, { id: 'alice', scheme: 'oauth2', all: false })
  t.same(sorted(res.principal.scopes), ['agent:admin', 'agent:execute', 'agent:read', 'files:read'])
  t.same(idp.last(), { form: { token: 'tok-alice', token_type_hint: 'access_token' }, accept: 'application/json' })
  t.equal(c.calls, 1)
})

t.test('client credentials are form-encoded before HTTP Basic, so special characters survive', async t => {
  const idp = await stubIdp(t, { clientId: 'client:one', clientSecret: 'p@ss word+/:%' })
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  const { c } = client(t, idp, { clientId: 'client:one', clientSecret: 'p@ss word+/:%' })
  t.match(await c.introspect('tok'), { ok: true, principal: { id: 'alice' } })
})

t.test('scopes come from a space-separated scope string or a scopes array', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('string', { active: true, sub: 's', scope: ' agent:read  files:read ' })
  idp.tokens.set('array', { active: true, sub: 'a', scopes: ['admin', 7, ''] })
  idp.tokens.set('none', { active: true, sub: 'n' })
  const { c } = client(t, idp)
  const str = await c.introspect('string')
  const arr = await c.introspect('array')
  const none = await c.introspect('none')
  t.same(str.ok && sorted(str.principal.scopes), ['agent:read', 'files:read'])
  t.same(arr.ok && sorted(arr.principal.scopes), ['*', 'admin'])
  t.equal(arr.ok && arr.principal.all, true)
  t.equal(none.ok && none.principal.scopes.size, 0)
})

t.test('the user is sub only, namespaced oauth2:; a username alone names nobody', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('both', { active: true, sub: 'the-sub', username: 'the-username' })
  idp.tokens.set('username', { active: true, sub: '', username: 'bob' })
  idp.tokens.set('neither', { active: true, username: 42 })
  const { c } = client(t, idp)
  t.match(await c.introspect('both'), { ok: true, principal: { id: 'oauth2:the-sub' } })
  t.same(await c.introspect('username'), { ok: false, reason: 'token has no subject' })
  t.same(await c.introspect('neither'), { ok: false, reason: 'token has no subject' })
})

t.test('user_claim and principal_prefix name the caller as configured', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('named', { active: true, sub: 'x-1', email: 'carol@example.com' })
  const { c } = client(t, idp, { userClaim: 'email', principalPrefix: 'idp/' })
  t.match(await c.introspect('named'), { ok: true, principal: { id: 'idp/carol@example.com' } })
  t.match(c.cached('named'), { ok: true, principal: { id: 'idp/carol@example.com' } }, 'and the result is cached')
  t.equal(c.cached('never-seen'), undefined)
})

t.test('an inactive or unknown token is invalid', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('revoked', { active: false, sub: 'alice' })
  idp.tokens.set('truthy', { active: 'true', sub: 'alice' })
  const { c } = client(t, idp)
  t.same(await c.introspect('revoked'), { ok: false, reason: 'token is not active' })
  t.same(await c.introspect('truthy'), { ok: false, reason: 'token is not active' })
  t.same(await c.introspect('never-issued'), { ok: false, reason: 'token is not active' })
})

t.test('an expired token, or one with an exp that is not a number, is invalid', async t => {
  const idp = await stubIdp(t)
  const time = clock()
  idp.tokens.set('expired', { active: true, sub: 'alice', exp: T0 / 1000 - 1 })
  idp.tokens.set('expiring-now', { active: true, sub: 'alice', exp: T0 / 1000 })
  idp.tokens.set('bad-exp', { active: true, sub: 'alice', exp: 'tomorrow' })
  idp.tokens.set('valid', { active: true, sub: 'alice', exp: T0 / 1000 + 1 })
  const { c } = client(t, idp, { now: time.now })
  t.same(await c.introspect('expired'), { ok: false, reason: 'token has expired' })
  t.same(await c.introspect('expiring-now'), { ok: false, reason: 'token has expired' })
  t.same(await c.introspect('bad-exp'), { ok: false, reason: 'token has an invalid exp' })
  t.match(await c.introspect('valid'), { ok: true })
})

t.test('a token lacking a required scope is invalid and the scope is named', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('reader', { active: true, sub: 'r', scope: 'agent:read' })
  idp.tokens.set('nobody', { active: true, sub: 'n' })
  const { c } = client(t, idp, { requiredScopes: ['agent:read', 'agent:execute'] })
  t.same(await c.introspect('reader'), {
    ok: false, reason: 'missing required scope agent:execute', missingScopes: ['agent:execute']
  })
  t.same(await c.introspect('nobody'), {
    ok: false, reason: 'missing required scope agent:read, agent:execute', missingScopes: ['agent:read', 'agent:execute']
  })
})

t.test('required scopes are satisfied through the hierarchy', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('agent-admin', { active: true, sub: 'a', scope: 'agent:admin' })
  idp.tokens.set('admin', { active: true, sub: 'b', scopes: ['admin'] })
  const { c } = client(t, idp, { requiredScopes: ['agent:read', 'agent:execute'] })
  t.match(await c.introspect('agent-admin'), { ok: true, principal: { id: 'a' } })
  t.match(await c.introspect('admin'), { ok: true, principal: { id: 'b', all: true } })
})

t.test('a wrong client secret is an identity provider failure: 503, fail closed, nothing cached', async t => {
  // The IdP answers 401 about *our* credentials, not the caller's token: a server misconfiguration. Answering the
  // caller 401 would blame a token nobody could check (and cache or count it as a failed authentication).
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  const { c, logs } = client(t, idp, { clientSecret: 'wrong-secret' })
  await t.rejects(c.introspect('tok'), IDP_UNAVAILABLE)
  await t.rejects(c.introspect('tok'), IDP_UNAVAILABLE)
  t.equal(idp.calls(), 2)
  t.match(logs.lines(), [
    { level: 40, component: 'introspection', host: new URL(idp.url).host, status: 401, msg: 'token introspection failed' },
    { level: 40, status: 401 }
  ])
})

t.test('an active result is cached: a second lookup makes no request', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'alice', scope: 'agent:read' })
  const { c } = client(t, idp)
  const first = await c.introspect('tok')
  const second = await c.introspect('tok')
  t.same(second, first)
  t.equal(idp.calls(), 1)
  t.equal(c.calls, 1)
})

t.test('an active result is cached for at most cache_ttl', async t => {
  const idp = await stubIdp(t)
  const time = clock()
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  const { c } = client(t, idp, { now: time.now, cacheTtlSeconds: 30 })
  await c.introspect('tok')
  time.advance(29_999)
  await c.introspect('tok')
  t.equal(idp.calls(), 1)
  time.advance(1)
  t.match(await c.introspect('tok'), { ok: true })
  t.equal(idp.calls(), 2)
})

t.test('an active result is never cached past the token exp', async t => {
  const idp = await stubIdp(t)
  const time = clock()
  idp.tokens.set('tok', { active: true, sub: 'alice', exp: T0 / 1000 + 5 })
  const { c } = client(t, idp, { now: time.now, cacheTtlSeconds: 60 })
  t.match(await c.introspect('tok'), { ok: true })
  time.advance(4_999)
  t.match(await c.introspect('tok'), { ok: true })
  t.equal(idp.calls(), 1)
  time.advance(1)
  t.same(await c.introspect('tok'), { ok: false, reason: 'token has expired' })
  t.equal(idp.calls(), 2)
})

t.test('an invalid result is cached for 10 s', async t => {
  const idp = await stubIdp(t)
  const time = clock()
  const { c } = client(t, idp, { now: time.now })
  t.match(await c.introspect('tok'), { ok: false })
  time.advance(9_999)
  t.match(await c.introspect('tok'), { ok: false })
  t.equal(idp.calls(), 1)
  // The token became active at the IdP; once the 10 s have passed, that is seen.
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  time.advance(1)
  t.match(await c.introspect('tok'), { ok: true })
  t.equal(idp.calls(), 2)
})

t.test('cache_ttl 0 disables the positive cache but not the negative one', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  const { c } = client(t, idp, { cacheTtlSeconds: 0 })
  await c.introspect('tok')
  await c.introspect('tok')
  t.equal(idp.calls(), 2)
  await c.introspect('inactive')
  await c.introspect('inactive')
  t.equal(idp.calls(), 3)
})

t.test('the cache holds at most maxCacheEntries results', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('a', { active: true, sub: 'a' })
  idp.tokens.set('b', { active: true, sub: 'b' })
  const { c } = client(t, idp, { maxCacheEntries: 1 })
  await c.introspect('a')
  await c.introspect('b')
  await c.introspect('b')
  t.equal(idp.calls(), 2)
  await c.introspect('a')
  t.equal(idp.calls(), 3)
})

t.test('concurrent lookups of one token share one request', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  const { c } = client(t, idp)
  const results = await Promise.all(Array.from({ length: 10 }, () => c.introspect('tok')))
  t.equal(idp.calls(), 1)
  t.equal(c.calls, 1)
  for (const res of results) t.match(res, { ok: true, principal: { id: 'alice' } })
})

t.test('concurrent lookups share one failure too', async t => {
  const idp = await stubIdp(t)
  idp.mode('error')
  const { c } = client(t, idp)
  const settled = await Promise.allSettled(Array.from({ length: 5 }, () => c.introspect('tok')))
  t.equal(idp.calls(), 1)
  for (const res of settled) t.match(res, { status: 'rejected', reason: IDP_UNAVAILABLE })
})

t.test('an identity provider that is down gives 503 and nothing is cached', async t => {
  const idp = await stubIdp(t)
  const { endpoint } = idp
  await idp.close()
  // No explicit timeout here: the 5 s default applies, and a refused connection fails long before it.
  const logs = capture()
  const c = new IntrospectionClient({
    endpoint, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, requiredScopes: [], cacheTtlSeconds: 60, hierarchy: {}
  }, pino(logs.stream))
  t.teardown(() => c.close())
  await t.rejects(c.introspect('tok'), IDP_UNAVAILABLE)
  await t.rejects(c.introspect('tok'), IDP_UNAVAILABLE)
  t.equal(c.calls, 2)
  t.match(logs.lines()[0], { level: 40, host: new URL(endpoint).host, code: 'ECONNREFUSED' })
})

t.test('a slow identity provider gives 503, and a later lookup succeeds once it recovers', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  idp.mode('slow')
  const { c, logs } = client(t, idp, { timeoutSeconds: 0.2 })
  await t.rejects(c.introspect('tok'), IDP_UNAVAILABLE)
  t.match(logs.lines()[0], { level: 40, code: 'ETIMEDOUT' })
  idp.mode('ok')
  t.match(await c.introspect('tok'), { ok: true })
  t.equal(idp.calls(), 2)
})

t.test('an identity provider answering 500 gives 503, and a later lookup succeeds once it recovers', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  idp.mode('error')
  const { c, logs } = client(t, idp)
  await t.rejects(c.introspect('tok'), IDP_UNAVAILABLE)
  t.match(logs.lines()[0], { level: 40, status: 500 })
  idp.mode('ok')
  t.match(await c.introspect('tok'), { ok: true })
  t.equal(idp.calls(), 2)
})

t.test('an identity provider answering something other than a JSON object gives 503, and nothing is cached', async t => {
  const idp = await stubIdp(t)
  idp.tokens.set('tok', { active: true, sub: 'alice' })
  idp.tokens.set('array', [{ active: true, sub: 'alice' }])
  idp.mode('garbage')
  const { c, logs } = client(t, idp)
  await t.rejects(c.introspect('tok'), IDP_UNAVAILABLE)
  t.match(logs.lines()[0], { level: 40, status: 200, code: 'invalid_response' })
  idp.mode('ok')
  await t.rejects(c.introspect('array'), IDP_UNAVAILABLE)
  t.match(await c.introspect('tok'), { ok: true })
  t.equal(idp.calls(), 3)
})

t.test('neither the token nor the client secret ever appears in the logs', async t => {
  const idp = await stubIdp(t)
  const token = 'super-secret-access-token'
  idp.tokens.set(token, { active: true, sub: 'alice' })
  const { c, logs } = client(t, idp, { clientSecret: 'wrong-secret', timeoutSeconds: 0.2 })
  await t.rejects(c.introspect(token), IDP_UNAVAILABLE)
  const good = client(t, idp, { timeoutSeconds: 0.2 })
  for (const mode of ['slow', 'garbage', 'error'] as const) {
    idp.mode(mode)
    await t.rejects(good.c.introspect(token), IDP_UNAVAILABLE)
  }
  await idp.close()
  await t.rejects(good.c.introspect(token), IDP_UNAVAILABLE)
  const text = logs.text() + good.logs.text()
  t.equal(good.logs.lines().length, 4)
  t.equal(text.includes(token), false)
  t.equal(text.includes(CLIENT_SECRET), false)
  t.equal(text.includes('wrong-secret'), false)
  t.equal(text.includes(Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')), false)
})

t.test('an endpoint that is not an http(s) URL is refused at construction', async t => {
  const opts = { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, requiredScopes: [], cacheTtlSeconds: 60, hierarchy: {} }
  const log = pino({ level: 'silent' })
  t.throws(() => new IntrospectionClient({ ...opts, endpoint: 'not a url' }, log), { code: 'A2A_ERR_INVALID_OPTIONS' })
  t.throws(() => new IntrospectionClient({ ...opts, endpoint: 'ftp://idp.example/introspect' }, log),
    { code: 'A2A_ERR_INVALID_OPTIONS' })
  const https = new IntrospectionClient({ ...opts, endpoint: 'https://idp.example/introspect' }, log)
  t.equal(https.calls, 0)
  https.close()
})
