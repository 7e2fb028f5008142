import t, { type Test } from 'tap'
import type { TaskState } from '../../../schemas/task.js'
import { MemoryTaskStore, type MemoryTaskStoreOptions } from '../../../services/tasks/memory-store.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { followed, record } from './store-contract.js'

// Issue 39, row 5: the events a memory store keeps for resuming streams (`server.stream_replay`) count in
// `tasks.max_bytes` with the tasks, under the same policy: terminal tasks make room first, then the task's own oldest
// kept events go.

const AT = 1_000_000

/** A store whose every task a stream follows from its insert, so that their events are kept. */
function store (t: Test, opts: Partial<MemoryTaskStoreOptions> = {}): MemoryTaskStore {
  const s = followed(new MemoryTaskStore({ maxTasks: 100, ttlSeconds: 3600, now: () => AT, ...opts }))
  t.teardown(() => s.close())
  return s
}

function moved (prev: StoredTask, state: TaskState): StoredTask {
  return { ...prev, task: { ...prev.task, status: { state, timestamp: new Date(AT).toISOString() } }, version: prev.version + 1 }
}

/** The executor's artifact, sent whole again: a new 50 KB text each time, as an agent that rebuilds it would. */
function resend (s: MemoryTaskStore, r: StoredTask, version: number): void {
  const artifact = { artifactId: 'a', parts: [{ kind: 'text' as const, text: `${version}`.padEnd(50_000, 'x') }] }
  s.keep(r.task.id, { type: 'artifact', version, task: r.task, artifact, append: false, lastChunk: true })
}

t.test('an executor re-sending a 50 KB artifact 1000 times keeps the store within max_bytes: its oldest kept events go', async t => {
  const s = store(t, { maxBytes: 2_000_000, replay: { maxEvents: 1000, ttlSeconds: 300 } })
  const r = moved(record('live', AT), 'in_progress')
  await s.insert(record('live', AT))
  await s.replace(r)
  let highest = 0
  for (let v = 3; v < 1003; v++) {
    resend(s, r, v)
    highest = Math.max(highest, s.bytes)
  }
  t.ok(highest <= 2_000_000, `at most max_bytes held (${highest})`)
  t.ok(s.bytes > 1_500_000, 'the bound is used, not emptied')
  t.equal(await s.eventsAfter('live', 2), null, 'a stream resuming before the dropped events gets the task afresh')
  t.same((await s.eventsAfter('live', 1001))?.map(e => e.version), [1002], 'the newest are kept')
})

t.test('kept events evict terminal tasks first, as a task\'s own writes do, and never the newest event of a task', async t => {
  const s = store(t, { maxBytes: 300_000, replay: { maxEvents: 1000, ttlSeconds: 300 } })
  const old = record('old', AT)
  await s.insert(old)
  const finished = moved(old, 'completed')
  await s.replace({ ...finished, task: { ...finished.task, artifacts: [{ artifactId: 'big', parts: [{ kind: 'text', text: 'y'.repeat(100_000) }] }] } })
  const r = moved(record('live', AT), 'in_progress')
  await s.insert(record('live', AT))
  await s.replace(r)
  for (let v = 3; v < 6; v++) resend(s, r, v)
  t.ok(await s.get('old'), 'room for both')
  resend(s, r, 6)
  t.equal(await s.get('old'), null, 'the terminal task went first')
  t.same((await s.eventsAfter('live', 2))?.map(e => e.version), [3, 4, 5, 6], 'none of the task\'s events was dropped for it')
  for (let v = 7; v < 20; v++) resend(s, r, v)
  t.equal((await s.eventsAfter('live', 18))?.length, 1)
  t.equal(await s.eventsAfter('live', 10), null, 'then its own oldest went')
  t.ok(s.bytes <= 300_000)

  const tiny = store(t, { maxBytes: 65_536, replay: { maxEvents: 1000, ttlSeconds: 300 } })
  await tiny.insert(record('live', AT))
  await tiny.replace(r)
  resend(tiny, r, 3)
  resend(tiny, r, 4)
  t.same((await tiny.eventsAfter('live', 3))?.map(e => e.version), [4], 'an event near the bound is still kept, alone')
})

t.test('kept events give their bytes back when max_events trims them and when they expire', async t => {
  let now = AT
  const s = store(t, { now: () => now, replay: { maxEvents: 8, ttlSeconds: 30 } })
  for (const id of ['t', 'u']) {
    await s.insert(record(id, AT))
    await s.replace(moved(record(id, AT), 'in_progress'))
  }
  const r = moved(record('t', AT), 'in_progress')
  const own = s.bytes
  for (let v = 3; v < 12; v++) resend(s, r, v)
  t.ok(s.bytes - own > 9 * 50_000 && s.bytes - own < 9 * 52_000, 'nine kept, counted')
  resend(s, r, 12)
  t.ok(s.bytes - own > 8 * 50_000 && s.bytes - own < 8 * 52_000, 'trimmed to max_events, their bytes with them')
  await s.replace(moved(r, 'completed'))
  const u = moved(record('u', AT), 'in_progress')
  await s.replace(moved(u, 'completed'))
  resend(s, u, 4)
  const counted = s.bytes
  now += 30_000
  t.equal(await s.eventsAfter('t', 3), null, 'expired on read')
  t.ok(counted - s.bytes > 8 * 50_000, 'the read gave their bytes back')
  s.sweep()
  t.ok(s.bytes < own + 2_000, 'the sweep gave back the other task\'s: only the tasks are counted')
})
