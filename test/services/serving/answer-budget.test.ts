import t from 'tap'
import { EventEmitter } from 'node:events'
import { AnswerBudget, closeSignal } from '../../../services/serving/answer-budget.js'

const a = { name: 'a' }
const b = { name: 'b' }
const c = { name: 'c' }

t.test('answers take room until the server and each connection are full, and give it back', async t => {
  const budget = new AnswerBudget({ maxBytes: 100, maxBytesPerConnection: 60 })
  const one = budget.tryTake(a, 50)
  t.ok(one)
  t.equal(budget.tryTake(a, 20), null, 'a connection holding 50 of its 60 takes no 20 more')
  const two = budget.tryTake(b, 50)
  t.ok(two)
  t.equal(budget.bytes, 100)
  t.equal(budget.tryTake(c, 1), null, 'the server is full')
  one?.release()
  one?.release()
  t.equal(budget.bytes, 50, 'a release counts once')
  t.equal(budget.held(a), 0)
  t.ok(budget.tryTake(c, 50))
})

t.test('a take with room is granted at once, without joining the queue', async t => {
  const budget = new AnswerBudget({ maxBytes: 100, maxBytesPerConnection: 60 })
  const taken = await budget.take(a, 40)
  t.equal(budget.waiting, 0)
  t.equal(budget.held(a), 40)
  taken.release()
  t.equal(budget.bytes, 0)
})

t.test('one answer, however large, fits an idle connection of a server with room, or an idle server', async t => {
  const budget = new AnswerBudget({ maxBytes: 100, maxBytesPerConnection: 10 })
  const big = budget.tryTake(a, 1000)
  t.ok(big, 'nothing in flight: any answer goes')
  t.equal(budget.tryTake(b, 1), null, 'the server holds more than its room')
  big?.release()
  t.ok(budget.tryTake(b, 80), 'a connection with nothing in flight takes more than its share while the server has room')
})

t.test('waiters are served in order once room comes back, and hold nobody up for their own connection', async t => {
  const budget = new AnswerBudget({ maxBytes: 100, maxBytesPerConnection: 60 })
  const first = budget.tryTake(a, 60) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  const second = budget.tryTake(b, 40) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  const order: string[] = []
  const sameConnection = budget.take(a, 30).then(taken => { order.push('a'); return taken })
  const other = budget.take(c, 30).then(taken => { order.push('c'); return taken })
  t.equal(budget.waiting, 2)
  t.equal(budget.tryTake(c, 1), null, 'a waiter is owed the room before a newcomer')
  second.release()
  const cTaken = await other
  t.same(order, ['c'], 'the waiter of a full connection let the next one by')
  t.equal(budget.waiting, 1)
  first.release()
  const aTaken = await sameConnection
  t.same(order, ['c', 'a'])
  t.equal(budget.bytes, 60)
  aTaken.release()
  cTaken.release()
  t.equal(budget.bytes, 0)
  t.equal(budget.held(a), 0)
})

t.test('a wait given up leaves the queue and lets the next waiter in', async t => {
  const budget = new AnswerBudget({ maxBytes: 100, maxBytesPerConnection: 100 })
  const full = budget.tryTake(a, 90) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  const abort = new AbortController()
  const big = budget.take(b, 50, abort.signal)
  const small = budget.take(c, 5)
  t.equal(budget.waiting, 2, 'the small one waits behind the big one, though it would fit')
  abort.abort(new Error('client gone'))
  await t.rejects(big, { message: 'client gone' })
  const taken = await small
  t.equal(budget.waiting, 0)
  t.equal(budget.bytes, 95)
  taken.release()
  full.release()
  const again = budget.tryTake(a, 100) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  await t.rejects(budget.take(b, 1, AbortSignal.abort(new Error('already gone'))), { message: 'already gone' },
    'a wait whose signal fired before it began is refused at once')
  t.equal(budget.waiting, 0)
  again.release()
})

t.test('a reservation is exchanged for the size of what is written, whatever the room', async t => {
  const budget = new AnswerBudget({ maxBytes: 100, maxBytesPerConnection: 100 })
  const held = budget.tryTake(a, 80) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  const reservation = budget.tryTake(b, 20) as NonNullable<ReturnType<AnswerBudget['tryTake']>>
  const grown = budget.exchange(reservation, b, 35)
  t.equal(grown.bytes, 35)
  t.equal(budget.bytes, 115, 'the exchange does not wait')
  t.equal(budget.held(b), 35)
  reservation.release()
  t.equal(budget.bytes, 115, 'the reservation was given back once, by the exchange')
  grown.release()
  held.release()
  t.equal(budget.bytes, 0)
})

t.test('closeSignal aborts when its target closes, at once when it has closed already, and stops listening when told', async t => {
  const open = new EventEmitter()
  const waiting = closeSignal(open, false)
  t.equal(waiting.signal.aborted, false)
  t.equal(open.listenerCount('close'), 1)
  open.emit('close')
  t.equal(waiting.signal.aborted, true, 'the target closed')
  const done = closeSignal(open, false)
  done.stop()
  t.equal(open.listenerCount('close'), 0, 'a wait that is over listens no more')
  open.emit('close')
  t.equal(done.signal.aborted, false)
  const closed = new EventEmitter()
  const late = closeSignal(closed, true)
  t.equal(late.signal.aborted, true, 'closed already: its close is past, so the signal aborts at once')
  t.equal(closed.listenerCount('close'), 0)
  late.stop()
})
