import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import { MemoryTaskEventBus, type TaskEvent } from '../../../services/tasks/event-bus.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { MAX_BEHIND_BYTES, RESYNC_KEY, TaskEventStream } from '../../../services/tasks/task-stream.js'
import { eventResult, streamEncoder } from '../../../services/a2a/stream-encoders.js'

function task (state: Task['status']['state'], artifacts: Task['artifacts'] = []): Task {
  return { id: 't1', contextId: 'c1', kind: 'task', status: { state, timestamp: '2025-01-01T00:00:00.000Z' }, artifacts, history: [], metadata: null }
}
const record = (version: number, t: Task): StoredTask => ({ task: t, owner: 'o', version, createdAt: 0, updatedAt: 0 })
const status = (version: number, state: Task['status']['state'], final = false): TaskEvent =>
  ({ type: 'status', version, task: task(state), final })

function sink () {
  const out: string[] = []
  let ended = 0
  return { out, ended: () => ended, sink: { write: (json: string) => { out.push(json); return true }, end: () => { ended++ }, queued: () => 0, abort: () => {} } }
}

/** Lets every promise settled by now run its continuations. */
const flush = async (): Promise<void> => await new Promise(resolve => setImmediate(resolve))

t.test('events published before the snapshot are held, and those at or below its version are dropped', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('default'), mode: 'message' })
  bus.publish('t1', status(2, 'in_progress'))
  bus.publish('t1', status(3, 'in_progress'))
  stream.start(record(2, task('in_progress')))
  const s = sink()
  stream.attach(s.sink)
  t.equal(s.out.length, 1)
  t.match(JSON.parse(s.out[0]), { status: { state: 'in_progress' } })
  bus.publish('t1', status(3, 'in_progress'))
  t.equal(s.out.length, 1, 'a repeated version is dropped')
  bus.publish('t1', status(4, 'completed', true))
  t.equal(s.ended(), 1)
  t.equal(bus.listenerCount(), 0)
  bus.publish('t1', status(5, 'completed', true))
  t.equal(s.out.length, 2)
})

t.test('a resubscribe to a settled task sends its snapshot and ends, even before a sink is attached', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'resubscribe' }).start(record(5, task('input_required')))
  t.equal(bus.listenerCount(), 0)
  const s = sink()
  stream.attach(s.sink)
  t.equal(s.ended(), 1)
  t.match(JSON.parse(s.out[0]), { kind: 'task', status: { state: 'input-required' } })
  t.match(JSON.parse(stream.snapshot()), { kind: 'task' })
})

t.test('each event is serialized once per dialect and shared', async t => {
  const event: TaskEvent = { type: 'artifact', version: 2, task: task('in_progress', [{ artifactId: 'a', parts: [] }]), artifact: { artifactId: 'a', parts: [] }, append: true, lastChunk: false }
  const first = eventResult(event, 'a2a')
  t.equal(eventResult(event, 'a2a'), first)
  t.same(JSON.parse(first), { kind: 'artifact-update', taskId: 't1', contextId: 'c1', artifact: { artifactId: 'a', parts: [] }, append: true, lastChunk: false })
  t.match(JSON.parse(eventResult(event, 'default')), { kind: 'task', id: 't1' })
})

t.test('closing a stream unsubscribes it once', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('default'), mode: 'resubscribe' }).start(record(1, task('in_progress')))
  t.equal(bus.listenerCount('t1'), 1)
  stream.close()
  stream.close()
  t.equal(bus.listenerCount(), 0)
})

/** A sink that refuses (returns false) while `full` is set, like a socket whose consumer is behind. */
function slowSink () {
  const out: string[] = []
  let ended = 0
  let aborted = 0
  const state = { full: false, queued: 0 }
  return {
    out,
    state,
    ended: () => ended,
    aborted: () => aborted,
    sink: {
      write: (json: string) => { out.push(json); return !state.full },
      end: () => { ended++ },
      queued: () => state.queued,
      abort: () => { aborted++ }
    }
  }
}

const chunk = (version: number, text: string, append = true): TaskEvent => ({
  type: 'artifact',
  version,
  task: task('in_progress', [{ artifactId: 'a', parts: [{ kind: 'text', text }] }]),
  artifact: { artifactId: 'a', name: 'Agent-result', parts: [{ kind: 'text', text }] },
  append,
  lastChunk: false
})

