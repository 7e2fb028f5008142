import Fastify from 'fastify'
import t from 'tap'
import wellKnownRoutes from '../../routes/well-known.js'
import { validateConfig } from '../../services/config/load.js'
import { build } from '../helper.js'

t.test('/health answers 200 with the agent name, version and a timestamp', async t => {
  const app = await build(t, { config: { agent: { name: 'Healthy', version: '9.9.9' } } })
  const res = await app.inject('/health')
  t.equal(res.statusCode, 200)
  t.match(res.json(), { status: 'healthy', agent: 'Healthy', version: '9.9.9' })
  t.ok(!Number.isNaN(Date.parse(res.json().timestamp)))
})

t.test('/ready answers 200 when every backend answers', async t => {
  const app = await build(t)
  const res = await app.inject('/ready')
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ready', checks: { tasks: 'ok' } })
})

t.test('/ready answers 503 naming the backend that does not answer', async t => {
  const app = await build(t)
  app.a2aTasks.store.ping = async () => { throw new Error('down') }
  const res = await app.inject('/ready')
  t.equal(res.statusCode, 503)
  t.same(res.json(), { status: 'unavailable', checks: { tasks: 'unavailable' } })
})

t.test('the agent card has every A2A v0.3.0 required field, at both paths', async t => {
  const app = await build(t, { config: { agent: { name: 'Card Agent', description: 'd' } } })
  const res = await app.inject('/.well-known/agent-card.json')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /application\/json/)
  const card = res.json()
  t.match(card, {
    protocolVersion: '0.3.0',
    name: 'Card Agent',
    description: 'd',
    url: 'http://localhost:80/',
    version: '1.0.0',
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: true },
    defaultInputModes: Array,
    defaultOutputModes: Array,
    skills: [{ id: 'echo', name: String, description: String, tags: Array }]
  })
  t.equal(card.securitySchemes, undefined)
  const old = await app.inject('/.well-known/agent.json')
  t.same(old.json(), card)
})

t.test('the card lists configured skills, agent.url, and pushNotifications false when push is off', async t => {
  const app = await build(t, {
    config: {
      agent: { name: 'Echo Agent', url: 'https://agents.example.com/a/', skills: [{ id: 's1', name: 'Skill one', tags: ['x'], examples: ['e'] }] },
      push_notifications: { enabled: false }
    }
  })
  const card = (await app.inject('/.well-known/agent-card.json')).json()
  t.equal(card.url, 'https://agents.example.com/a/')
  t.same(card.skills, [{ id: 's1', name: 'Skill one', description: '', tags: ['x'], examples: ['e'] }])
  t.equal(card.capabilities.pushNotifications, false)
})

t.test('the card builds its URL only from a Host that is a host and a port, and says how to cache it', async t => {
  const app = await build(t)
  const get = (host: string, headers: Record<string, string> = {}) => app.inject({ url: '/.well-known/agent-card.json', headers: { host, ...headers } })
  const good = await get('agents.example.com:7201')
  t.equal(good.json().url, 'http://agents.example.com:7201/')
  t.equal(good.headers['cache-control'], 'public, max-age=300')
  t.equal(good.headers.vary, 'Host')
  t.match(good.headers.etag, /^"[\w-]{27}"$/)
  for (const evil of ['127.0.0.1:7201/evil?x=', 'a b', 'x"y', 'evil.com@host', 'host:99999999', 'host/']) {
    const res = await get(evil)
    t.equal(res.statusCode, 200, evil)
    t.equal(res.json().url, 'http://127.0.0.1:8000/', `${evil}: the configured address, never an echo`)
    t.notMatch(res.body, 'evil', evil)
  }
  t.equal((await get('[::1]:8000')).json().url, 'http://[::1]:8000/')
  const again = await get('agents.example.com:7201', { 'if-none-match': String(good.headers.etag) })
  t.equal(again.statusCode, 304, 'a client holding the card gets 304')
  t.equal(again.body, '')
  t.not((await get('other.example.com')).headers.etag, good.headers.etag, 'another host, another card')
})

t.test('with agent.url the card is fixed: one ETag, no Vary', async t => {
  const app = await build(t, { config: { agent: { name: 'A', url: 'https://agents.example.com/a/' } } })
  const one = await app.inject({ url: '/.well-known/agent-card.json', headers: { host: 'x.example.com' } })
  const two = await app.inject({ url: '/.well-known/agent.json', headers: { host: 'y.example.com' } })
  t.equal(one.headers.etag, two.headers.etag)
  t.equal(one.headers.vary, undefined)
  t.equal(one.json().url, 'https://agents.example.com/a/')
})

const SECURED = { security: { enabled: true, auth: { api_key: { keys: [{ key: 'k', scopes: [] }] } } } }

