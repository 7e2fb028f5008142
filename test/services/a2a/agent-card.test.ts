import t from 'tap'
import {
  BUILTIN_SKILL, LLM_SKILL, buildAgentCard, cardInterfaces, grpcUrlOf, publicUrl, toolSkill, v1Card, v1SecurityScheme, type AgentCard
} from '../../../services/a2a/agent-card.js'
import { validateConfig } from '../../../services/config/load.js'

t.test('the card announces the configured security schemes when security is on', async t => {
  const config = validateConfig({
    security: {
      enabled: true,
      auth: {
        api_key: { keys: [{ key: 'k', scopes: [] }] },
        bearer: { tokens: [{ token: 'b', user: 'u', scopes: [] }] },
        oauth2: { introspection_endpoint: 'https://idp.example.com/i', client_id: 'c', client_secret: 's' }
      }
    }
  })
  const card = buildAgentCard(config, { prefix: '/' })
  t.same(Object.keys(card.securitySchemes ?? {}), ['apiKey', 'bearer', 'oauth2'])
  t.match(card.securitySchemes?.apiKey, { type: 'apiKey', in: 'header', name: 'X-API-Key' })
  t.same(card.security, [{ apiKey: [] }, { bearer: [] }, { oauth2: [] }])
  t.equal(card.supportsAuthenticatedExtendedCard, true)
})

t.test('only the schemes that have credentials are announced', async t => {
  const config = validateConfig({ security: { enabled: true, auth_type: 'bearer', auth: { bearer: { tokens: [{ token: 'b', user: 'u', scopes: [] }] } } } })
  const card = buildAgentCard(config, { prefix: '/' })
  t.same(Object.keys(card.securitySchemes ?? {}), ['bearer'])
})

t.test('the public url follows host, port and prefix, or agent.url', async t => {
  const v6 = validateConfig({ server: { host: '::1', port: 9001 } })
  t.equal(publicUrl(v6, '/agent'), 'http://[::1]:9001/agent/')
  t.equal(publicUrl(v6, 'x/'), 'http://[::1]:9001/x/')
  const fixed = validateConfig({ agent: { name: 'n', url: 'https://a.example.com/' } })
  t.equal(publicUrl(fixed, '/ignored'), 'https://a.example.com/')
  const skills = validateConfig({ agent: { name: 'n', skills: [{ id: 's', name: 'S', inputModes: ['text/plain'], outputModes: ['application/json'] }] } })
  t.match(buildAgentCard(skills, { prefix: '/' }).skills, [{ id: 's', inputModes: ['text/plain'], outputModes: ['application/json'] }])
  t.match(toolSkill('status'), { id: 'tool-status', name: 'status', tags: ['tool'] })
})

t.test('the gRPC URL: advertised_url, else <host>:<port>, an IPv6 host in brackets (CONTRACT.md §13)', async t => {
  const grpc = (server: Record<string, unknown>, advertised = '') =>
    grpcUrlOf(validateConfig({ server, protocol: { grpc: { enabled: true, port: 9090, advertised_url: advertised } } }))
  t.equal(grpc({ host: '10.0.0.5' }), '10.0.0.5:9090')
  t.equal(grpc({ host: '::1' }), '[::1]:9090')
  t.equal(grpc({ host: '::1' }, 'agent.example.com:443'), 'agent.example.com:443')
})

t.test('API keys are announced in their header and as bearer tokens', async t => {
  const config = validateConfig({ security: { enabled: true, auth: { api_key: { header: 'X-Key', keys: [{ key: 'k', scopes: [] }] } } } })
  const card = buildAgentCard(config, { prefix: '/' })
  t.same(Object.keys(card.securitySchemes ?? {}), ['apiKey', 'bearer'])
  t.equal(card.securitySchemes?.apiKey.name, 'X-Key')
})

t.test('with no skills configured, the card lists the skill of the configured agent', async t => {
  t.same(buildAgentCard(validateConfig({}), { prefix: '/' }).skills, [BUILTIN_SKILL])
  t.same(buildAgentCard(validateConfig({ agent: { name: 'n', executor: 'echo' } }), { prefix: '/' }).skills, [BUILTIN_SKILL])
  t.same(buildAgentCard(validateConfig({ agent: { name: 'n', executor: 'openai' } }), { prefix: '/' }).skills, [LLM_SKILL])
})