t.test('default dialect: while the consumer is behind only the latest snapshot waits, and the first is never replaced', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('default'), mode: 'message' }).start(record(1, task('submitted')))
  // Before a sink is attached: the first result and the latest are kept.
  bus.publish('t1', status(2, 'in_progress'))
  bus.publish('t1', chunk(3, 'a'))
  bus.publish('t1', chunk(4, 'b'))
  const s = slowSink()
  s.state.full = true
  stream.attach(s.sink)
  t.same(s.out.map(j => JSON.parse(j).status.state), ['in_progress'], 'the first result went out; the consumer is now behind')
  for (let v = 5; v < 100; v++) bus.publish('t1', chunk(v, `t${v}`))
  t.equal(s.out.length, 1, 'nothing is written while it is behind')
  s.state.full = false
  stream.drain()
  t.equal(s.out.length, 2, 'on drain, one result: the latest')
  t.match(JSON.parse(s.out[1]), { artifacts: [{ parts: [{ text: 't99' }] }] })
  s.state.full = true
  bus.publish('t1', chunk(100, 'x'))
  bus.publish('t1', chunk(101, 'y'))
  bus.publish('t1', status(102, 'completed', true))
  t.equal(s.ended(), 0, 'the final result waits too')
  s.state.full = false
  stream.drain()
  t.same(s.out.slice(2).map(j => JSON.parse(j).status.state), ['in_progress', 'completed'], 'the write that found it behind, then the last')
  t.equal(s.ended(), 1, 'then the stream ends')
  t.equal(bus.listenerCount(), 0)
})

t.test('a2a dialect: appended chunks of one artifact merge while the consumer is behind; other events keep their order', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'message' }).start(record(1, task('in_progress')))
  const s = slowSink()
  stream.attach(s.sink)
  s.state.full = true
  bus.publish('t1', chunk(2, 'first', false))
  t.equal(s.out.length, 2, 'the task, then the first chunk; now the consumer is behind')
  for (let v = 3; v < 1003; v++) bus.publish('t1', chunk(v, `${v} `))
  bus.publish('t1', status(1003, 'in_progress'))
  bus.publish('t1', chunk(1004, 'tail'))
  bus.publish('t1', status(1005, 'completed', true))
  s.state.full = false
  stream.drain()
  const results = s.out.slice(2).map(j => JSON.parse(j))
  t.same(results.map(r => r.kind), ['artifact-update', 'status-update', 'artifact-update', 'status-update'])
  t.equal(results[0].artifact.parts.length, 1000, 'a thousand chunks became one update')
  t.equal(results[0].artifact.parts.map((p: any) => p.text).join(''), Array.from({ length: 1000 }, (_, i) => `${i + 3} `).join(''))
  t.equal(results[0].append, true)
  t.equal(results[2].artifact.parts[0].text, 'tail')
  t.equal(results[3].final, true)
  t.equal(s.ended(), 1)
  t.equal(s.aborted(), 0)
})

t.test('a2a dialect: a consumer whose held and queued results pass 1 MiB is cut off, by default', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'message' }).start(record(1, task('in_progress')))
  const s = slowSink()
  stream.attach(s.sink)
  s.state.full = true
  s.state.queued = 900 * 1024
  bus.publish('t1', chunk(2, 'x'.repeat(1000), false))
  bus.publish('t1', status(3, 'in_progress'))
  t.equal(s.aborted(), 0)
  bus.publish('t1', chunk(4, 'y'.repeat(200 * 1024)))
  t.equal(s.aborted(), 1, 'what waits (200 KiB) and what is queued (900 KiB) pass the limit')
})

t.test('a2a dialect: a consumer whose held and queued results pass its sink\'s limit is cut off at once', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'message' }).start(record(1, task('in_progress')))
  const s = slowSink()
  stream.attach({ ...s.sink, limit: MAX_BEHIND_BYTES })
  s.state.full = true
  s.state.queued = MAX_BEHIND_BYTES - 300 * 1024
  bus.publish('t1', chunk(2, 'x'.repeat(1000), false))
  bus.publish('t1', status(3, 'in_progress'))
  t.equal(s.aborted(), 0)
  t.ok(stream.held() > 0, 'what is held is counted')
  bus.publish('t1', chunk(4, 'y'.repeat(400 * 1024)))
  t.equal(s.aborted(), 1, 'what waits (400 KiB) and what is queued pass the limit')
})

