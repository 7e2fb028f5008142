import t from 'tap'
import { ConnectionAdmission } from '../../../services/grpc/admission.js'

const never = new AbortController().signal

t.test('a connection runs at most the limit at once; the next is admitted in order as each leaves, counted once', async t => {
  const admission = new ConnectionAdmission(2)
  const a = {}
  const b = {}
  const first = await admission.enter(a, never)
  const second = await admission.enter(a, never)
  const order: string[] = []
  const third = admission.enter(a, never).then(leave => { order.push('third'); return leave })
  const fourth = admission.enter(a, never).then(leave => { order.push('fourth'); return leave })
  t.ok(await admission.enter(b, never), 'another connection is not held up')
  await Promise.resolve()
  t.same(order, [], 'past the limit, calls wait')
  first?.()
  first?.()
  await third
  t.same(order, ['third'], 'a place given back twice admits one call')
  second?.()
  await fourth
  t.same(order, ['third', 'fourth'])
})

t.test('a call whose client leaves while it waits is never admitted and holds no place', async t => {
  const admission = new ConnectionAdmission(1)
  const a = {}
  const first = await admission.enter(a, never)
  const left = new AbortController()
  const waiting = admission.enter(a, left.signal)
  const next = admission.enter(a, never)
  left.abort()
  t.equal(await waiting, null)
  t.equal(await admission.enter(a, AbortSignal.abort()), null, 'a client already gone is not admitted')
  first?.()
  t.ok(await next, 'the place goes to the call behind it')
})
