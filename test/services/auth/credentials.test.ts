import { createHash } from 'node:crypto'
import t from 'tap'
import { validateConfig } from '../../../services/config/validate.js'
import { CredentialVerifier, digest, safeEqual } from '../../../services/auth/credentials.js'

const security = validateConfig({
  security: {
    enabled: true,
    auth: {
      api_key: {
        keys: [
          { key: 'key-with-id', id: 'ci-bot', description: 'ignored when an id is set', scopes: ['agent:admin'] },
          { key: 'key-with-description', description: 'ops team', scopes: ['admin'] },
          { key: 'bare-key', scopes: [] },
          { key: 'key-empty-description', description: '', scopes: ['files:read'] }
        ]
      },
      bearer: {
        tokens: [
          { token: 'bearer-alice', user: 'alice', scopes: ['agent:read'] },
          { token: 'bearer-root', user: 'root', scopes: ['admin'] }
        ]
      }
    },
    scope_hierarchy: { admin: ['*'], 'agent:admin': ['agent:read', 'agent:execute'] }
  }
}).security

const fingerprint = (key: string) => `apikey:${createHash('sha256').update(key).digest('hex').slice(0, 8)}`
const sorted = (scopes: ReadonlySet<string>) => [...scopes].sort()

t.test('digest is SHA-256 and safeEqual compares buffers of any length without throwing', async t => {
  t.equal(digest('abc').toString('hex'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  t.equal(safeEqual(digest('a'), digest('a')), true)
  t.equal(safeEqual(digest('a'), digest('b')), false)
  t.equal(safeEqual(Buffer.from('short'), Buffer.from('much longer value')), false)
})

t.test('an API key is found with its principal id and expanded scopes', async t => {
  const verifier = new CredentialVerifier(security)
  const bot = verifier.apiKey('key-with-id')
  t.match(bot, { id: 'ci-bot', scheme: 'api_key', all: false })
  t.same(sorted(bot!.scopes), ['agent:admin', 'agent:execute', 'agent:read'])

  const ops = verifier.apiKey('key-with-description')
  t.match(ops, { id: 'ops team', scheme: 'api_key', all: true })
  t.equal(ops!.scopes.has('*'), true)

  t.match(verifier.apiKey('bare-key'), { id: fingerprint('bare-key'), scheme: 'api_key', all: false })
  t.equal(verifier.apiKey('bare-key')!.scopes.size, 0)
  t.match(verifier.apiKey('key-empty-description'), { id: fingerprint('key-empty-description') })
})

t.test('an unknown API key, or a bearer token offered as an API key, is not found', async t => {
  const verifier = new CredentialVerifier(security)
  t.equal(verifier.apiKey('nope'), null)
  t.equal(verifier.apiKey('bearer-alice'), null)
  t.equal(verifier.apiKey(''), null)
  t.equal(verifier.apiKey('key-with-id '), null)
})

t.test('a static bearer token is found with its user as id and expanded scopes', async t => {
  const verifier = new CredentialVerifier(security)
  const alice = verifier.bearer('bearer-alice')
  t.match(alice, { id: 'alice', scheme: 'bearer', all: false })
  t.same(sorted(alice!.scopes), ['agent:read'])
  t.match(verifier.bearer('bearer-root'), { id: 'root', scheme: 'bearer', all: true })
})

t.test('an unknown bearer token, or an API key offered as a bearer token, is not found', async t => {
  const verifier = new CredentialVerifier(security)
  t.equal(verifier.bearer('bearer-bob'), null)
  t.equal(verifier.bearer('key-with-id'), null)
})

t.test('values of very different lengths are compared safely', async t => {
  const verifier = new CredentialVerifier(security)
  t.equal(verifier.apiKey('k'), null)
  t.equal(verifier.apiKey('x'.repeat(10_000)), null)
  t.equal(verifier.bearer('é'.repeat(3)), null)
})

t.test('when one key is configured twice, the first entry wins', async t => {
  const verifier = new CredentialVerifier({
    auth: {
      api_key: { keys: [{ key: 'dup', id: 'first', scopes: [] }, { key: 'dup', id: 'second', scopes: [] }] },
      bearer: { tokens: [] }
    },
    scope_hierarchy: {}
  })
  t.match(verifier.apiKey('dup'), { id: 'first' })
})

t.test('an empty configuration finds nothing', async t => {
  const verifier = new CredentialVerifier(validateConfig({}).security)
  t.equal(verifier.apiKey('anything'), null)
  t.equal(verifier.bearer('anything'), null)
})