t.test('a2a dialect: the next result to write is spared the limit, as the one being written is, however large', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'message' }).start(record(1, task('in_progress')))
  const s = slowSink()
  stream.attach({ ...s.sink, limit: 1024 * 1024 })
  s.state.full = true
  // Written: the sink is full from now on, and what comes next is held.
  bus.publish('t1', status(2, 'in_progress'))
  bus.publish('t1', chunk(3, 'x'.repeat(2 * 1024 * 1024), false))
  t.ok(stream.held() > 2 * 1024 * 1024)
  t.equal(s.aborted(), 0, 'one held result of twice the limit, nothing queued: a reader gets it')
  bus.publish('t1', status(4, 'in_progress'))
  t.equal(s.aborted(), 0)
  bus.publish('t1', chunk(5, 'y'.repeat(1024 * 1024), false))
  t.equal(s.aborted(), 1, 'what waits behind it counts')
})

t.test('a result the sink has no room for is not lost: it is held, in order, and written on the next drain', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'message' }).start(record(1, task('in_progress')))
  const out: string[] = []
  let room = false
  let ended = 0
  stream.attach({
    write: json => {
      if (!room) return null
      out.push(json)
      return true
    },
    end: () => { ended++ },
    queued: () => 0,
    abort: () => {}
  })
  t.same(out, [], 'the first result (the task) found no room')
  bus.publish('t1', status(2, 'in_progress'))
  bus.publish('t1', status(3, 'completed', true))
  t.equal(ended, 0)
  room = true
  stream.drain()
  t.same(out.map(j => JSON.parse(j).kind), ['task', 'status-update', 'status-update'])
  t.equal(ended, 1, 'the stream ends once its last result is written')
})

t.test('a drain that finds the consumer behind again keeps the rest held, in order', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'message' }).start(record(1, task('in_progress')))
  const s = slowSink()
  stream.attach(s.sink)
  s.state.full = true
  bus.publish('t1', status(2, 'in_progress'))
  bus.publish('t1', chunk(3, 'a', false))
  bus.publish('t1', status(4, 'completed', true))
  t.equal(s.out.length, 2, 'the task and the first status went out; the consumer is behind')
  stream.drain()
  t.same(s.out.slice(2).map(j => JSON.parse(j).kind), ['artifact-update'], 'one write per drain while it stays behind')
  t.equal(s.ended(), 0, 'the final status still waits')
  s.state.full = false
  stream.drain()
  t.same(s.out.slice(3).map(j => JSON.parse(j).kind), ['status-update'])
  t.equal(s.ended(), 1)
})

t.test('a drain before a sink is attached writes nothing; the held results wait for the sink', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'message' }).start(record(1, task('in_progress')))
  stream.drain()
  const s = slowSink()
  stream.attach(s.sink)
  t.same(s.out.map(j => JSON.parse(j).kind), ['task'])
  stream.close()
})

t.test('a stream with ids writes each result with its version, and names the snapshot it would end with', async t => {
  const bus = new MemoryTaskEventBus()
  const written: Array<[string, number | undefined]> = []
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'resubscribe', ids: true }).start(record(5, task('in_progress')))
  stream.attach({ write: (json, id) => { written.push([JSON.parse(json).kind, id]); return true }, end () {}, queued: () => 0, abort () {} })
  bus.publish('t1', { type: 'status', version: 6, task: task('input_required'), final: true })
  t.same(written, [['task', 5], ['status-update', 6]])
  t.equal(stream.snapshotId(), 6)
  const plain = new TaskEventStream(bus, 't1', { encoder: streamEncoder('a2a'), mode: 'resubscribe' }).start(record(5, task('in_progress')))
  t.equal(plain.snapshotId(), undefined)
  plain.close()
})

