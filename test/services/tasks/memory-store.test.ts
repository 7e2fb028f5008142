import t, { type Test } from 'tap'
import type { TaskState } from '../../../schemas/task.js'
import { TaskStoreFull } from '../../../services/errors.js'
import { MemoryTaskStore, type MemoryTaskStoreOptions } from '../../../services/tasks/memory-store.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { record as contractRecord, storeContract } from './store-contract.js'

interface Clock {
  now: () => number
  ms: number
}

function clock (ms = 1_000_000): Clock {
  const c: Clock = { ms, now: () => c.ms }
  return c
}

/** A version-1 record, stamped `at` (default 1,000,000 ms). */
function record (id: string, opts: { owner?: string, contextId?: string, state?: TaskState, at?: number } = {}): StoredTask {
  return contractRecord(id, opts.at ?? 1_000_000, opts)
}

/** The next version of a record, in a new state, written at `at`. */
function moved (prev: StoredTask, state: TaskState, at = prev.updatedAt): StoredTask {
  return {
    ...prev,
    task: { ...prev.task, status: { state, timestamp: new Date(at).toISOString() } },
    version: prev.version + 1,
    updatedAt: at
  }
}

/** Writes a task through in_progress to a terminal state at `at`, as the task service would. */
async function finish (s: MemoryTaskStore, r: StoredTask, state: TaskState, at = r.updatedAt): Promise<StoredTask> {
  const running = moved(r, 'in_progress', at)
  const done = moved(running, state, at)
  t.equal(await s.replace(running), true)
  t.equal(await s.replace(done), true)
  return done
}

function store (t: Test, opts: Partial<MemoryTaskStoreOptions> = {}): MemoryTaskStore {
  const s = new MemoryTaskStore({ maxTasks: 100, ttlSeconds: 60, ...opts })
  t.teardown(() => s.close())
  return s
}

const ids = (page: { tasks: StoredTask[] }) => page.tasks.map(r => r.task.id)

// MemoryTaskStore does not check for a taken id on insert: ids are server-made UUIDs.
storeContract(t, 'memory', async (t, { ttlSeconds, clock }) => {
  const store = new MemoryTaskStore({ maxTasks: 1_000, ttlSeconds, now: clock.now })
  t.teardown(() => store.close())
  // Every task the contract writes is stamped with the clock, so moving it by the TTL expires the terminal ones.
  return { store, expire: async () => { clock.ms += ttlSeconds * 1000 } }
}, { rejectsDuplicateIds: false })

t.test('get hands back the very record stored, and size counts it', async t => {
  const s = store(t)
  const r = record('a')
  await s.insert(r)
  t.equal(await s.get('a'), r)
  t.equal(await s.get('nope'), null)
  t.equal(s.size, 1)
  await s.ping()
})

t.test('a full store evicts the least recently updated terminal task first', async t => {
  const c = clock()
  const s = store(t, { maxTasks: 3, now: c.now })
  const a = record('a', { at: c.ms })
  const b = record('b', { at: c.ms })
  const d = record('d', { at: c.ms })
  await s.insert(a)
  await s.insert(b)
  await s.insert(d)
  const doneB = await finish(s, b, 'completed', c.ms + 1)
  await finish(s, a, 'failed', c.ms + 2)
  // A later write to b, its state unchanged, makes a the least recently updated terminal task.
  t.equal(await s.replace({ ...doneB, version: doneB.version + 1, updatedAt: c.ms + 3 }), true)
  t.equal(s.size, 3)

  await s.insert(record('e', { at: c.ms + 4 }))
  t.equal(s.size, 3)
  t.equal(await s.get('a'), null, 'a, the least recently updated terminal task, is gone')
  t.ok(await s.get('b'))
  t.ok(await s.get('d'), 'the unfinished task is kept')

  await s.insert(record('f', { at: c.ms + 5 }))
  t.equal(await s.get('b'), null)
  t.same(ids(await s.list({ pageSize: 10 })), ['f', 'e', 'd'])
  await t.rejects(s.insert(record('g')), { code: 'A2A_ERR_TASK_STORE_FULL' }, 'only unfinished tasks are left')
})

t.test('a terminal task written again from the middle of the expiry order moves to its newest end', async t => {
  const c = clock()
  const s = store(t, { maxTasks: 3, now: c.now })
  const [a, b, d] = ['a', 'b', 'd'].map(id => record(id, { at: c.ms }))
  for (const r of [a, b, d]) await s.insert(r)
  await finish(s, a, 'completed', c.ms + 1)
  const doneB = await finish(s, b, 'completed', c.ms + 2)
  await finish(s, d, 'completed', c.ms + 3)
  // b has an older (a) and a newer (d) neighbour; written again, it becomes the last to go.
  t.equal(await s.replace({ ...doneB, version: doneB.version + 1, updatedAt: c.ms + 4 }), true)
  const evicted: string[] = []
  s.onDelete(id => evicted.push(id))
  for (const id of ['e', 'f', 'g']) await s.insert(record(id, { at: c.ms + 5 }))
  t.same(evicted, ['a', 'd', 'b'])
})

