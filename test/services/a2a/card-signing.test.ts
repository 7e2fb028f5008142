import { createPublicKey } from 'node:crypto'
import { calculateJwkThumbprint, decodeProtectedHeader, type JWK } from 'jose'
import t from 'tap'
import { buildAgentCard, v1Card } from '../../../services/a2a/agent-card.js'
import { CardSigner, cardPayload, cardSignerOf, signedCard, signedPayload } from '../../../services/a2a/card-signing.js'
import { jwksResolver, verifyCard } from '../../../services/a2a/card-verify.js'
import { signingKeyOf } from '../../../services/config/signing-key.js'
import { validateConfig } from '../../../services/config/validate.js'
import { ALGS, keyOf, pemOf, type Alg } from './card-keys.js'

// What is signed of a card (the v1.0 AgentCard as the official verifiers rebuild it) and the signatures made over it.

const secured = (extra: Record<string, unknown> = {}) => validateConfig({
  agent: { name: 'Signed', ...extra },
  security: { enabled: true, auth: { api_key: { keys: [{ key: 'k'.repeat(32), scopes: ['admin'] }] } } },
  protocol: { rest: true },
  push_notifications: { enabled: false }
})

const signerFor = (alg: Alg, options: { kid?: string, jku?: string } = {}) => new CardSigner(signingKeyOf({ key: pemOf(alg), alg }), options)