t.test('row 15: check ends a stream whose task has vanished with -32001, once; a task still there, a failed look or an ended stream change nothing', async t => {
  const bus = new MemoryTaskEventBus()
  const looks: Array<(version: number | null) => void> = []
  const fails: Array<(err: Error) => void> = []
  const stored = {
    version: () => new Promise<number | null>((resolve, reject) => { looks.push(resolve); fails.push(reject) }),
    read: async () => null
  }
  const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder('default'), mode: 'resubscribe', stored }).start(record(1, task('in_progress')))
  const failed: Array<{ code: number, data: unknown }> = []
  const s = sink()
  stream.check()
  t.equal(looks.length, 1)
  // Not attached yet when the answer comes: nothing to end.
  looks[0](null)
  await flush()
  stream.attach({ ...s.sink, fail: (error: { code: number, data: unknown }) => { failed.push(error) } })
  stream.check()
  stream.check()
  t.equal(looks.length, 2, 'one look at a time')
  looks[1](1)
  await flush()
  stream.check()
  fails[2](new Error('storage unavailable'))
  await flush()
  t.same(failed, [], 'a task still there, or a look that failed: the stream goes on')
  t.equal(bus.listenerCount(), 1)
  stream.check()
  looks[3](null)
  await flush()
  t.match(failed, [{ code: -32001, message: 'Task not found', data: 'task "t1" was not found' }], 'ended with task-not-found')
  t.equal(failed.length, 1)
  t.equal(bus.listenerCount(), 0, 'and no longer follows the task')
  stream.check()
  t.equal(looks.length, 4, 'an ended stream looks no more')

  // A sink without `fail` (a binding with no error frame) is ended; a look that finds the stream closed meanwhile does nothing.
  const plain = new TaskEventStream(bus, 't1', { encoder: streamEncoder('default'), mode: 'resubscribe', stored }).start(record(1, task('in_progress')))
  const p = sink()
  plain.attach(p.sink)
  plain.check()
  looks[4](null)
  await flush()
  t.equal(p.ended(), 1)
  const closing = new TaskEventStream(bus, 't1', { encoder: streamEncoder('default'), mode: 'resubscribe', stored }).start(record(1, task('in_progress')))
  const c = sink()
  closing.attach(c.sink)
  closing.check()
  closing.close()
  looks[5](null)
  await flush()
  t.equal(c.ended(), 0)
  // Without a way to look (no `stored`), check does nothing.
  new TaskEventStream(bus, 't1', { encoder: streamEncoder('default'), mode: 'resubscribe' }).start(record(1, task('in_progress'))).check()
})

t.test('a stream whose task has moved past the events that reached it (lost on the way) goes on from the task as stored, once the next look still finds it behind', async t => {
  const bus = new MemoryTaskEventBus()
  let version = 2
  let reads = 0
  const stored = {
    version: async () => version,
    read: async () => { reads++; return record(version, task(version >= 4 ? 'completed' : 'in_progress')) }
  }
  for (const dialect of ['default', 'a2a'] as const) {
    reads = 0
    version = 2
    const stream = new TaskEventStream(bus, 't1', { encoder: streamEncoder(dialect), mode: 'resubscribe', ids: true, stored }).start(record(2, task('in_progress')))
    const written: Array<[unknown, number | undefined]> = []
    let ended = 0
    stream.attach({ write: (json, id) => { written.push([JSON.parse(json), id]); return true }, end: () => { ended++ }, queued: () => 0, abort () {} })
    /** One look, and what it leads to. */
    const look = async (): Promise<void> => {
      stream.check()
      await flush()
    }
    t.equal(written.length, 1, 'the snapshot')
    await look()
    t.equal(reads, 0, 'level with the store: nothing read')
    // An event in flight: the store is ahead at one look, and the event comes before the next.
    version = 3
    await look()
    bus.publish('t1', { type: 'status', version: 3, task: task('in_progress'), final: false })
    await look()
    t.equal(reads, 0, 'an event that comes after one look is not a lost one')
    // Lost: the task settled (version 4), and its event never came; the first look only notes it.
    version = 4
    await look()
    t.equal(reads, 0)
    t.equal(ended, 0)
    await look()
    t.equal(reads, 1, 'still behind at the next look: the task is read')
    t.equal(written.length, 3)
    const [last, id] = written[2] as [{ status: { state: string }, metadata?: Record<string, unknown> }, number]
    t.equal(last.status.state, 'completed', `${dialect}: the task as stored`)
    t.equal(id, 4, 'with its version as the event id')
    if (dialect === 'a2a') t.equal(last.metadata?.[RESYNC_KEY], true, 'marked as a resync')
    t.equal(ended, 1, 'a settled task ends the stream')
    t.equal(bus.listenerCount(), 0)
  }
  // A read that finds nothing newer (the events came meanwhile), or nothing at all, changes nothing.
  version = 2
  const stream = new TaskEventStream(bus, 't2', { encoder: streamEncoder('default'), mode: 'resubscribe', stored: { version: async () => 5, read: async () => null } }).start(record(2, task('in_progress')))
  const s = sink()
  stream.attach(s.sink)
  stream.check()
  await flush()
  stream.check()
  await flush()
  t.equal(s.ended(), 0, 'the next look decides')
  stream.close()
})
