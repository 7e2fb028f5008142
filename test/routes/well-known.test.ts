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