const secured = (extra: Record<string, unknown> = {}) => validateConfig({
  ...extra,
  agent: { name: 'n', url: 'https://a.example.com/', skills: [{ id: 's', name: 'S', inputModes: ['text/plain'] }] },
  security: {
    enabled: true,
    auth: {
      api_key: { keys: [{ key: 'k', scopes: [] }] },
      oauth2: { introspection_endpoint: 'https://idp.example.com/i', client_id: 'c', client_secret: 's' }
    }
  }
})

/** Every field of the v0.3 card that a2a.proto's AgentCard does not have. */
const V03_ONLY = ['url', 'preferredTransport', 'protocolVersion', 'additionalInterfaces', 'supportsAuthenticatedExtendedCard', 'security']

t.test('§11.5 supportedInterfaces: JSON-RPC at 1.0 then 0.3, exact version strings, the JSON-RPC url for both', async t => {
  const card = buildAgentCard(validateConfig({ server: { port: 9001 }, protocol: { rest: false } }), { prefix: '/agent' })
  t.same(card.supportedInterfaces, [
    { url: 'http://127.0.0.1:9001/agent/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: 'http://127.0.0.1:9001/agent/', protocolBinding: 'JSONRPC', protocolVersion: '0.3' }
  ])
  // §12: HTTP+JSON at the same URL, at 1.0 and 0.3 (its `/v1` routes), listed for v0.3 clients too.
  const rest = buildAgentCard(validateConfig({ server: { port: 9001 } }), { prefix: '/agent' })
  t.same(rest.supportedInterfaces.map(i => `${i.protocolBinding} ${i.protocolVersion}`), ['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3'])
  t.same(rest.additionalInterfaces, [
    { url: 'http://127.0.0.1:9001/agent/', transport: 'JSONRPC' },
    { url: 'http://127.0.0.1:9001/agent/', transport: 'HTTP+JSON' }
  ])
  // protocol.tenant: on every interface.
  const tenanted = buildAgentCard(validateConfig({ protocol: { tenant: 'acme' } }), { prefix: '/' })
  t.ok(tenanted.supportedInterfaces.every(i => i.tenant === 'acme'))
})

t.test('§11.5 enabled bindings are listed JSONRPC, HTTP+JSON, GRPC at 1.0, then the same at 0.3; never gRPC in additionalInterfaces', async t => {
  const url = 'https://a.example.com/'
  const all = cardInterfaces(url, { rest: ['1.0', '0.3'], grpcUrl: 'grpc://a.example.com:50051', tenant: 't1' })
  t.same(all.supportedInterfaces.map(i => `${i.protocolBinding} ${i.protocolVersion}`),
    ['JSONRPC 1.0', 'HTTP+JSON 1.0', 'GRPC 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3', 'GRPC 0.3'])
  t.same(all.supportedInterfaces.map(i => i.url), [url, url, 'grpc://a.example.com:50051', url, url, 'grpc://a.example.com:50051'])
  t.ok(all.supportedInterfaces.every(i => i.tenant === 't1'), 'the tenant, when configured, on every interface')
  t.same(all.additionalInterfaces, [{ url, transport: 'JSONRPC' }, { url, transport: 'HTTP+JSON' }])
  t.equal(all.url, url)
  const card = buildAgentCard(validateConfig({ agent: { name: 'n', url }, protocol: { rest: false } }), { prefix: '/', grpcUrl: 'grpc://g:1' })
  t.same(card.supportedInterfaces.map(i => i.protocolBinding), ['JSONRPC', 'GRPC', 'JSONRPC', 'GRPC'])
  t.same(card.additionalInterfaces, [{ url, transport: 'JSONRPC' }])
  t.notOk(card.supportedInterfaces.some(i => 'tenant' in i), 'no tenant unless configured')
})

t.test('§11.5 the v0.3 fields stay, and capabilities carry extendedAgentCard exactly when security is on', async t => {
  const open = buildAgentCard(validateConfig({}), { prefix: '/' })
  t.match(open, {
    protocolVersion: '0.3.0',
    url: 'http://127.0.0.1:8000/',
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url: 'http://127.0.0.1:8000/', transport: 'JSONRPC' }],
    supportsAuthenticatedExtendedCard: false
  })
  // Besides these, the idempotent-send extension (tasks.dedupe_window is on by default): test/services/a2a/extensions.test.ts.
  const { extensions, ...capabilities } = open.capabilities
  t.same(capabilities, { streaming: true, pushNotifications: true, extendedAgentCard: false, stateTransitionHistory: true })
  t.match(extensions, [{ uri: 'urn:fastify-a2a:extension:idempotent-send:v1' }])
  t.equal(open.security, undefined)
  t.equal(open.securityRequirements, undefined)
  const card = buildAgentCard(secured({ push_notifications: { enabled: false } }), { prefix: '/' })
  const { extensions: _, ...secured03 } = card.capabilities
  t.same(secured03, { streaming: true, pushNotifications: false, extendedAgentCard: true, stateTransitionHistory: true })
  t.equal(card.supportsAuthenticatedExtendedCard, true)
})