t.test('§11.5 one hybrid card for every A2A-Version: v1.0 supportedInterfaces beside the kept v0.3 fields', async t => {
  const app = await build(t, { config: { agent: { name: 'A', url: 'https://agents.example.com/a/' } } })
  const url = 'https://agents.example.com/a/'
  const res = await app.inject('/.well-known/agent-card.json')
  const card = res.json()
  t.same(card.supportedInterfaces, [
    { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    { url, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' }
  ])
  t.match(card, { url, preferredTransport: 'JSONRPC', protocolVersion: '0.3.0', supportsAuthenticatedExtendedCard: false })
  t.same(card.additionalInterfaces, [{ url, transport: 'JSONRPC' }, { url, transport: 'HTTP+JSON' }])
  t.same(card.capabilities, {
    streaming: true,
    pushNotifications: true,
    extendedAgentCard: false,
    stateTransitionHistory: true,
    // tasks.dedupe_window is on by default (docs/protocol.md, "Extensions").
    extensions: [{ uri: 'urn:fastify-a2a:extension:idempotent-send:v1', description: card.capabilities.extensions[0].description, required: false, params: { window: '600s' } }]
  })
  for (const version of ['1.0', '0.3', '1', 'bogus']) {
    for (const path of ['/.well-known/agent-card.json', `/.well-known/agent-card.json?A2A-Version=${version}`, '/.well-known/agent.json']) {
      const other = await app.inject({ url: path, headers: { 'a2a-version': version } })
      t.equal(other.statusCode, 200, `${path} with A2A-Version ${version}`)
      t.equal(other.body, res.body, `${path} with A2A-Version ${version}: the same body`)
      t.equal(other.headers.etag, res.headers.etag)
    }
  }
})

t.test('§11.5 without agent.url every interface, of both versions, follows the Host', async t => {
  const app = await build(t, { prefix: '/agent' })
  const card = (await app.inject({ url: '/agent/.well-known/agent-card.json', headers: { host: 'agents.example.com:7201' } })).json()
  const url = 'http://agents.example.com:7201/agent/'
  t.equal(card.url, url)
  t.same(card.supportedInterfaces.map((i: { url: string }) => i.url), [url, url, url, url])
  t.same(card.supportedInterfaces.map((i: { protocolVersion: string }) => i.protocolVersion), ['1.0', '1.0', '0.3', '0.3'])
  t.same(card.additionalInterfaces, [{ url, transport: 'JSONRPC' }, { url, transport: 'HTTP+JSON' }])
})

t.test('§11.5 the card lists the bindings it is given, in the contract order, at the Host and with the tenant', async t => {
  const app = Fastify({ logger: false })
  await app.register(wellKnownRoutes, {
    config: validateConfig({}),
    cardPrefix: '/',
    cardBindings: { rest: ['1.0', '0.3'], grpcUrl: 'grpc://agents.example.com:50051', tenant: 'acme' },
    checks: {}
  })
  t.teardown(() => app.close())
  const res = await app.inject({ url: '/.well-known/agent-card.json', headers: { host: 'agents.example.com' } })
  const card = res.json()
  const url = 'http://agents.example.com/'
  const grpc = 'grpc://agents.example.com:50051'
  t.same(card.supportedInterfaces, [
    { url, protocolBinding: 'JSONRPC', tenant: 'acme', protocolVersion: '1.0' },
    { url, protocolBinding: 'HTTP+JSON', tenant: 'acme', protocolVersion: '1.0' },
    { url: grpc, protocolBinding: 'GRPC', tenant: 'acme', protocolVersion: '1.0' },
    { url, protocolBinding: 'JSONRPC', tenant: 'acme', protocolVersion: '0.3' },
    { url, protocolBinding: 'HTTP+JSON', tenant: 'acme', protocolVersion: '0.3' },
    { url: grpc, protocolBinding: 'GRPC', tenant: 'acme', protocolVersion: '0.3' }
  ])
  t.same(card.additionalInterfaces, [{ url, transport: 'JSONRPC' }, { url, transport: 'HTTP+JSON' }], 'never gRPC in additionalInterfaces')
  t.equal(res.headers.vary, 'Host')
  t.equal(res.headers['cache-control'], 'public, max-age=300')
  const again = await app.inject({ url: '/.well-known/agent-card.json', headers: { host: 'agents.example.com', 'if-none-match': String(res.headers.etag) } })
  t.equal(again.statusCode, 304)
})

t.test('§11.5 with security on the card has both security forms, merged schemes, and securityRequirements per skill', async t => {
  const app = await build(t, { config: SECURED })
  const res = await app.inject('/.well-known/agent-card.json')
  t.equal(res.statusCode, 200, 'the card stays public')
  const card = res.json()
  t.equal(card.capabilities.extendedAgentCard, true)
  t.equal(card.supportsAuthenticatedExtendedCard, true)
  t.same(card.securitySchemes.apiKey, {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'An API key',
    apiKeySecurityScheme: { description: 'An API key', location: 'header', name: 'X-API-Key' }
  })
  t.match(card.securitySchemes.bearer, { type: 'http', scheme: 'bearer', httpAuthSecurityScheme: { scheme: 'bearer' } })
  const requirements = [{ schemes: { apiKey: { list: [] } } }, { schemes: { bearer: { list: [] } } }]
  t.same(card.security, [{ apiKey: [] }, { bearer: [] }])
  t.same(card.securityRequirements, requirements)
  t.same(card.skills[0].security, [{ apiKey: [] }, { bearer: [] }])
  t.same(card.skills[0].securityRequirements, requirements)
})

t.test('§11.5 protocol.card_security_schemes: v1 serves each scheme as its v1.0 wrapper alone', async t => {
  const app = await build(t, { config: { ...SECURED, protocol: { card_security_schemes: 'v1' } } })
  const card = (await app.inject('/.well-known/agent-card.json')).json()
  t.same(card.securitySchemes, {
    apiKey: { apiKeySecurityScheme: { description: 'An API key', location: 'header', name: 'X-API-Key' } },
    bearer: { httpAuthSecurityScheme: { description: 'A static bearer token or an API key', scheme: 'bearer' } }
  })
  t.same(card.security, [{ apiKey: [] }, { bearer: [] }])
  t.equal(card.securityRequirements.length, 2)
})
