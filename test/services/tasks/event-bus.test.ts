import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import { MemoryTaskEventBus, type TaskEvent, type TaskEventBus } from '../../../services/tasks/event-bus.js'

const task: Task = {
  id: 't1',
  contextId: 'c1',
  kind: 'task',
  status: { state: 'in_progress', timestamp: '2025-01-01T00:00:00.000Z' },
  artifacts: [],
  history: [],
  metadata: null
}

function event (version: number): TaskEvent {
  return { type: 'status', version, task, final: false }
}

t.test('a subscriber receives the events of its task only, until it unsubscribes', async t => {
  const bus = new MemoryTaskEventBus()
  const seen: number[] = []
  const other: number[] = []
  const off = bus.subscribe('t1', e => seen.push(e.version))
  bus.subscribe('t2', e => other.push(e.version))
  bus.publish('t1', event(1))
  bus.publish('t1', event(2))
  bus.publish('t2', event(7))
  off()
  bus.publish('t1', event(3))
  t.same(seen, [1, 2])
  t.same(other, [7])
  await bus.close()
})

t.test('listenerCount counts per task and in total, back to 0 after unsubscribing', async t => {
  const bus = new MemoryTaskEventBus()
  const offs = [
    bus.subscribe('t1', () => {}),
    bus.subscribe('t1', () => {}),
    bus.subscribe('t2', () => {})
  ]
  t.equal(bus.listenerCount('t1'), 2)
  t.equal(bus.listenerCount('t2'), 1)
  t.equal(bus.listenerCount('t3'), 0)
  t.equal(bus.listenerCount(), 3)
  for (const off of offs) off()
  t.equal(bus.listenerCount('t1'), 0)
  t.equal(bus.listenerCount('t2'), 0)
  t.equal(bus.listenerCount(), 0)
})

t.test('unsubscribing twice is harmless', async t => {
  const bus = new MemoryTaskEventBus()
  const seen: number[] = []
  const off = bus.subscribe('t1', () => {})
  bus.subscribe('t1', e => seen.push(e.version))
  off()
  off()
  t.equal(bus.listenerCount('t1'), 1)
  t.equal(bus.listenerCount(), 1)
  bus.publish('t1', event(1))
  t.same(seen, [1])
})

t.test('a stale unsubscribe does not remove a later subscription of the same listener', async t => {
  const bus = new MemoryTaskEventBus()
  const seen: number[] = []
  const listener = (e: TaskEvent) => { seen.push(e.version) }
  const first = bus.subscribe('t1', listener)
  first()
  bus.subscribe('t1', listener)
  first()
  bus.publish('t1', event(1))
  t.same(seen, [1])
  t.equal(bus.listenerCount(), 1)
})

t.test('subscribing the same listener twice delivers once, and the second handle is a no-op', async t => {
  const bus = new MemoryTaskEventBus()
  const seen: number[] = []
  const listener = (e: TaskEvent) => { seen.push(e.version) }
  const off = bus.subscribe('t1', listener)
  const again = bus.subscribe('t1', listener)
  t.equal(bus.listenerCount(), 1)
  bus.publish('t1', event(1))
  again()
  bus.publish('t1', event(2))
  t.same(seen, [1, 2])
  off()
  t.equal(bus.listenerCount(), 0)
})

t.test('publishing to a task nobody follows does nothing', async t => {
  const bus = new MemoryTaskEventBus()
  bus.publish('nobody', event(1))
  const off = bus.subscribe('t1', () => {})
  off()
  bus.publish('t1', event(2))
  t.equal(bus.listenerCount(), 0)
})

t.test('a listener may unsubscribe itself and another during a publish', async t => {
  const bus = new MemoryTaskEventBus()
  const calls: string[] = []
  // Both listeners see the event being delivered, then neither sees the next one.
  const offSelf = bus.subscribe('t1', e => {
    calls.push(`self ${e.version}`)
    offSelf()
    offOther()
  })
  const offOther = bus.subscribe('t1', e => { calls.push(`other ${e.version}`) })
  const late: number[] = []
  bus.subscribe('t1', e => {
    // A listener subscribed during delivery starts with the next event.
    if (late.length === 0) bus.subscribe('t1', x => { late.push(x.version) })
    late.push(-e.version)
  })
  bus.publish('t1', event(1))
  bus.publish('t1', event(2))
  t.same(calls, ['self 1', 'other 1'])
  t.same(late, [-1, -2, 2])
  t.equal(bus.listenerCount('t1'), 2)
})

t.test('close drops every listener, and an unsubscribe after close keeps the count at 0', async t => {
  const bus = new MemoryTaskEventBus()
  const seen: number[] = []
  const off = bus.subscribe('t1', e => seen.push(e.version))
  bus.subscribe('t2', () => {})
  await bus.close()
  t.equal(bus.listenerCount(), 0)
  off()
  t.equal(bus.listenerCount(), 0)
  t.equal(bus.listenerCount('t1'), 0)
  bus.publish('t1', event(1))
  t.same(seen, [])
  // The bus is usable again after close (a new subscription is counted from 0).
  const again = bus.subscribe('t1', () => {})
  t.equal(bus.listenerCount(), 1)
  off()
  t.equal(bus.listenerCount(), 1)
  again()
  t.equal(bus.listenerCount(), 0)
})

t.test('a listener that throws does not keep the event from the others; the first error is rethrown', async t => {
  const bus = new MemoryTaskEventBus()
  const got: number[] = []
  bus.subscribe('t1', () => { throw new Error('first') })
  bus.subscribe('t1', () => { throw new Error('second') })
  bus.subscribe('t1', e => { got.push(e.version) })
  t.throws(() => bus.publish('t1', event(1)), { message: 'first' })
  t.same(got, [1])
})

t.test('in memory, deliver is publish, a local listener is any listener, and there is nothing to follow', async t => {
  const bus: TaskEventBus = new MemoryTaskEventBus()
  const seen: number[] = []
  const off = bus.subscribe('t1', e => seen.push(e.version), { local: true })
  bus.deliver('t1', event(1))
  bus.publish('t1', event(2))
  t.same(seen, [1, 2])
  t.equal(bus.follow('t1'), undefined)
  off()
  t.equal(bus.listenerCount(), 0)
})
