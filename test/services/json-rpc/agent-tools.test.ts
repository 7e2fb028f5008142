import pino from 'pino'
import t from 'tap'
import { createPrincipal } from '../../../services/auth/principal.js'
import { createAgentTools } from '../../../services/json-rpc/agent-tools.js'
import { build } from '../../helper.js'

t.test('agent tools go through the registry: its scopes, its params checks, its handler', async t => {
  const app = await build(t)
  const log = pino({ level: 'silent' })
  const reader = createPrincipal('r', 'api_key', ['agent:read'], {})
  const tools = createAgentTools(app.a2aMethods, reader, log)
  t.same(tools.available(), ['status', 'capabilities'])
  t.match(await tools.call('status', {}), { status: 'ok' })
  await t.rejects(tools.call('list_directory', { path: '.' }), { code: -32011, data: 'needs scope files:read' })
  await t.rejects(tools.call('message/send', {}), { code: -32602, data: 'tool "message/send" does not exist' })
  await t.rejects(tools.call('nope', {}), { code: -32602 })
  const everyone = createPrincipal('a', 'bearer', ['files:read'], { 'files:read': ['agent:read'] })
  await t.rejects(createAgentTools(app.a2aMethods, everyone, log).call('list_directory', {}), { code: -32602, data: 'params.path: required' })
})

t.test('the extended card adds a skill per tool the authenticated caller may use', async t => {
  const app = await build(t)
  const method = app.a2aMethods.get('agent/getAuthenticatedExtendedCard')
  const principal = createPrincipal('r', 'api_key', ['agent:read'], {})
  const card = await method?.handler({}, { principal, log: pino({ level: 'silent' }), id: 1 }) as { skills: Array<{ id: string }> }
  t.same(card.skills.map(s => s.id), ['echo', 'tool-status', 'tool-capabilities'])
})
