import t from 'tap'
import { ANONYMOUS, createPrincipal, expandScopes, isAdmin, missingScopes } from '../../../services/auth/principal.js'

t.test('scopes expand through the hierarchy, transitively and safely through cycles', async t => {
  const hierarchy = { admin: ['*'], 'agent:admin': ['agent:read', 'agent:execute'], a: ['b'], b: ['c', 'a'] }
  t.same([...expandScopes(['agent:admin'], hierarchy)].sort(), ['agent:admin', 'agent:execute', 'agent:read'])
  t.same([...expandScopes(['a'], hierarchy)].sort(), ['a', 'b', 'c'])
  t.same([...expandScopes(['__proto__'], hierarchy)], ['__proto__'])
})

t.test('missing scopes, admin and the anonymous principal', async t => {
  const reader = createPrincipal('r', 'api_key', ['agent:read'], {})
  t.same(missingScopes(reader, ['agent:read', 'files:read']), ['files:read'])
  t.same(missingScopes(reader, []), [])
  t.equal(isAdmin(reader), false)
  t.equal(isAdmin(createPrincipal('a', 'bearer', ['admin'], {})), true)
  const star = createPrincipal('s', 'bearer', ['admin'], { admin: ['*'] })
  t.equal(star.all, true)
  t.same(missingScopes(star, ['anything']), [])
  t.equal(isAdmin(ANONYMOUS), true)
})
