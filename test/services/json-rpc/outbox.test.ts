import { setImmediate as nextTurn } from 'node:timers/promises'
import t from 'tap'
import { Outbox } from '../../../services/json-rpc/outbox.js'

t.test('answers queued in one turn are sent together at its end, in the order they were queued', async t => {
  const sent: Array<{ item: number, turn: number }> = []
  let turn = 0
  const outbox = new Outbox<number>(item => sent.push({ item, turn }), () => t.fail('nothing fails'))
  outbox.push(1)
  outbox.push(2)
  outbox.push(3)
  t.same(sent, [], 'nothing is sent while the turn goes on')
  await Promise.resolve()
  t.same(sent, [], 'nor once its promises have run')
  await nextTurn()
  turn = 1
  t.same(sent, [{ item: 1, turn: 0 }, { item: 2, turn: 0 }, { item: 3, turn: 0 }])
  outbox.push(4)
  await nextTurn()
  t.same(sent.slice(3), [{ item: 4, turn: 1 }], 'a later turn has a flush of its own')
})

t.test('an answer that cannot be sent goes to fail, and the answers queued with it are still sent', async t => {
  const sent: string[] = []
  const failed: Array<[string, unknown]> = []
  const outbox = new Outbox<string>(item => {
    if (item === 'bad') throw new Error('cannot send bad')
    sent.push(item)
  }, (item, err) => failed.push([item, (err as Error).message]))
  for (const item of ['a', 'bad', 'b']) outbox.push(item)
  await nextTurn()
  t.same(sent, ['a', 'b'])
  t.same(failed, [['bad', 'cannot send bad']])
})