t.test('§11.5 with security on, each scheme carries its v0.3 and v1.0 forms, and both requirement forms are written', async t => {
  const card = buildAgentCard(secured(), { prefix: '/' })
  const introspected = 'An OAuth 2.0 access token from the identity provider, checked by introspection (RFC 7662)'
  t.same(card.securitySchemes, {
    apiKey: {
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
      description: 'An API key',
      apiKeySecurityScheme: { description: 'An API key', location: 'header', name: 'X-API-Key' }
    },
    bearer: {
      type: 'http',
      scheme: 'bearer',
      description: 'A static bearer token or an API key',
      httpAuthSecurityScheme: { description: 'A static bearer token or an API key', scheme: 'bearer' }
    },
    oauth2: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'opaque',
      description: introspected,
      httpAuthSecurityScheme: { description: introspected, scheme: 'bearer', bearerFormat: 'opaque' }
    }
  })
  t.same(card.security, [{ apiKey: [] }, { bearer: [] }, { oauth2: [] }])
  t.same(card.securityRequirements, [
    { schemes: { apiKey: { list: [] } } },
    { schemes: { bearer: { list: [] } } },
    { schemes: { oauth2: { list: [] } } }
  ])
})

t.test('§11.5 protocol.card_security_schemes: v1 writes each scheme as its v1.0 wrapper alone', async t => {
  const card = buildAgentCard(secured({ protocol: { card_security_schemes: 'v1' } }), { prefix: '/' })
  t.same(card.securitySchemes?.apiKey, { apiKeySecurityScheme: { description: 'An API key', location: 'header', name: 'X-API-Key' } })
  t.same(Object.values(card.securitySchemes ?? {}).map(scheme => Object.keys(scheme)),
    [['apiKeySecurityScheme'], ['httpAuthSecurityScheme'], ['httpAuthSecurityScheme']])
  t.same(card.security, [{ apiKey: [] }, { bearer: [] }, { oauth2: [] }], 'the requirements keep both forms')
  t.equal(card.securityRequirements?.length, 3)
})

t.test('§11.5 with security on, every skill carries security and securityRequirements; with it off, neither', async t => {
  const card = buildAgentCard(secured(), { prefix: '/' })
  t.same(card.skills, [{
    id: 's',
    name: 'S',
    description: '',
    tags: [],
    inputModes: ['text/plain'],
    security: [{ apiKey: [] }, { bearer: [] }, { oauth2: [] }],
    securityRequirements: [{ schemes: { apiKey: { list: [] } } }, { schemes: { bearer: { list: [] } } }, { schemes: { oauth2: { list: [] } } }]
  }])
  const builtin = buildAgentCard(validateConfig({ security: { enabled: true, auth: { api_key: { keys: [{ key: 'k' }] } } } }), { prefix: '/' })
  t.match(builtin.skills, [{ id: 'echo', securityRequirements: [{ schemes: { apiKey: { list: [] } } }, { schemes: { bearer: { list: [] } } }] }])
  t.equal(BUILTIN_SKILL.security, undefined, 'the shared built-in skill is not changed')
  t.notOk('securityRequirements' in buildAgentCard(validateConfig({}), { prefix: '/' }).skills[0])
})

