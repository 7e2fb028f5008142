import t from 'tap'
import { MemoryPushConfigStore } from '../../../services/push/memory-store.js'

t.test('holds answers at once whether a task has configs, and forget drops them all', async t => {
  const store = new MemoryPushConfigStore()
  t.equal(store.holds('task-1'), false)
  await store.put('task-1', { url: 'https://example.com/a' }, { maxPerTask: 10 })
  await store.put('task-1', { url: 'https://example.com/b' }, { maxPerTask: 10 })
  await store.put('task-2', { url: 'https://example.com/c' }, { maxPerTask: 10 })
  t.equal(store.holds('task-1'), true)

  store.forget('task-1')
  t.equal(store.holds('task-1'), false)
  t.same(await store.list('task-1'), [])
  t.equal(await store.latest('task-1'), null)
  t.equal((await store.list('task-2')).length, 1, 'other tasks keep theirs')
  store.forget('never-seen')
  t.equal(store.holds('task-2'), true)
})
