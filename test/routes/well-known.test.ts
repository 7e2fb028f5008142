import t from 'tap'
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