t.test('§11.3 the pure v1.0 card has only a2a.proto AgentCard fields: no v0.3 field, schemes as their wrapper alone', async t => {
  const card = buildAgentCard(secured(), { prefix: '/' })
  const extended: AgentCard = { ...card, skills: [...card.skills, toolSkill('status')] }
  const v1 = v1Card(extended)
  t.same(Object.keys(v1).sort(), ['capabilities', 'defaultInputModes', 'defaultOutputModes', 'description', 'name', 'securityRequirements',
    'securitySchemes', 'skills', 'supportedInterfaces', 'version'])
  for (const field of V03_ONLY) t.notOk(field in v1, `no ${field}`)
  t.same(v1.capabilities, { streaming: true, pushNotifications: true, extendedAgentCard: true, extensions: card.capabilities.extensions })
  t.same(v1.supportedInterfaces, card.supportedInterfaces)
  t.same(v1.securitySchemes, {
    apiKey: { apiKeySecurityScheme: { description: 'An API key', location: 'header', name: 'X-API-Key' } },
    bearer: { httpAuthSecurityScheme: { description: 'A static bearer token or an API key', scheme: 'bearer' } },
    oauth2: { httpAuthSecurityScheme: card.securitySchemes?.oauth2.httpAuthSecurityScheme }
  })
  t.same(v1.securityRequirements, card.securityRequirements)
  t.same(v1.skills, [
    { id: 's', name: 'S', description: '', tags: [], inputModes: ['text/plain'], securityRequirements: card.securityRequirements },
    { id: 'tool-status', name: 'status', description: String(toolSkill('status').description), tags: ['tool'] }
  ])
  t.notOk(JSON.stringify(v1).includes('"security"'), 'no v0.3 security anywhere')
  t.notOk(JSON.stringify(v1).includes('"type"'), 'no v0.3 scheme type anywhere')
  t.notOk(JSON.stringify(v1).includes('stateTransitionHistory'), 'no v0.3 capability')
})

t.test('§11.3 the pure v1.0 card of a card without security has no security field, and reads a v0.3-only card', async t => {
  const open = v1Card(buildAgentCard(validateConfig({ agent: { name: 'n', skills: [{ id: 's', name: 'S', examples: ['e'], outputModes: ['text/plain'] }] } }), { prefix: '/' }))
  t.notOk('securitySchemes' in open)
  t.notOk('securityRequirements' in open)
  t.same(open.skills, [{ id: 's', name: 'S', description: '', tags: [], examples: ['e'], outputModes: ['text/plain'] }])
  const base = buildAgentCard(validateConfig({}), { prefix: '/' })
  const old: AgentCard = {
    ...base,
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    security: [{ bearer: ['agent:read'] }],
    skills: [{ ...BUILTIN_SKILL, security: [{ bearer: ['files:read'] }] }]
  }
  const v1 = v1Card(old)
  t.same(v1.securitySchemes, { bearer: { httpAuthSecurityScheme: { scheme: 'bearer' } } })
  t.same(v1.securityRequirements, [{ schemes: { bearer: { list: ['agent:read'] } } }])
  t.same(v1.skills[0].securityRequirements, [{ schemes: { bearer: { list: ['files:read'] } } }])
})

t.test('§11.5 a v0.3 scheme of any type has its v1.0 oneof form', async t => {
  const code = { authorizationUrl: 'https://idp/a', tokenUrl: 'https://idp/t', scopes: { 'agent:read': 'read' } }
  const client = { tokenUrl: 'https://idp/t', scopes: {} }
  t.same(v1SecurityScheme({ type: 'oauth2', flows: { clientCredentials: client, authorizationCode: code }, oauth2MetadataUrl: 'https://idp/m' }),
    { oauth2SecurityScheme: { flows: { authorizationCode: code }, oauth2MetadataUrl: 'https://idp/m' } }, 'the first flow in the proto order')
  t.same(v1SecurityScheme({ type: 'oauth2', description: 'd' }), { oauth2SecurityScheme: { description: 'd', flows: {} } })
  t.same(v1SecurityScheme({ type: 'openIdConnect', openIdConnectUrl: 'https://idp/.well-known/openid-configuration' }),
    { openIdConnectSecurityScheme: { openIdConnectUrl: 'https://idp/.well-known/openid-configuration' } })
  t.same(v1SecurityScheme({ type: 'mutualTLS', description: 'mtls' }), { mtlsSecurityScheme: { description: 'mtls' } })
  t.same(v1SecurityScheme({ type: 'http', scheme: 'bearer', httpAuthSecurityScheme: { scheme: 'bearer' } }),
    { httpAuthSecurityScheme: { scheme: 'bearer' } }, 'a merged entry gives its wrapper')
})
