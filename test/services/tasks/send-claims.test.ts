import t from 'tap'
import type { Message } from '../../../schemas/task.js'
import { MemorySendClaims, claimKey, claimText, messageHash, parseClaim } from '../../../services/tasks/send-claims.js'
import type { SendClaim } from '../../../services/tasks/store.js'

// What an idempotent send's claim is made of (services/tasks/send-claims.ts): the message's hash, the claim's text
// form, and the memory store's bounded claims.

const message = (extra: Partial<Message> = {}): Message =>
  ({ kind: 'message', role: 'user', messageId: 'm-1', parts: [{ kind: 'text', text: 'hi' }], ...extra }) as Message

t.test('messageHash: the same parts, metadata, taskId and contextId hash alike, whatever the key order; any other differs', async t => {
  const base = messageHash(message({ metadata: { a: 1, b: [1, { c: 2, d: 3 }] } }))
  t.match(base, /^[A-Za-z0-9_-]{43}$/, 'SHA-256, base64url')
  t.equal(messageHash(message({ metadata: { b: [1, { d: 3, c: 2 }], a: 1 } })), base, 'keys in another order')
  t.equal(messageHash({ ...message({ metadata: { a: 1, b: [1, { c: 2, d: 3 }], e: undefined } }), messageId: 'other', role: 'agent' } as Message), base,
    'an undefined member, the messageId and the role are not part of it')
  const others = [
    message(),
    message({ metadata: { a: 2, b: [1, { c: 2, d: 3 }] } }),
    message({ metadata: { a: 1, b: [1, { c: 2, d: 3 }] }, taskId: 't' }),
    message({ metadata: { a: 1, b: [1, { c: 2, d: 3 }] }, contextId: 'c' }),
    message({ metadata: { a: 1, b: [1, { c: 2, d: 3 }] }, parts: [{ kind: 'text', text: 'ho' }] })
  ]
  t.equal(new Set([base, ...others.map(messageHash)]).size, 6, 'other metadata, taskId, contextId or parts: another hash')
})

t.test('a claim as text keeps a task id with spaces; keys of owner and messageId never collide', async t => {
  const claim: SendClaim = { owner: 'o', messageId: 'm', taskId: 'a task id', hash: 'h', at: 12 }
  t.same(parseClaim('o', 'm', claimText(claim)), claim)
  t.not(claimKey('a:1', 'm'), claimKey('a', ':1m'))
})

t.test('MemorySendClaims: bounded, the oldest dropped first; expired ones dropped; release and takeover from anywhere in the list', async t => {
  let now = 1000
  const claims = new MemorySendClaims(3, () => now)
  const claim = (messageId: string, taskId = `t-${messageId}`, at = now): SendClaim => ({ owner: 'o', messageId, taskId, hash: 'h', at })
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(id => claim(id))
  for (const x of [a, b, c]) t.equal(claims.claim(x, 100), null)
  claims.release(b)
  t.equal(claims.size, 2, 'a claim in the middle released')
  t.equal(claims.claim(claim('b', 'again'), 100), null)
  t.equal(claims.claim(d, 100), null)
  t.equal(claims.size, 3, 'bounded')
  t.equal(claims.claim(claim('a', 'later'), 100), null, 'the oldest was dropped: its key is free')
  const taken = claim('c', 'took over')
  t.equal(claims.claim(taken, 100, c), null, 'taken over from the claim that held it')
  t.same(claims.claim(claim('c', 'x'), 100), taken)
  claims.release(claim('c', 'x'))
  t.same(claims.claim(claim('c', 'y'), 100), taken, 'another claim releases nothing')
  now += 100
  t.equal(claims.claim(claim('z'), 100), null)
  t.equal(claims.size, 1, 'every claim past its window dropped')
})
