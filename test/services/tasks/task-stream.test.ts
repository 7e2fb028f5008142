import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import { MemoryTaskEventBus, type TaskEvent } from '../../../services/tasks/event-bus.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { TaskEventStream, eventResult } from '../../../services/tasks/task-stream.js'

function task (state: Task['status']['state'], artifacts: Task['artifacts'] = []): Task {
  return { id: 't1', contextId: 'c1', kind: 'task', status: { state, timestamp: '2025-01-01T00:00:00.000Z' }, artifacts, history: [], metadata: null }
}
const record = (version: number, t: Task): StoredTask => ({ task: t, owner: 'o', version, createdAt: 0, updatedAt: 0 })
const status = (version: number, state: Task['status']['state'], final = false): TaskEvent =>
  ({ type: 'status', version, task: task(state), final })

function sink () {
  const out: string[] = []
  let ended = 0
  return { out, ended: () => ended, sink: { write: (json: string) => { out.push(json); return true }, end: () => { ended++ } } }
}

t.test('events published before the snapshot are held, and those at or below its version are dropped', async t => {
  const bus = new MemoryTaskEventBus()
  const stream = new TaskEventStream(bus, 't1', { dialect: 'default', mode: 'message' })
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
  const stream = new TaskEventStream(bus, 't1', { dialect: 'a2a', mode: 'resubscribe' }).start(record(5, task('input_required')))
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
  const stream = new TaskEventStream(bus, 't1', { dialect: 'default', mode: 'resubscribe' }).start(record(1, task('in_progress')))
  t.equal(bus.listenerCount('t1'), 1)
  stream.close()
  stream.close()
  t.equal(bus.listenerCount(), 0)
})
