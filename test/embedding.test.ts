import Fastify from 'fastify'
import t from 'tap'
import a2a from '../index.js'
import { rpc, userMessage } from './helper.js'

t.test('a host app keeps its routes, hooks and error handler; the agent works under its prefix', async t => {
  const host = Fastify({ logger: false })
  const seen: string[] = []
  host.addHook('onRequest', async request => { seen.push(request.url) })
  host.setErrorHandler(async (_err, _request, reply) => reply.code(418).send({ host: 'handler' }))
  host.get('/hello', async () => ({ hello: 'world' }))
  host.post('/boom', async () => { throw new Error('host error') })
  host.post('/echo', async request => request.body)
  await host.register(a2a, { prefix: '/agent', config: { agent: { name: 'Embedded' } } })
  await host.ready()
  t.teardown(() => host.close())

  t.same((await host.inject('/hello')).json(), { hello: 'world' })
  const boom = await host.inject({ method: 'POST', url: '/boom' })
  t.equal(boom.statusCode, 418, 'the host error handler still handles host routes')
  const echo = await host.inject({ method: 'POST', url: '/echo', payload: { a: 1 } })
  t.same(echo.json(), { a: 1 }, 'the host JSON parser is untouched')
  const hostBadJson = await host.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload: '{' })
  t.equal(hostBadJson.statusCode, 418)

  const sent = await host.inject({ method: 'POST', url: '/agent', payload: rpc('message/send', { message: userMessage('hi') }) })
  t.equal(sent.json().result.status.state, 'completed')
  const bad = await host.inject({ method: 'POST', url: '/agent', headers: { 'content-type': 'application/json' }, payload: '{' })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { error: { code: -32700 } })
  const card = await host.inject('/agent/.well-known/agent-card.json')
  t.equal(card.json().name, 'Embedded')
  t.equal(card.json().url, 'http://localhost:80/agent/')
  t.equal((await host.inject('/agent/health')).json().status, 'healthy')
  t.equal((await host.inject('/health')).statusCode, 404, 'nothing is added outside the prefix')
  t.equal((await host.inject({ method: 'POST', url: '/', payload: rpc('status') })).statusCode, 404)
  t.ok(seen.includes('/agent'), 'host hooks see the agent routes as they see any route')
})

t.test('registering twice in one context is refused with a clear error', async t => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  await host.register(a2a, { prefix: '/a' })
  host.register(a2a, { prefix: '/b' })
  await t.rejects(async () => { await host.ready() }, { code: 'A2A_ERR_INVALID_OPTIONS' })
})

t.test('two agents in separate encapsulated contexts work side by side', async t => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  await host.register(async scope => { await scope.register(a2a, { prefix: '/one', config: { agent: { name: 'One' } } }) })
  await host.register(async scope => { await scope.register(a2a, { prefix: '/two', config: { agent: { name: 'Two' } } }) })
  await host.ready()
  t.equal((await host.inject('/one/.well-known/agent-card.json')).json().name, 'One')
  t.equal((await host.inject('/two/.well-known/agent-card.json')).json().name, 'Two')
})

t.test('an invalid config stops registration with every problem listed', async t => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  host.register(a2a, { config: { server: { port: -1 }, bogus: 1 } as any })
  await t.rejects(async () => { await host.ready() }, { code: 'A2A_ERR_INVALID_CONFIG', message: /server\.port: must be >= 0[\s\S]*bogus: unknown key|bogus: unknown key[\s\S]*server\.port/ })
})

t.test('an executor that is not a function is refused at register time', async t => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  host.register(a2a, { executor: 'nope' as any })
  await t.rejects(async () => { await host.ready() }, { code: 'A2A_ERR_INVALID_OPTIONS' })
})

t.test('with security on, the agent routes authenticate and the host routes do not', async t => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  host.get('/open', async () => ({ open: true }))
  await host.register(a2a, { prefix: '/agent', config: { security: { enabled: true, auth: { api_key: { keys: [{ key: 'k-1', scopes: [] }] } } } } })
  await host.ready()
  t.equal((await host.inject('/open')).statusCode, 200)
  t.equal((await host.inject({ method: 'POST', url: '/agent', payload: rpc('status') })).statusCode, 401)
  t.equal((await host.inject({ method: 'POST', url: '/agent', headers: { 'x-api-key': 'k-1' }, payload: rpc('status') })).statusCode, 200)
  t.equal((await host.inject('/agent/health')).statusCode, 200)
})

t.test('a prefix is normalized: trailing slashes dropped, a leading one added', async t => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  await host.register(async scope => { await scope.register(a2a, { prefix: 'agent//' }) })
  await host.ready()
  t.equal((await host.inject('/agent/health')).statusCode, 200)
  t.equal((await host.inject('/agent/.well-known/agent-card.json')).json().url, 'http://localhost:80/agent/')
})

t.test('an executor of the host\'s own with no agent.skills: the card lists a neutral skill named after it, and says so', async t => {
  const lines: Array<{ level: number, msg: string }> = []
  const stream = { write: (line: string) => { lines.push(JSON.parse(line)) } }
  const card = async (opts: Parameters<typeof a2a>[1]) => {
    const host = Fastify({ logger: { level: 'warn', stream } })
    t.teardown(() => host.close())
    await host.register(a2a, opts)
    return (await host.inject({ method: 'GET', url: '/.well-known/agent-card.json' })).json()
  }
  const own = await card({ config: { agent: { name: 'Mine' } }, executor: () => 'hi' })
  t.same(own.skills.map((s: { id: string, name: string, description: string }) => [s.id, s.name, s.description]), [['agent', 'Mine', 'What Mine does.']])
  t.notMatch(JSON.stringify(own), /list_directory \./, 'none of the built-in agent\'s examples')
  t.match(lines, [{ level: 40, msg: /no agent\.skills/ }])
  const described = await card({ config: { agent: { name: 'Mine', description: 'Plans trips' } }, executor: () => 'hi' })
  t.equal(described.skills[0].description, 'Plans trips')
  const skilled = await card({ config: { agent: { name: 'Mine', skills: [{ id: 'trips', name: 'Trips', tags: [] }] } }, executor: () => 'hi' })
  t.same(skilled.skills.map((s: { id: string }) => s.id), ['trips'], 'agent.skills as configured')
  const builtin = await card({ config: {} })
  t.same(builtin.skills.map((s: { id: string }) => s.id), ['echo'], 'the built-in agent keeps its own')
  t.equal(lines.length, 2, 'one warning per agent of its own without skills')
})
