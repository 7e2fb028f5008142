import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import a2a from '../../index.js'
import { verifyCard, jwksResolver, type CardVerification } from '../../services/a2a/card-verify.js'
import { pemOf } from '../services/a2a/card-keys.js'
import { build, listenGrpc, restCall, rpc } from '../helper.js'
import { grpcClients, rawUnary, unary } from './grpc-client.js'
import { V1_SERVICE, protoCodec } from '../../services/grpc/protos.js'

// Every route and method that answers a card answers it signed (A2A v1.0 §8.4) when agent.card_signing is set: the
// well-known paths, prefixed mounts, GET /v1/card, the extended card over JSON-RPC (v0.3 and v1.0), HTTP+JSON and
// gRPC, each verifying with the key /.well-known/jwks.json serves.

const KEY = 'card-key-0123456789abcdef'
const signing = { key: pemOf('ES256'), kid: 'test-key' }
const config = {
  agent: { name: 'Signed Agent', card_signing: signing },
  security: { enabled: true, auth: { api_key: { keys: [{ key: KEY, scopes: ['admin'] }] } } },
  protocol: { rest: true }
}

async function verified (app: FastifyInstance, card: unknown, jwksPath = '/.well-known/jwks.json'): Promise<CardVerification> {
  const jwks = await app.inject(jwksPath)
  return await verifyCard(card, jwksResolver(jwks.json(), jwksPath))
}

t.test('the well-known card, at both paths, is signed; its key is at /.well-known/jwks.json', async t => {
  const app = await build(t, { config })
  const jwks = await app.inject('/.well-known/jwks.json')
  t.equal(jwks.statusCode, 200)
  t.equal(jwks.headers['cache-control'], 'public, max-age=300')
  t.match(jwks.json(), { keys: [{ kty: 'EC', crv: 'P-256', kid: 'test-key', alg: 'ES256', use: 'sig' }] })
  t.notOk('d' in jwks.json().keys[0], 'the public key only')
  for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
    const res = await app.inject(path)
    t.equal(res.statusCode, 200)
    const card = res.json()
    t.equal(card.signatures.length, 1, path)
    t.same(await verified(app, card), { ok: true, checks: [{ ok: true, kid: 'test-key', alg: 'ES256' }] }, path)
  }
  const card = (await app.inject('/.well-known/agent-card.json')).json()
  const altered = await verified(app, { ...card, name: 'Impostor' })
  t.match(altered.checks, [{ ok: false, reason: /^bad signature/ }], 'a card altered after signing fails')
})

t.test('ETag and 304 still work: a card is signed once, so its bytes and tag stay the same', async t => {
  const app = await build(t, { config })
  const first = await app.inject('/.well-known/agent-card.json')
  const second = await app.inject('/.well-known/agent-card.json')
  t.equal(second.body, first.body, 'the same bytes (ES256 signatures differ at each signing)')
  t.equal(second.headers.etag, first.headers.etag)
  const cached = await app.inject({ url: '/.well-known/agent-card.json', headers: { 'if-none-match': first.headers.etag as string } })
  t.equal(cached.statusCode, 304)
  t.equal(cached.body, '')
})

t.test('per Host (no agent.url): each Host\'s card carries its own signature, made once', async t => {
  const app = await build(t, { config })
  const at = async (host: string) => await app.inject({ url: '/.well-known/agent-card.json', headers: { host } })
  const a = await at('a.example:8080')
  const b = await at('b.example')
  t.equal(a.headers.vary, 'Host')
  t.equal(a.json().url, 'http://a.example:8080/')
  t.equal(b.json().url, 'http://b.example/')
  t.not(a.headers.etag, b.headers.etag)
  t.not(a.json().signatures[0].signature, b.json().signatures[0].signature)
  t.equal((await verified(app, a.json())).ok, true)
  t.equal((await verified(app, b.json())).ok, true)
  t.equal((await at('a.example:8080')).body, a.body, 'the same Host gets the same bytes')
  const odd = await at('not a host!')
  t.equal(odd.json().url, 'http://127.0.0.1:8000/', 'a Host that is not one gets the configured card')
  t.equal((await verified(app, odd.json())).ok, true)
  const cached = await app.inject({ url: '/.well-known/agent-card.json', headers: { host: 'b.example', 'if-none-match': b.headers.etag as string } })
  t.equal(cached.statusCode, 304, 'a Host\'s tag gives a 304')
})