t.test('a store full of unfinished tasks refuses a new one with TaskStoreFull', async t => {
  const s = store(t, { maxTasks: 2 })
  await s.insert(record('a'))
  await s.insert(record('b', { owner: 'bob' }))
  await t.rejects(s.insert(record('c')), { code: 'A2A_ERR_TASK_STORE_FULL', statusCode: 503 })
  const err = await s.insert(record('c')).catch(e => e)
  t.ok(err instanceof TaskStoreFull)
  t.equal(s.size, 2)
  t.equal(await s.get('c'), null)
})

t.test('terminal tasks expire after the TTL, seen through get, list and sweep', async t => {
  const c = clock()
  const s = store(t, { ttlSeconds: 10, now: c.now })
  const live = record('live', { at: c.ms })
  await s.insert(live)
  for (const id of ['x', 'y', 'z']) {
    const r = record(id, { at: c.ms, owner: id === 'z' ? 'zed' : 'alice' })
    await s.insert(r)
    await finish(s, r, 'completed', c.ms + 1)
  }

  c.ms += 10_000
  t.ok(await s.get('x'), 'not expired one ms before its TTL')
  c.ms += 1
  t.equal(await s.get('x'), null, 'get drops an expired task')
  t.equal(s.size, 3)
  t.same(ids(await s.list({ pageSize: 10 })), ['live'], 'list hides expired tasks')
  t.equal(s.size, 3, 'list does not delete')
  s.sweep()
  t.equal(s.size, 1, 'sweep deletes them')
  t.same(ids(await s.list({ owner: 'zed', pageSize: 10 })), [])
  t.equal(await s.get('live'), live, 'an unfinished task never expires')

  // Sweep stops at the first task still alive.
  const late = record('late', { at: c.ms })
  await s.insert(late)
  t.equal(await s.replace(moved(late, 'canceled', c.ms)), true)
  s.sweep()
  t.equal(s.size, 2)
})

t.test('inserting a task sweeps expired ones first', async t => {
  const c = clock()
  const s = store(t, { maxTasks: 1, ttlSeconds: 1, now: c.now })
  const old = record('old', { at: c.ms })
  await s.insert(old)
  t.equal(await s.replace(moved(old, 'rejected', c.ms)), true)
  c.ms += 1_000
  await s.insert(record('new', { at: c.ms }))
  t.equal(s.size, 1)
  t.equal(await s.get('old'), null)
})

t.test('the sweep timer sweeps, and close clears it', async t => {
  const realSet = globalThis.setInterval
  const realClear = globalThis.clearInterval
  let tick: (() => void) | undefined
  let interval: number | undefined
  let created: unknown
  const cleared: unknown[] = []
  globalThis.setInterval = ((fn: () => void, ms: number) => {
    tick = fn
    interval = ms
    created = realSet(() => {}, 1 << 30)
    return created
  }) as typeof setInterval
  globalThis.clearInterval = ((h: NodeJS.Timeout) => {
    cleared.push(h)
    realClear(h)
  }) as typeof clearInterval
  const c = clock()
  let s: MemoryTaskStore
  try {
    s = new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 1, now: c.now, sweepIntervalMs: 250 })
  } finally {
    globalThis.setInterval = realSet
  }
  t.teardown(() => { globalThis.clearInterval = realClear })
  t.equal(interval, 250)

  const r = record('a', { at: c.ms })
  await s.insert(r)
  t.equal(await s.replace(moved(r, 'completed', c.ms)), true)
  c.ms += 1_000
  ;(tick as () => void)()
  t.equal(s.size, 0, 'the timer callback sweeps')

  await s.close()
  t.same(cleared, [created])
})

t.test('the default sweep interval is used when none is given', async t => {
  const realSet = globalThis.setInterval
  let interval: number | undefined
  globalThis.setInterval = ((fn: () => void, ms: number) => {
    interval = ms
    return realSet(fn, ms)
  }) as typeof setInterval
  try {
    await new MemoryTaskStore({ maxTasks: 1, ttlSeconds: 1 }).close()
  } finally {
    globalThis.setInterval = realSet
  }
  t.equal(interval, 60_000)
})

t.test('100,000 tasks that go terminal never hold more than maxTasks', async t => {
  let ms = 0
  const s = store(t, { maxTasks: 1000, ttlSeconds: 86_400, now: () => ms })
  let max = 0
  for (let i = 0; i < 100_000; i++) {
    ms++
    const r = record(`t${i}`, { at: ms, owner: `o${i % 7}` })
    await s.insert(r)
    const running = moved(r, 'in_progress', ms)
    await s.replace(running)
    await s.replace(moved(running, 'completed', ms))
    if (s.size > max) max = s.size
  }
  t.equal(max, 1000)
  t.equal(s.size, 1000)
  t.equal(await s.get('t98999'), null)
  t.ok(await s.get('t99000'))
  t.equal((await s.list({ pageSize: 100 })).tasks[0].task.id, 't99999')
})
