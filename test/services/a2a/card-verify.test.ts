import { createServer } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { base64url, type JWK } from 'jose'
import t from 'tap'
import { CardSigner } from '../../../services/a2a/card-signing.js'
import { KeyLookupError, jkuResolver, jwksResolver, readJson, verifyCard, verifyCardSource } from '../../../services/a2a/card-verify.js'
import { signingKeyOf } from '../../../services/config/signing-key.js'
import { pemOf, type Alg } from './card-keys.js'
import type { Teardown } from '../../helper.js'

// Checking a card's signatures: per signature, the key it names and why it fails.

const CARD = { name: 'Verified', description: 'A card', version: '1.0.0', url: 'http://a.example/' }

async function signed (alg: Alg = 'ES256', options: { kid?: string, jku?: string } = {}) {
  const signer = new CardSigner(signingKeyOf({ key: pemOf(alg), alg }), options)
  return { card: await signer.sign(CARD), jwks: await signer.jwks(), kid: await signer.kid() }
}

/** An HTTP server answering each path from `routes` (a JSON body, or a status), closed at teardown. */
async function serveJson (t: Teardown, routes: Record<string, unknown>): Promise<string> {
  const server = createServer((req, res) => {
    const body = routes[req.url as string]
    if (typeof body === 'number') {
      res.writeHead(body).end()
    } else if (body === undefined) {
      res.writeHead(404).end()
    } else {
      res.setHeader('content-type', 'application/json').end(typeof body === 'string' ? body : JSON.stringify(body))
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

t.test('each way a signature fails has its reason', async t => {
  const { card, jwks, kid } = await signed()
  const keys = jwksResolver(jwks, 'keys.json')
  const header = (h: Record<string, unknown>) => base64url.encode(JSON.stringify(h))
  const [good] = card.signatures
  t.same(await verifyCard([card], keys), { ok: false, checks: [], reason: 'not an agent card: not a JSON object' })
  t.same(await verifyCard(CARD, keys), { ok: false, checks: [], reason: 'no signature: the card has no signatures' })
  t.same(await verifyCard({ ...CARD, signatures: [] }, keys), { ok: false, checks: [], reason: 'no signature: the card has no signatures' })
  const cases: Array<[string, unknown, Record<string, unknown>]> = [
    ['not an object', 'sig', { ok: false, reason: 'malformed signature: protected and signature must be strings' }],
    ['no signature', { protected: good.protected }, { ok: false, reason: 'malformed signature: protected and signature must be strings' }],
    ['a header that is not base64url JSON', { protected: '!!', signature: 'x' }, { ok: false, reason: 'malformed signature: the protected header is not base64url JSON' }],
    ['no kid nor typ', { protected: header({ alg: 'ES256' }), signature: 'x' }, { ok: false, alg: 'ES256', reason: 'malformed signature: the protected header has no kid, typ' }],
    ['HS256', { protected: header({ alg: 'HS256', kid, typ: 'JOSE' }), signature: 'x' }, { ok: false, kid, reason: 'unsupported alg HS256 (supported: ES256, RS256, EdDSA)' }],
    ['typ JWT', { protected: header({ alg: 'ES256', kid, typ: 'JWT' }), signature: 'x' }, { ok: false, kid, reason: 'typ is JWT, not JOSE' }],
    ['an unknown kid', { protected: header({ alg: 'ES256', kid: 'other', typ: 'JOSE' }), signature: good.signature }, { ok: false, kid: 'other', reason: 'unknown kid: other is not in keys.json' }],
    ['a key of another type', { protected: header({ alg: 'RS256', kid, typ: 'JOSE' }), signature: good.signature }, { ok: false, kid, alg: 'RS256', reason: /^the key of kid .+ cannot verify RS256: / }],
    ['another signature', { protected: good.protected, signature: base64url.encode(new Uint8Array(64)) }, { ok: false, kid, reason: /^bad signature/ }],
    ['an unprotected header', { ...good, header: { note: 'unprotected' } }, { ok: true, kid, alg: 'ES256' }]
  ]
  for (const [name, entry, expected] of cases) {
    const result = await verifyCard({ ...card, signatures: [entry] }, keys)
    t.equal(result.ok, expected.ok, name)
    t.match(result.checks[0], expected, name)
  }
  const mixed = await verifyCard({ ...card, signatures: [good, { protected: good.protected, signature: 'AAAA' }] }, keys)
  t.same(mixed.checks.map(c => c.ok), [true, false])
  t.equal(mixed.ok, false, 'every signature must verify')
})

t.test('a resolver that fails for another reason than a missing key is a bug, not a verdict', async t => {
  const { card } = await signed()
  await t.rejects(verifyCard(card, async () => { throw new TypeError('bug') }), { message: 'bug' })
})

t.test('jwksResolver finds a key by kid, else by thumbprint; a single JWK is a set of one', async t => {
  const { card, jwks, kid } = await signed('EdDSA', { kid: 'named' })
  t.equal((await verifyCard(card, jwksResolver(jwks, 'set'))).ok, true, 'by kid')
  const { card: byPrint, jwks: anonymous } = await signed('RS256')
  const { kid: _, ...bare } = anonymous.keys[0]
  t.equal((await verifyCard(byPrint, jwksResolver({ keys: [jwks.keys[0], bare] }, 'set'))).ok, true, 'a key without kid, by its thumbprint')
  t.equal((await verifyCard(byPrint, jwksResolver(bare, 'a JWK'))).ok, true, 'a single JWK')
  t.throws(() => jwksResolver({ keys: 'no' }, 'bad.json'), new KeyLookupError('bad.json is not a JWK set ({"keys": [...]}) nor a JWK'))
  t.throws(() => jwksResolver([], 'bad.json'), { message: /not a JWK set/ })
  t.equal(kid, 'named')
})

t.test('jkuResolver fetches each jku once; no jku, an unreachable one, each a reason', async t => {
  const { jwks } = await signed('ES256')
  const base = await serveJson(t, { '/jwks.json': jwks, '/missing.json': 404 })
  const withJku = await signed('ES256', { jku: `${base}/jwks.json` })
  const fetched: string[] = []
  const resolver = jkuResolver(async source => { fetched.push(source); return await readJson(source) })
  const served = await signed('ES256', { jku: `${base}/jwks.json` })
  t.equal((await verifyCard(served.card, resolver)).ok, true, 'the key from the jku')
  t.equal((await verifyCard(served.card, resolver)).ok, true)
  t.same(fetched, [`${base}/jwks.json`], 'fetched once')
  t.equal((await verifyCard(withJku.card, jkuResolver())).ok, true, 'the default resolver fetches with fetch()')
  const noJku = await signed('ES256')
  t.equal((await verifyCard(noJku.card, jkuResolver())).checks[0].reason, 'no key: the signature names no jku (give the JWK set with --jwks)')
  const missing = await signed('ES256', { jku: `${base}/missing.json` })
  t.equal((await verifyCard(missing.card, jkuResolver())).checks[0].reason, `jwks unreachable: cannot fetch ${base}/missing.json: HTTP 404`)
})

t.test('readJson: a file or an http(s) URL, and why it cannot be read', async t => {
  const dir = t.testdir({ 'card.json': '{"name":"A"}', 'bad.json': 'not json' })
  const base = await serveJson(t, { '/card.json': { name: 'B' }, '/text': 'not json' })
  t.same(await readJson(join(dir, 'card.json')), { name: 'A' })
  t.same(await readJson(`${base}/card.json`), { name: 'B' })
  await t.rejects(readJson(join(dir, 'none.json')), { message: `cannot read ${join(dir, 'none.json')}: ENOENT` })
  await t.rejects(readJson(join(dir, 'bad.json')), { message: `${join(dir, 'bad.json')} is not JSON` })
  await t.rejects(readJson(`${base}/text`), { message: `${base}/text is not JSON` })
  await t.rejects(readJson(`${base}/gone`), { message: `cannot fetch ${base}/gone: HTTP 404` })
  // A port nothing listens on any more.
  const gone = createServer().listen(0, '127.0.0.1')
  await once(gone, 'listening')
  const { port } = gone.address() as AddressInfo
  await new Promise(resolve => gone.close(resolve))
  await t.rejects(readJson(`http://127.0.0.1:${port}/card.json`), { message: `cannot fetch http://127.0.0.1:${port}/card.json: connect ECONNREFUSED 127.0.0.1:${port}` })
})

t.test('verifyCardSource: the lines the CLI prints', async t => {
  const { card, jwks, kid } = await signed('ES256')
  const dir = t.testdir({ 'card.json': JSON.stringify(card), 'jwks.json': JSON.stringify(jwks), 'unsigned.json': JSON.stringify(CARD) })
  const ok = await verifyCardSource(join(dir, 'card.json'), join(dir, 'jwks.json'))
  t.same(ok, { ok: true, lines: [`signature 1 (kid ${kid}, ES256): ok`, `verified: ${join(dir, 'card.json')} (1 of 1 signatures)`] })
  const unsigned = await verifyCardSource(join(dir, 'unsigned.json'), join(dir, 'jwks.json'))
  t.same(unsigned, { ok: false, lines: ['no signature: the card has no signatures', `not verified: ${join(dir, 'unsigned.json')}`] })
  const noJwks = await verifyCardSource(join(dir, 'card.json'), join(dir, 'none.json'))
  t.same(noJwks, { ok: false, lines: [`jwks unreachable: cannot read ${join(dir, 'none.json')}: ENOENT`] })
  const noCard = await verifyCardSource(join(dir, 'none.json'))
  t.same(noCard, { ok: false, lines: [`cannot read ${join(dir, 'none.json')}: ENOENT`] })
  const noKid = { ...card, signatures: [{ protected: base64url.encode('{"kid":"k"}'), signature: 'x' }, 'junk'] }
  const malformed = t.testdir({ 'card.json': JSON.stringify(noKid) })
  const lines = (await verifyCardSource(join(malformed, 'card.json'))).lines
  t.same(lines.slice(0, 2), ['signature 1 (kid k): failed: malformed signature: the protected header has no alg, typ',
    'signature 2: failed: malformed signature: protected and signature must be strings'])
})

t.test('JWK keys from another algorithm family do not verify', async t => {
  const { card } = await signed('ES256', { kid: 'k' })
  const other = await signed('EdDSA', { kid: 'k' })
  const result = await verifyCard(card, async () => other.jwks.keys[0] as JWK)
  t.match(result.checks[0].reason, /^the key of kid k cannot verify ES256: /)
})
