import { canonicalizeAgentCard, generateAgentCardSignature, verifyAgentCardSignature, type AgentCard } from '@a2a-js/sdk-v1'
import type { JWK } from 'jose'
import t from 'tap'
import { signedPayload } from '../../services/a2a/card-signing.js'
import { jwksResolver, verifyCard } from '../../services/a2a/card-verify.js'
import { ALGS, keyOf, pemOf } from '../services/a2a/card-keys.js'
import { listen, rpc } from '../helper.js'

// Our signed cards against the official v1.x SDK (@a2a-js/sdk 1.3): its canonical payload is ours byte for byte, its
// verifier accepts the cards we serve and refuses one altered after signing, and a card it signs verifies with ours.

const KEY = 'interop-key-0123456789abcdef'

function configFor (alg: typeof ALGS[number], extra: Record<string, unknown> = {}) {
  return {
    agent: {
      name: 'Interop Signed',
      card_signing: { key: pemOf(alg), alg, jku: 'https://keys.example/jwks.json' },
      skills: [{ id: 'a', name: 'A', description: 'Skill A', tags: ['x'], examples: ['do a'], inputModes: ['text/plain'] }],
      ...extra
    },
    security: { enabled: true, auth: { api_key: { keys: [{ key: KEY, scopes: ['admin'] }] } } },
    protocol: { rest: true }
  }
}

/** The SDK's key lookup: our JWK set, served by the agent, for the kid the signature names. */
function keysOf (url: string, jkus: Array<string | undefined>) {
  return async (kid: string, jku?: string) => {
    jkus.push(jku)
    const { keys } = await (await fetch(`${url}/.well-known/jwks.json`)).json() as { keys: JWK[] }
    const key = keys.find(k => k.kid === kid)
    if (key === undefined) throw new Error(`no key ${kid}`)
    return key
  }
}

for (const alg of ALGS) {
  t.test(`${alg}: the served cards verify with the SDK's verifyAgentCardSignature, and an altered one does not`, async t => {
    const { url } = await listen(t, { config: configFor(alg) })
    const jkus: Array<string | undefined> = []
    const verify = verifyAgentCardSignature(keysOf(url, jkus))
    const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json() as AgentCard
    t.equal(signedPayload(card), canonicalizeAgentCard(card), 'the same canonical payload, byte for byte')
    await t.resolves(verify(card), 'the public card verifies')
    t.same(jkus, ['https://keys.example/jwks.json'], 'the SDK read the jku from the protected header')
    await t.rejects(verify({ ...card, description: 'Altered' }), { message: 'No valid signatures found on agent card.' })
    await t.rejects(verify({ ...card, signatures: [] }), { message: 'No signatures found on agent card to verify.' })
    const call = async (method: string, headers: Record<string, string> = {}) => (await (await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY, ...headers },
      body: JSON.stringify(rpc(method))
    })).json() as { result: AgentCard }).result
    for (const [name, extended] of [['v0.3', await call('agent/getAuthenticatedExtendedCard')], ['v1.0', await call('GetExtendedAgentCard', { 'a2a-version': '1.0' })]] as const) {
      t.equal(signedPayload(extended), canonicalizeAgentCard(extended), `${name} extended card: the same payload`)
      await t.resolves(verify(extended), `the ${name} extended card verifies`)
    }
  })
}

t.test('cards with every kind of field canonicalize the same in the SDK and here', async t => {
  const cards: unknown[] = [
    {},
    { name: 'n', provider: { url: 'https://p', organization: '' }, documentationUrl: '', iconUrl: 'https://i', capabilities: { streaming: false } },
    {
      name: '',
      description: 7,
      documentation_url: 'https://docs.example',
      provider: 'not an object',
      capabilities: { pushNotifications: 0, extended_agent_card: 'yes', extensions: [{ uri: 'urn:x', required: false, params: { a: '', b: [], c: { d: null }, e: 1.5, f: 'x', g: [1, 'two', { h: true }] } }, { uri: 'urn:y', required: true, params: 'x' }] },
      skills: [{ id: 's', tags: ['a', 2, ''], examples: 'not a list', securityRequirements: [{ schemes: { oauth: { list: ['read'] } } }, { schemes: 'not a map' }] }],
      securitySchemes: {
        both: { oauth2SecurityScheme: { flows: {} }, httpAuthSecurityScheme: { scheme: 'bearer' } },
        cc: { oauth2SecurityScheme: { flows: { implicit: { authorizationUrl: 'https://a' }, clientCredentials: { tokenUrl: 'https://t', scopes: 'x' } }, oauth2MetadataUrl: 'https://m' } },
        code: { oauth2SecurityScheme: { flows: { authorizationCode: { authorizationUrl: 'https://a', tokenUrl: 'https://t', pkceRequired: true, scopes: { read: 'Read', n: 1 } } } } },
        device: { oauth2SecurityScheme: { flows: { deviceCode: { deviceAuthorizationUrl: 'https://d', tokenUrl: 'https://t', refreshUrl: 'https://r' } } } },
        oidc: { openIdConnectSecurityScheme: { openIdConnectUrl: 'https://o' } },
        key: { type: 'apiKey', in: 'header', name: 'X', apiKeySecurityScheme: { location: 'header', name: 'X' } },
        mtls: { mtlsSecurityScheme: {} },
        v03only: { type: 'apiKey', in: 'header', name: 'X' }
      },
      securityRequirements: [{ schemes: { key: { list: [] } } }, { schemes: { oidc: { list: ['a', 'b'] } } }],
      defaultInputModes: [],
      supportedInterfaces: [{ url: 'https://x', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }, { url: 'https://y', protocol_binding: 'GRPC', tenant: 't' }],
      iconUrl: null,
      extra: { kept: false },
      signatures: [{ protected: 'p', signature: 's' }],
      é: 'non-ASCII key',
      name_ü: 1
    },
    { name: 'Ünïcode ✓ and an emoji 🚀', description: 'line\nbreak "quoted" \\ back\u2028sep', skills: [{ id: '\u00e9', name: 'x', tags: ['\ud83d\ude80'] }] }
  ]
  for (const [i, card] of cards.entries()) {
    t.equal(signedPayload(card), canonicalizeAgentCard(card as AgentCard), `card ${i}`)
  }
})

t.test('a card the SDK signs (generateAgentCardSignature) verifies with ours', async t => {
  for (const alg of ALGS) {
    const jwk = { ...keyOf(alg).export({ format: 'jwk' }), kid: `sdk-${alg}` } as JWK
    const { d: _, ...publicJwk } = jwk
    const card = { name: 'By the SDK', description: 'd', version: '1', capabilities: { streaming: true }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [], supportedInterfaces: [] } as unknown as AgentCard
    const signed = await generateAgentCardSignature(jwk, { alg, kid: `sdk-${alg}`, typ: 'JOSE' })(card)
    const result = await verifyCard(signed, jwksResolver({ keys: [publicJwk] }, 'the SDK\'s key'))
    t.same(result, { ok: true, checks: [{ ok: true, kid: `sdk-${alg}`, alg }] }, `${alg}: the SDK's signature verifies here`)
  }
})
