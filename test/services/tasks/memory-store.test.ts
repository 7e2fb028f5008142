import t, { type Test } from 'tap'
import type { TaskState } from '../../../schemas/task.js'
import { TaskStoreFull } from '../../../services/kernel/errors.js'
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
storeContract(t, 'memory', async (t, { ttlSeconds, clock, maxEvents }) => {
  const store = new MemoryTaskStore({ maxTasks: 1_000, ttlSeconds, now: clock.now, replay: { maxEvents, ttlSeconds: 300 } })
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

/** A record whose first message carries `size` characters of text. */
function sized (id: string, size: number, opts: { owner?: string, state?: TaskState } = {}): StoredTask {
  const r = record(id, opts)
  const message = { kind: 'message' as const, role: 'user' as const, messageId: `m-${id}`, parts: [{ kind: 'text' as const, text: 'x'.repeat(size) }] }
  return { ...r, task: { ...r.task, history: [message] } }
}

t.test('max_bytes: the oldest terminal tasks make room; with only unfinished ones left, a new task is refused', async t => {
  const s = store(t, { maxBytes: 100_000, now: () => 1_000_000 })
  const a = sized('a', 30_000)
  s.insertNow(a)
  await finish(s, a, 'completed')
  const b = sized('b', 30_000)
  s.insertNow(b)
  await finish(s, b, 'completed')
  s.insertNow(sized('live-1', 30_000))
  t.ok(s.bytes > 90_000 && s.bytes <= 100_000, `about 90 KB held (${s.bytes})`)
  s.insertNow(sized('live-2', 30_000))
  t.equal(await s.get('a'), null, 'the least recently updated terminal task went first')
  t.ok(await s.get('b'))
  s.insertNow(sized('live-3', 10_000))
  t.equal(await s.get('b'), null)
  t.throws(() => s.insertNow(sized('live-4', 30_000)), TaskStoreFull, 'nothing left to evict')
  t.ok(s.bytes <= 100_000, `never past the bound (${s.bytes})`)
  t.throws(() => s.admit(30_000), TaskStoreFull, 'nor room for a message that would join a task')
  t.doesNotThrow(() => s.admit(1_000))
})

t.test('max_bytes: a running task\'s own growth is never refused; terminal tasks are evicted for it', async t => {
  const s = store(t, { maxBytes: 100_000, now: () => 1_000_000 })
  const old = sized('old', 40_000)
  s.insertNow(old)
  await finish(s, old, 'completed')
  const live = sized('live', 10_000)
  s.insertNow(live)
  const running = moved(live, 'in_progress')
  t.equal(await s.replace(running), true)
  const artifact = { artifactId: 'r', parts: [{ kind: 'text' as const, text: 'y'.repeat(70_000) }] }
  const grown = { ...running, task: { ...running.task, artifacts: [artifact] }, version: running.version + 1 }
  t.equal(await s.replace(grown), true)
  t.equal(await s.get('old'), null, 'the terminal task made the room')
  // Appending to the artifact counts what was appended only, and the total follows.
  const before = s.bytes
  const appended = { ...grown, task: { ...grown.task, artifacts: [{ ...artifact, parts: artifact.parts.concat([{ kind: 'text' as const, text: 'z'.repeat(5_000) }]) }] }, version: grown.version + 1 }
  t.equal(await s.replace(appended), true)
  t.ok(s.bytes - before > 5_000 && s.bytes - before < 5_400, `grew by the appended part and its keys (${s.bytes - before})`)
  await s.replace(moved(appended, 'completed'))
  s.insertNow(sized('next', 50_000))
  t.equal(await s.get('live'), null, 'once finished, it is evicted like any other')
  t.ok(s.bytes < 60_000, `${s.bytes}`)
})

t.test('max_live_per_principal: an owner at its limit of unfinished tasks is refused; others and finished tasks are not', async t => {
  const s = store(t, { maxLivePerOwner: 2 })
  const a1 = record('a1', { owner: 'alice' })
  s.insertNow(a1)
  s.insertNow(record('a2', { owner: 'alice' }))
  t.throws(() => s.insertNow(record('a3', { owner: 'alice' })), { code: 'A2A_ERR_LIVE_TASK_LIMIT' })
  s.insertNow(record('b1', { owner: 'bob' }))
  s.insertNow(record('done', { owner: 'alice', state: 'rejected' }))
  const input = moved(moved(a1, 'in_progress'), 'input_required')
  await s.replace(moved(a1, 'in_progress'))
  await s.replace(input)
  t.throws(() => s.insertNow(record('a4', { owner: 'alice' })), { code: 'A2A_ERR_LIVE_TASK_LIMIT' }, 'an interrupted task still counts')
  await s.replace(moved(input, 'canceled'))
  t.doesNotThrow(() => s.insertNow(record('a5', { owner: 'alice' })), 'a finished task frees its place')
})

t.test('claimInterrupted hands out interrupted tasks by their last update, oldest first, once', async t => {
  const s = store(t)
  const at = (id: string, ms: number) => {
    const r = record(id, { at: ms })
    s.insertNow(r)
    return r
  }
  const x = at('x', 100)
  const y = at('y', 200)
  const z = at('z', 300)
  await s.replace(moved(y, 'input_required', 200))
  await s.replace(moved(x, 'auth_required', 250))
  await s.replace(moved(z, 'input_required', 300))
  const zBack = moved(moved(z, 'input_required', 300), 'in_progress', 310)
  await s.replace(zBack)
  t.same(await s.claimInterrupted(299), ['y', 'x'])
  t.same(await s.claimInterrupted(1_000), [], 'each once, and z is running again')
})

t.test('kept events outlive a finished task by server.stream_replay.ttl, then a resume must resync', async t => {
  const c = clock()
  const s = store(t, { now: c.now, ttlSeconds: 3600, replay: { maxEvents: 10, ttlSeconds: 30 } })
  const r = record('done')
  await s.insert(r)
  s.follow('done')
  const running = moved(r, 'in_progress')
  await s.replace(running)
  s.keep('done', { type: 'status', version: 2, task: running.task, final: false })
  const done = moved(running, 'completed')
  await s.replace(done)
  s.keep('done', { type: 'status', version: 3, task: done.task, final: true })
  s.keep('unknown', { type: 'status', version: 1, task: done.task, final: true })
  t.same((await s.eventsAfter('done', 0))?.map(e => e.version), [2, 3])
  c.ms += 29_000
  s.sweep()
  t.same((await s.eventsAfter('done', 2))?.map(e => e.version), [3], 'still kept just before the ttl')
  c.ms += 1_000
  t.equal(await s.eventsAfter('done', 2), null, 'gone at the ttl: a resume resyncs')
  t.same(await s.eventsAfter('done', 3), [], 'a client with every event is not behind')
  t.ok(await s.get('done'), 'the task itself stays for tasks.ttl')
})

t.test('the sweep drops the kept events of finished tasks past the ttl; max_events 0 keeps none', async t => {
  const c = clock()
  const s = store(t, { now: c.now, ttlSeconds: 3600, replay: { maxEvents: 10, ttlSeconds: 30 } })
  for (const id of ['a', 'b']) {
    const r = record(id)
    await s.insert(r)
    s.follow(id)
    const done = moved(r, 'completed')
    await s.replace(done)
    s.keep(id, { type: 'status', version: 2, task: done.task, final: true })
  }
  c.ms += 30_000
  s.sweep()
  c.ms -= 30_000
  t.equal(await s.eventsAfter('a', 0), null, 'dropped by the sweep, not only hidden on read')

  const none = store(t, { replay: { maxEvents: 0, ttlSeconds: 30 } })
  const r = record('n')
  await none.insert(r)
  none.follow('n')
  const running = moved(r, 'in_progress')
  await none.replace(running)
  none.keep('n', { type: 'status', version: 2, task: running.task, final: false })
  t.equal(await none.eventsAfter('n', 0), null, 'nothing kept: behind means resync')
  t.same(await none.eventsAfter('n', 2), [])
})
