import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { join } from 'node:path'
import t from 'tap'
import { SigningKeyError, signingKeyOf } from '../../../services/config/signing-key.js'
import { validateConfig } from '../../../services/config/validate.js'
import type { CardSigning } from '../../../schemas/config.js'
import { jwkOf, keyOf, pemOf } from '../a2a/card-keys.js'

// `agent.card_signing.key`: read once, as a PEM or JWK text or a file, and checked against `alg`; every bad key is
// one line that never holds the key.

const signing = (key: string, alg: CardSigning['alg'] = 'ES256'): CardSigning => ({ key, alg })

t.test('a PEM, a JWK or a file, for each algorithm: the private key and its public JWK', async t => {
  const dir = t.testdir({ 'ec.pem': pemOf('ES256'), 'ed.jwk': jwkOf('EdDSA') })
  const es = signingKeyOf(signing(pemOf('ES256')))
  t.equal(es.privateKey.asymmetricKeyType, 'ec')
  t.same(Object.keys(es.publicJwk).sort(), ['crv', 'kty', 'x', 'y'], 'the public JWK has no private member')
  const rs = signingKeyOf(signing(jwkOf('RS256'), 'RS256'))
  t.same(Object.keys(rs.publicJwk).sort(), ['e', 'kty', 'n'])
  const sec1 = keyOf('ES256').export({ type: 'sec1', format: 'pem' }) as string
  t.match(sec1, /BEGIN EC PRIVATE KEY/)
  t.equal(signingKeyOf(signing(sec1)).publicJwk.x, es.publicJwk.x, 'a SEC1 PEM is the same key')
  t.equal(signingKeyOf(signing('ec.pem'), dir).publicJwk.x, es.publicJwk.x, 'a path, relative to the directory given')
  t.equal(signingKeyOf(signing(join(dir, 'ed.jwk'), 'EdDSA')).publicJwk.crv, 'Ed25519', 'an absolute path, a JWK file')
})

t.test('the key is read once per configuration object', async t => {
  const config = signing(pemOf('ES256'))
  t.equal(signingKeyOf(config), signingKeyOf(config), 'the same key object')
  const validated = validateConfig({ agent: { name: 'A', card_signing: { key: pemOf('EdDSA'), alg: 'EdDSA' } } })
  t.equal(signingKeyOf(validated.agent.card_signing as CardSigning), signingKeyOf(validated.agent.card_signing as CardSigning))
})

t.test('each bad key is a SigningKeyError with a clear message that never holds the key', async t => {
  const dir = t.testdir({ 'notes.txt': 'hello', 'public.pem': createPublicKey(keyOf('ES256')).export({ type: 'spki', format: 'pem' }) as string })
  const x25519 = generateKeyPairSync('x25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  const encrypted = keyOf('ES256').export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' }) as string
  const publicJwk = JSON.stringify(keyOf('ES256').export({ format: 'jwk' })).replace(/,"d":"[^"]+"/, '')
  const cases: Array<[string, CardSigning, string | RegExp]> = [
    ['a missing file', signing('MIGHAgEAMBMGByqGSM49AgEGCCqGSM49'), 'not a PEM or JWK key, nor a file that can be read (ENOENT)'],
    ['a file with no key', signing('notes.txt'), 'the key file holds no PEM or JWK key'],
    ['a public PEM in a file', signing('public.pem'), 'the PEM is a public key or a certificate: the private key is needed to sign'],
    ['a certificate', signing('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----'), /public key or a certificate/],
    ['an encrypted PEM', signing(encrypted), /the PEM key is encrypted: give it unencrypted/],
    ['a damaged PEM', signing('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----'), 'the PEM is not a usable private key'],
    ['a JWK that is not JSON', signing('{"kty": "EC",'), 'the JWK is not valid JSON'],
    ['a public JWK', signing(publicJwk), 'the JWK is a public key: the private key (with "d") is needed to sign'],
    ['a damaged JWK', signing('{"kty":"EC","crv":"P-256","d":"AAAA"}'), 'the JWK is not a usable private key'],
    ['an RSA key with ES256', signing(pemOf('RS256')), 'an RSA key of 2048 bits does not fit alg ES256, which needs an EC P-256 key'],
    ['a P-384 key with ES256', signing(p384), 'an EC key on curve secp384r1 does not fit alg ES256, which needs an EC P-256 key'],
    ['an RSA key of 1024 bits', signing(rsa1024, 'RS256'), 'an RSA key of 1024 bits does not fit alg RS256, which needs an RSA key of 2048 bits or more'],
    ['an Ed25519 key with RS256', signing(pemOf('EdDSA'), 'RS256'), 'an Ed25519 key does not fit alg RS256, which needs an RSA key of 2048 bits or more'],
    ['an EC key with EdDSA', signing(jwkOf('ES256'), 'EdDSA'), /an EC key on curve prime256v1 does not fit alg EdDSA, which needs an Ed25519 key/],
    ['an X25519 key', signing(x25519, 'EdDSA'), 'a key of type x25519 does not fit alg EdDSA, which needs an Ed25519 key']
  ]
  for (const [name, config, message] of cases) {
    let caught: unknown
    try {
      signingKeyOf(config, dir)
    } catch (err) {
      caught = err
    }
    t.type(caught, SigningKeyError, name)
    if (typeof message === 'string') t.equal((caught as Error).message, message, name)
    else t.match((caught as Error).message, message, name)
    t.notOk((caught as Error).message.includes(config.key.slice(0, 40)), `${name}: the message does not echo the key`)
  }
})

t.test('validateConfig reports a bad key as one config problem on agent.card_signing.key', async t => {
  const key = pemOf('RS256')
  t.throws(() => validateConfig({ agent: { name: 'A', card_signing: { key } } }), {
    code: 'A2A_ERR_INVALID_CONFIG',
    problems: ['agent.card_signing.key: an RSA key of 2048 bits does not fit alg ES256, which needs an EC P-256 key']
  })
  t.throws(() => validateConfig({ agent: { name: 'A', card_signing: { key, alg: 'HS256' } } }), { code: 'A2A_ERR_INVALID_CONFIG' }, 'alg is one of the three')
  t.equal(validateConfig({ agent: { name: 'A', card_signing: { key, alg: 'RS256' } } }).agent.card_signing?.alg, 'RS256', 'the same key fits RS256')
  t.equal(validateConfig({ agent: { name: 'A', card_signing: { key: pemOf('ES256') } } }).agent.card_signing?.alg, 'ES256', 'ES256 by default')
})
