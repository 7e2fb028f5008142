import { Ajv, type ErrorObject } from 'ajv'
import t from 'tap'
import { validateConfig } from '../../../services/config/load.js'
import { problemLine, schemaProblems } from '../../../services/config/explain.js'
import { distance, suggestKey } from '../../../services/config/suggest.js'
import { problemsOf as problemsOfCall } from './problems.js'

// The problems of validating `input`, or a failure when it is valid.
const problemsOf = (input: unknown, sources = new Map<string, string>()): string[] =>
  problemsOfCall(() => validateConfig(input, { sources }))

t.test('an enumeration lists its allowed values and the value given', async t => {
  t.same(problemsOf({ tasks: { backend: 'mysql' } }), ['tasks.backend: must be one of memory, kvcache, postgres (got "mysql")'])
  t.same(problemsOf({ push_notifications: { backend: 'redis' } }),
    ['push_notifications.backend: must be one of memory, webhook, kvcache, postgres (got "redis")'])
  t.same(problemsOf({ server: { log_level: 'loud' } }),
    ['server.log_level: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'])
  t.same(problemsOf({ security: { auth_type: 'jwt' } }), ['security.auth_type: must be one of api_key, bearer, oauth2 (got "jwt")'])
  // A boolean branch is its two values; another type is named.
  t.same(problemsOf({ console: { enabled: 'yes' } }), ['console.enabled: must be one of auto, true, false (got "yes")'])
  t.same(problemsOf({ server: { trust_proxy: 'x' } }), ['server.trust_proxy: must be one of true, false, a list (got "x")'])
})

t.test('a JSON Schema enum keyword lists its allowed values too', async t => {
  const ajv = new Ajv({ allErrors: true, verbose: true })
  const check = ajv.compile({ type: 'object', properties: { backend: { type: 'string', enum: ['memory', 'redis'] } } })
  t.equal(check({ backend: 'mysql' }), false)
  t.same(schemaProblems(check.errors as ErrorObject[], new Map()), ['backend: must be one of memory, redis (got "mysql")'])
})

t.test('a wrong type is said in words, with the value given', async t => {
  t.same(problemsOf({ server: { port: 'abc', heartbeat_interval: 'often' } }), [
    'server.port: must be an integer (got "abc")',
    'server.heartbeat_interval: must be a number (got "often")'
  ])
  t.same(problemsOf({ agent: [], metrics: { enabled: 'maybe' }, server: { port: { a: 1 } } }), [
    'agent: must be a mapping (got a list)',
    'server.port: must be an integer (got a mapping)',
    'metrics.enabled: must be true or false (got "maybe")'
  ])
  t.same(problemsOf({ agent: { name: 'A', skills: 'all' } }), ['agent.skills: must be a list (got "all")'])
  t.same(problemsOf({ agent: { name: 'A', input_modes: [{}] } }), ['agent.input_modes.0: must be a string (got a mapping)'])
})

t.test('the value given is shown short, and never for a key that may hold a credential', async t => {
  t.same(problemsOf({ tasks: { backend: 'x'.repeat(100) } }),
    [`tasks.backend: must be one of memory, kvcache, postgres (got "${'x'.repeat(57)}…")`])
  t.same(problemsOf({ protocol: { tenant: 'v1' } }), ['protocol.tenant: must match pattern "^(?!v1$)[A-Za-z0-9._~-]{1,64}$" (got "v1")'])
  t.same(problemsOf({ security: { auth: { api_key: { keys: 'sk-live-secret' } } } }), ['security.auth.api_key.keys: must be a list'])
  t.same(problemsOf({ push_notifications: { config: { default_headers: { authorization: ['Bearer x'] } } } }),
    ['push_notifications.config.default_headers.authorization: must be a string (got a list)'])
  // Numbers are never secret, whatever the key.
  t.same(problemsOf({ agent: { name: 'A', llm: { max_tokens: 0 } } }), ['agent.llm.max_tokens: must be >= 1 (got 0)'])
  t.equal(problemLine(['a', 'token'], 'must be x', new Map(), 'abc'), 'a.token: must be x')
  t.equal(problemLine(['a', 'b'], 'must be x', new Map(), null), 'a.b: must be x (got null)')
  t.equal(problemLine(['a', 'b'], 'must be x', new Map([['a.b', '$B']]), false), 'a.b: must be x (got false from $B)')
  t.equal(problemLine(['a', 'url'], 'must be x', new Map([['a.url', '$U']]), 'redis://:pw@h'), 'a.url: must be x (from $U)')
})

t.test('an unknown key suggests the close key at its level', async t => {
  t.same(problemsOf({ server: { prot: 8000 } }), ['server.prot: unknown key (did you mean server.port?)'])
  t.same(problemsOf({ server: { Port: 8000 } }), ['server.Port: unknown key (did you mean server.port?)'])
  t.same(problemsOf({ servr: { port: 8000 } }), ['servr: unknown key (did you mean server?)'])
  t.same(problemsOf({ agent: { name: 'A', delay: 5 } }), ['agent.delay: unknown key (did you mean agent.delay_ms?)'])
  t.same(problemsOf({ push_notifications: { config: { retries: 2 } } }),
    ['push_notifications.config.retries: unknown key (did you mean push_notifications.config.max_retries?)'])
  t.same(problemsOf({ server: { timeout: 5 } }),
    ['server.timeout: unknown key (did you mean server.request_timeout, server.write_timeout or server.shutdown_timeout?)'])
  // Inside a list item and a map entry, the item's own keys.
  t.same(problemsOf({ agent: { name: 'A', skills: [{ id: 'a', name: 'A', tag: ['x'] }] } }),
    ['agent.skills.0.tag: unknown key (did you mean agent.skills.0.tags?)'])
  t.same(problemsOf({ services: { main: { type: 'cache', urll: 'redis://h' } } }),
    ['services.main.urll: unknown key (did you mean services.main.url?)'])
})

t.test('an unknown key that is a key at another level suggests it there', async t => {
  t.same(problemsOf({ port: 8000 }), ['port: unknown key (did you mean server.port or protocol.grpc.port?)'])
  t.same(problemsOf({ server: { allowed_networks: [] } }),
    ['server.allowed_networks: unknown key (did you mean push_notifications.config.allowed_networks?)'])
})

t.test('an unknown key with nothing close, or too much, suggests nothing', async t => {
  t.same(problemsOf({ bogus: 1, ab: 2, enabled: true }), ['bogus: unknown key', 'ab: unknown key', 'enabled: unknown key'])
  // More than three keys of server have the word: naming them all would not help.
  t.same(problemsOf({ server: { bytes: 1 } }), ['server.bytes: unknown key'])
  t.same(suggestKey(['a'], 'abcd', ['wxyz']), [])
  t.same(suggestKey(['a'], 'abcd', ['abdc', 'wxyz']), ['a.abdc'])
})

t.test('the edit distance counts a transposition as one edit', async t => {
  t.equal(distance('prot', 'port'), 1)
  t.equal(distance('agnet', 'agent'), 1)
  t.equal(distance('', 'abc'), 3)
  t.equal(distance('kitten', 'sitting'), 3)
  t.equal(distance('ca', 'abc'), 3)
  t.equal(distance('same', 'same'), 0)
})
