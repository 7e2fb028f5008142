import t from 'tap'
import { BUILTIN_SKILL, LLM_SKILL, buildAgentCard, publicUrl, toolSkill } from '../../services/agent-card.js'
import { validateConfig } from '../../services/config/load.js'

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
