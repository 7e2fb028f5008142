import t from 'tap'
import { MemoryTaskStore } from '../../../services/tasks/memory-store.js'
import { moved, record } from './store-contract.js'

t.test('onDelete hears every task the store evicts or expires, and nothing else', async t => {
  let ms = 1_000_000
  const store = new MemoryTaskStore({ maxTasks: 2, ttlSeconds: 1, now: () => ms })
  t.teardown(() => store.close())
  const deleted: string[] = []
  store.onDelete(id => deleted.push(id))

  const a = record('a', ms)
  await store.insert(a)
  t.equal(await store.replace(moved(a, 'completed', ms)), true)
  await store.insert(record('b', ms))
  t.same(deleted, [], 'inserts and updates delete nothing')

  // Full: the oldest terminal task is evicted to make room.
  await store.insert(record('c', ms))
  t.same(deleted, ['a'])

  // Past the TTL a terminal task expires, whether a read or a sweep finds it first.
  const c = await store.get('c')
  t.equal(await store.replace(moved(c!, 'failed', ms)), true)
  ms += 1_001
  t.equal(await store.get('c'), null)
  t.same(deleted, ['a', 'c'])
  t.equal(await store.replace(moved((await store.get('b'))!, 'canceled', ms)), true)
  ms += 1_001
  store.sweep()
  t.same(deleted, ['a', 'c', 'b'])
})