t.test('the payload: the v1.0 fields of the hybrid card, v0.3-only fields and proto3 defaults left out', async t => {
  const card = buildAgentCard(secured(), { prefix: '/' })
  const payload = cardPayload(card)
  for (const v03 of ['protocolVersion', 'url', 'preferredTransport', 'additionalInterfaces', 'supportsAuthenticatedExtendedCard', 'security']) {
    t.notOk(v03 in payload, `${v03} is not signed`)
  }
  t.match(payload.capabilities, { streaming: true, pushNotifications: false, extendedAgentCard: true },
    'optional bools are kept when false')
  t.notOk('stateTransitionHistory' in (payload.capabilities as object), 'stateTransitionHistory (v0.3) is not signed')
  t.same((payload.securitySchemes as any).apiKey, { apiKeySecurityScheme: { description: 'An API key', location: 'header', name: 'X-API-Key' } },
    'a scheme as its v1.0 oneof wrapper only')
  t.notOk('securityRequirements' in payload, 'requirements with no scopes are empty once cleaned, so left out')
  t.same((payload.supportedInterfaces as any[])[0], card.supportedInterfaces[0])
  t.equal(signedPayload(v1Card(card)), signedPayload(card), 'the pure v1.0 card has the same payload')
  t.equal(signedPayload({ ...card, signatures: [{ protected: 'a', signature: 'b' }] }), signedPayload(card), 'signatures are not signed')
  t.match(signedPayload(card), /^\{"capabilities":\{"extendedAgentCard":true,.*"pushNotifications":false,"streaming":true\},"defaultInputModes":\["text\/plain",/,
    'RFC 8785: keys sorted, no spaces')
})

t.test('the presence table: defaults, optional fields, oneofs, structs, proto names and stray values', async t => {
  t.equal(signedPayload({}), '{}', 'an empty card')
  t.equal(signedPayload('not a card'), '{}')
  t.same(cardPayload({
    name: '', // a plain string at its default
    description: 7, // a scalar read as a string, as the ProtoJSON parsers coerce
    documentation_url: 'https://docs.example', // the proto name
    provider: 'not an object', // a message that is not one: empty
    capabilities: { streaming: false, extensions: [{ uri: 'urn:x', required: false, params: { a: '', b: [], c: { d: null }, e: 1, f: 'x' } }, { uri: 'urn:y', required: true, params: 'not an object' }] },
    skills: [{ id: 's', tags: ['a', 2, ''], examples: 'not a list', securityRequirements: [{ schemes: { oauth: { list: ['read'] } } }, { schemes: 'not a map' }] }],
    securitySchemes: {
      both: { oauth2SecurityScheme: { flows: {} }, httpAuthSecurityScheme: { scheme: 'bearer' } },
      cc: { oauth2SecurityScheme: { flows: { implicit: { authorizationUrl: 'https://a' }, clientCredentials: { tokenUrl: 'https://t', scopes: 'x' } } } },
      code: { oauth2SecurityScheme: { flows: { authorizationCode: { authorizationUrl: 'https://a', tokenUrl: 'https://t', pkceRequired: false, scopes: { read: 'Read', n: 1 } } } } },
      v03only: { type: 'apiKey', in: 'header', name: 'X' },
      notes: 'not a scheme'
    },
    securityRequirements: 'not a list',
    defaultInputModes: [],
    supportedInterfaces: [{ url: 'https://x', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    iconUrl: null,
    extra: { kept: false }
  }), {
    description: '7',
    documentationUrl: 'https://docs.example',
    capabilities: { streaming: false, extensions: [{ uri: 'urn:x', params: { e: 1, f: 'x' } }, { uri: 'urn:y', required: true }] },
    skills: [{ id: 's', tags: ['a', '2'], securityRequirements: [{ schemes: { oauth: { list: ['read'] } } }] }],
    securitySchemes: {
      both: { httpAuthSecurityScheme: { scheme: 'bearer' } },
      cc: { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: 'https://t' } } } },
      code: { oauth2SecurityScheme: { flows: { authorizationCode: { authorizationUrl: 'https://a', tokenUrl: 'https://t', scopes: { read: 'Read', n: '1' } } } } }
    },
    supportedInterfaces: [{ url: 'https://x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]
  }, 'the first member of a oneof in declaration order; a map of strings coerced; empties cleaned at every depth')
  t.same(cardPayload({ capabilities: { pushNotifications: 0, extended_agent_card: 'yes' }, securitySchemes: { s: { mtlsSecurityScheme: { description: 'mTLS' } } } }),
    { capabilities: { pushNotifications: false, extendedAgentCard: true }, securitySchemes: { s: { mtlsSecurityScheme: { description: 'mTLS' } } } })
})

for (const alg of ALGS) {
  t.test(`${alg}: a detached flattened JWS over the payload, with the key's thumbprint as kid`, async t => {
    const signer = signerFor(alg)
    const card = buildAgentCard(secured(), { prefix: '/' })
    const signed = await signer.sign(card)
    t.equal(signed.signatures.length, 1)
    const [signature] = signed.signatures
    t.same(Object.keys(signature).sort(), ['protected', 'signature'], 'detached: no payload, no unprotected header')
    const thumbprint = await calculateJwkThumbprint(createPublicKey(keyOf(alg)).export({ format: 'jwk' }) as JWK)
    t.same(decodeProtectedHeader(signature), { alg, typ: 'JOSE', kid: thumbprint })
    t.equal(await signer.kid(), thumbprint)
    const jwks = await signer.jwks()
    t.match(jwks.keys[0], { kid: thumbprint, alg, use: 'sig' })
    t.notOk('d' in jwks.keys[0], 'the JWK set holds the public key only')
    const verified = await verifyCard(JSON.parse(JSON.stringify(signed)), jwksResolver(jwks, 'the signer\'s set'))
    t.same(verified, { ok: true, checks: [{ ok: true, kid: thumbprint, alg }] })
    const altered = await verifyCard({ ...signed, description: 'Another agent' }, jwksResolver(jwks, 'the signer\'s set'))
    t.same(altered.checks[0].reason, 'bad signature: the card was changed after it was signed, or another key signed it')
  })
}

t.test('a configured kid and jku go in the protected header', async t => {
  const signer = signerFor('ES256', { kid: 'card-2026', jku: 'https://agent.example/.well-known/jwks.json' })
  const { signatures } = await signer.sign({ name: 'A' })
  t.same(decodeProtectedHeader(signatures[0]), { alg: 'ES256', typ: 'JOSE', kid: 'card-2026', jku: 'https://agent.example/.well-known/jwks.json' })
})

t.test('a card is signed once: the same card gets the same signature, any old signature is replaced', async t => {
  const signer = signerFor('ES256')
  const card = buildAgentCard(secured(), { prefix: '/' })
  const first = await signer.sign(card)
  const again = await signer.sign({ ...card, signatures: [{ protected: 'old', signature: 'old' }] })
  t.same(again, first, 'ES256 signatures are randomized: the same bytes mean the cached signature')
  const other = await signer.sign({ ...card, name: 'Other' })
  t.not(other.signatures[0].signature, first.signatures[0].signature)
  t.notOk('signatures' in card, 'the card given is left as it is')
})

t.test('a v0.3-only field is outside the signature: changing it does not break the signature', async t => {
  const signer = signerFor('EdDSA')
  const signed = await signer.sign(buildAgentCard(secured(), { prefix: '/' }))
  const verified = await verifyCard({ ...signed, url: 'https://elsewhere.example/', protocolVersion: '0.2' }, jwksResolver(await signer.jwks(), 'set'))
  t.equal(verified.ok, true, 'as in both official SDKs: only the v1.0 fields are covered (docs/protocol.md says so)')
})

t.test('cardSignerOf: none without agent.card_signing, one signer per configuration', async t => {
  t.equal(cardSignerOf(secured()), undefined)
  const config = secured({ card_signing: { key: pemOf('ES256') } })
  const signer = cardSignerOf(config)
  t.type(signer, CardSigner)
  t.equal(cardSignerOf({ ...config, agent: { ...config.agent } }), signer, 'the same signer (and cache) for a copy of the configuration')
  t.same(await signedCard(undefined, { name: 'A' }), { name: 'A' }, 'no signer: the card as it is')
  t.equal((await signedCard(signer, { name: 'A' })).signatures?.length, 1)
})