t.test('under a prefix in a host app, and with agent.url fixed', async t => {
  const host = Fastify({ logger: false })
  host.get('/', async () => 'host')
  await host.register(a2a, { prefix: '/agent', config: { ...config, agent: { ...config.agent, url: 'https://agent.example/agent/' } } })
  t.teardown(() => host.close())
  const res = await host.inject('/agent/.well-known/agent-card.json')
  t.equal(res.json().url, 'https://agent.example/agent/')
  t.notOk(res.headers.vary, 'one card for every Host')
  t.equal((await verified(host, res.json(), '/agent/.well-known/jwks.json')).ok, true)
  t.equal((await host.inject('/.well-known/jwks.json')).statusCode, 404, 'nothing added outside the prefix')
})

t.test('GET /v1/card: the public card signed as the well-known one, the extended card signed for a caller', async t => {
  const app = await build(t, { config })
  const open = await app.inject('/v1/card')
  t.equal(open.body, (await app.inject('/.well-known/agent-card.json')).body, 'the same signed bytes')
  const mine = await restCall(app, 'GET', '/v1/card', undefined, { 'x-api-key': KEY })
  t.ok(mine.body.skills.some((s: { id: string }) => s.id.startsWith('tool-')), 'the extended card')
  t.equal((await verified(app, mine.body)).ok, true)
  const v1 = await restCall(app, 'GET', '/extendedAgentCard', undefined, { 'x-api-key': KEY, 'a2a-version': '1.0' })
  t.equal(v1.status, 200)
  t.notOk('protocolVersion' in v1.body, 'the pure v1.0 card')
  t.equal((await verified(app, v1.body)).ok, true, 'REST /extendedAgentCard is signed')
})

t.test('the extended card over JSON-RPC, v0.3 and v1.0, is signed, and signed once per form', async t => {
  const app = await build(t, { config })
  const call = async (method: string, headers: Record<string, string> = {}) =>
    (await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': KEY, ...headers }, payload: rpc(method) })).json().result
  const v03 = await call('agent/getAuthenticatedExtendedCard')
  t.equal(v03.protocolVersion, '0.3.0')
  t.same(await verified(app, v03), { ok: true, checks: [{ ok: true, kid: 'test-key', alg: 'ES256' }] })
  const v10 = await call('GetExtendedAgentCard', { 'a2a-version': '1.0' })
  t.notOk('url' in v10)
  t.same(await verified(app, v10), { ok: true, checks: [{ ok: true, kid: 'test-key', alg: 'ES256' }] })
  t.same(await call('agent/getAuthenticatedExtendedCard'), v03, 'the same signature on the next call')
})

t.test('gRPC: GetExtendedAgentCard (v1.0) carries a valid signature; v0.3 GetAgentCard is not signed', async t => {
  const { app, target } = await listenGrpc(t, { config })
  const { v03, raw } = grpcClients(t, target)
  // The answer read as ProtoJSON, as a client verifying it reads it (a Struct as JSON, not proto-loader's objects).
  const codec = protoCodec()
  const answer = await rawUnary(raw, `/${V1_SERVICE}/GetExtendedAgentCard`, Buffer.alloc(0), { 'x-api-key': KEY })
  const extended = codec.read(codec.method(V1_SERVICE, 'GetExtendedAgentCard').response, answer.value as Buffer) as Record<string, any>
  t.equal(extended.signatures.length, 1)
  t.ok(extended.skills.some((s: { id: string }) => s.id.startsWith('tool-')), 'the extended card')
  t.same(await verified(app, extended), { ok: true, checks: [{ ok: true, kid: 'test-key', alg: 'ES256' }] })
  // The v0.3 proto's card has no supportedInterfaces, so a v1.0 signature could not verify on it.
  for (const metadata of [{}, { 'x-api-key': KEY }] as Array<Record<string, string>>) {
    const card = await unary(v03, 'GetAgentCard', {}, metadata)
    t.equal(card.value.name, 'Signed Agent')
    t.same(card.value.signatures ?? [], [], 'no signatures on the v0.3 gRPC card')
  }
})

t.test('without agent.card_signing: no signatures, no JWK set', async t => {
  const app = await build(t, { config: { ...config, agent: { name: 'Unsigned' } } })
  t.notOk('signatures' in (await app.inject('/.well-known/agent-card.json')).json())
  t.equal((await app.inject('/.well-known/jwks.json')).statusCode, 404)
})
