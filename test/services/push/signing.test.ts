import { createHmac } from 'node:crypto'
import t from 'tap'
import { sign, signatureHeaders, signingKey, verify } from '../../../services/push/signing.js'

const NOW = 1_700_000_000
const BODY = '{"id":"t1","status":{"state":"completed"}}'

t.test('signingKey base64-decodes a whsec_ secret and takes any other secret as UTF-8', async t => {
  const raw = Buffer.from('0123456789abcdef0123456789abcdef')
  t.same(signingKey(`whsec_${raw.toString('base64')}`), raw)
  t.same(signingKey('plain secret é'), Buffer.from('plain secret é', 'utf8'))
  // Only the exact prefix counts.
  t.same(signingKey('WHSEC_abc'), Buffer.from('WHSEC_abc'))
})

t.test('signingKey refuses an empty secret and a whsec_ secret that is not base64', async t => {
  t.throws(() => signingKey(''), { code: 'A2A_ERR_INVALID_OPTIONS', message: 'Invalid option: the signing secret is empty' })
  for (const bad of ['whsec_', 'whsec_not base64!', 'whsec_abc=def']) {
    t.throws(() => signingKey(bad), { code: 'A2A_ERR_INVALID_OPTIONS', message: /whsec_ signing secret must be base64/ }, bad)
  }
})

t.test('sign matches a vector computed here with node:crypto', async t => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const key = Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64')
  const expected = createHmac('sha256', key).update('msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}').digest('base64')
  t.equal(sign(signingKey(secret), 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}'), `v1,${expected}`)
  // The example of the Standard Webhooks specification.
  t.equal(sign(signingKey(secret), 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}'),
    'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')
})

t.test('a whsec_ secret and the same text as a plain secret give different signatures', async t => {
  const whsec = sign(signingKey('whsec_c2VjcmV0'), 'id', NOW, BODY)
  t.equal(whsec, sign(Buffer.from('secret'), 'id', NOW, BODY))
  t.not(whsec, sign(signingKey('c2VjcmV0'), 'id', NOW, BODY))
})

t.test('signatureHeaders gives the three Standard Webhooks headers', async t => {
  const key = signingKey('s3cret')
  t.same(signatureHeaders(key, 'msg_1', NOW, BODY), {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(NOW),
    'webhook-signature': sign(key, 'msg_1', NOW, BODY)
  })
})

t.test('verify accepts what was signed, and nothing tampered with', async t => {
  const key = signingKey('whsec_c2VjcmV0c2VjcmV0c2VjcmV0')
  const headers = signatureHeaders(key, 'msg_1', NOW, BODY)
  t.equal(verify(key, headers, BODY, { now: NOW }), true)
  t.equal(verify(key, headers, `${BODY} `, { now: NOW }), false, 'body')
  t.equal(verify(key, { ...headers, 'webhook-id': 'msg_2' }, BODY, { now: NOW }), false, 'id')
  t.equal(verify(key, { ...headers, 'webhook-timestamp': String(NOW + 1) }, BODY, { now: NOW }), false, 'timestamp')
  t.equal(verify(signingKey('other'), headers, BODY, { now: NOW }), false, 'key')
  const sig = headers['webhook-signature']
  t.equal(verify(key, { ...headers, 'webhook-signature': `${sig}=` }, BODY, { now: NOW }), false, 'another spelling')
  t.equal(verify(key, { ...headers, 'webhook-signature': sig.replace('v1,', 'v2,') }, BODY, { now: NOW }), false, 'version')
  t.equal(verify(key, { ...headers, 'webhook-timestamp': `0${NOW}` }, BODY, { now: NOW }), false, 'timestamp spelling')
})

t.test('verify takes a space-separated list of signatures, repeated headers, and any header case', async t => {
  const key = signingKey('s3cret')
  const headers = signatureHeaders(key, 'msg_1', NOW, BODY)
  const good = headers['webhook-signature']
  const bad = sign(signingKey('old'), 'msg_1', NOW, BODY)
  t.equal(verify(key, { ...headers, 'webhook-signature': `${bad} ${good}` }, BODY, { now: NOW }), true)
  t.equal(verify(key, { ...headers, 'webhook-signature': `v1a,xyz ${good} ${bad}` }, BODY, { now: NOW }), true)
  t.equal(verify(key, { ...headers, 'webhook-signature': [bad, good] }, BODY, { now: NOW }), true)
  t.equal(verify(key, { ...headers, 'webhook-signature': `${bad} ${bad}` }, BODY, { now: NOW }), false)
  t.equal(verify(key, {
    'Webhook-Id': 'msg_1', 'WEBHOOK-TIMESTAMP': String(NOW), 'Webhook-Signature': good
  }, BODY, { now: NOW }), true)
})

t.test('verify refuses missing headers and malformed timestamps', async t => {
  const key = signingKey('s3cret')
  const headers = signatureHeaders(key, 'msg_1', NOW, BODY)
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    t.equal(verify(key, { ...headers, [name]: undefined }, BODY, { now: NOW }), false, name)
  }
  t.equal(verify(key, { ...headers, 'webhook-timestamp': 'soon' }, BODY, { now: NOW }), false)
  t.equal(verify(key, { ...headers, 'webhook-timestamp': '-1' }, BODY, { now: NOW }), false)
  t.equal(verify(key, {}, BODY), false)
})

t.test('verify refuses timestamps outside the tolerance, 300 s by default, either way', async t => {
  const key = signingKey('s3cret')
  const headers = signatureHeaders(key, 'msg_1', NOW, BODY)
  t.equal(verify(key, headers, BODY, { now: NOW + 300 }), true)
  t.equal(verify(key, headers, BODY, { now: NOW - 300 }), true)
  t.equal(verify(key, headers, BODY, { now: NOW + 301 }), false)
  t.equal(verify(key, headers, BODY, { now: NOW - 301 }), false)
  t.equal(verify(key, headers, BODY, { now: NOW + 1000, toleranceSeconds: 1000 }), true)
  t.equal(verify(key, headers, BODY, { now: NOW + 11, toleranceSeconds: 10 }), false)
  // Without `now`, the clock.
  const fresh = signatureHeaders(key, 'msg_2', Math.floor(Date.now() / 1000), BODY)
  t.equal(verify(key, fresh, BODY), true)
  t.equal(verify(key, headers, BODY), false)
})
