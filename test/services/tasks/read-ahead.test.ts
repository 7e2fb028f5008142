import { pino } from 'pino'
import t from 'tap'
import type { Part } from '../../../schemas/task.js'
import type { AgentExecutor, ExecutorEvent } from '../../../services/agent/executor.js'
import { createPrincipal } from '../../../services/auth/principal.js'
import { MemoryTaskEventBus, type TaskEvent } from '../../../services/tasks/event-bus.js'
import { MemoryTaskStore } from '../../../services/tasks/memory-store.js'
import { applyAhead } from '../../../services/tasks/read-ahead.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { TaskService } from '../../../services/tasks/task-service.js'
import { until } from '../../helper.js'

// Issue 39 row 7: a run reads its executor ahead while a write is in flight, and writes a run of chunks as one.

/** Resolves after a turn of the event loop: a write across the network, as far as the reader can tell. */
const later = async <T> (value: T): Promise<T> => await new Promise(resolve => setImmediate(() => resolve(value)))

async function * numbers (n: number, log: string[] = []): AsyncGenerator<number> {
  try {
    for (let i = 1; i <= n; i++) {
      log.push(`yield ${i}`)
      yield i
    }
  } finally {
    log.push('closed')
  }
}

const sum = (a: number, b: number) => a < 100 && b < 100 ? a + b : undefined

t.test('while an apply is in flight the events yielded meanwhile are read, and merged into one apply', async t => {
  const applied: number[] = []
  await applyAhead(numbers(10), n => { applied.push(n); return later(false) }, sum, 100)
  t.equal(applied[0], 1, 'the first event alone')
  t.ok(applied.length < 10, `fewer applies than events (${applied.join(', ')})`)
  t.equal(applied.reduce((a, b) => a + b, 0), 55, 'every event, once')
})

t.test('applies that answer at once read nothing ahead: one event at a time, in order', async t => {
  const log: string[] = []
  await applyAhead(numbers(3, log), n => { log.push(`apply ${n}`); return false }, sum, 100)
  t.same(log, ['yield 1', 'apply 1', 'yield 2', 'apply 2', 'yield 3', 'apply 3', 'closed'])
})

t.test('what cannot be merged is applied apart, and at most max events are read ahead', async t => {
  const applied: number[] = []
  let pulled = 0
  async function * counting (): AsyncGenerator<number> {
    for (;;) {
      pulled++
      yield pulled % 2 === 0 ? 100 : 1
    }
  }
  let release!: () => void
  const first = new Promise<boolean>(resolve => { release = () => resolve(false) })
  const done = applyAhead(counting(), n => {
    applied.push(n)
    return applied.length === 1 ? first : applied.length >= 6
  }, sum, 4)
  await until(() => pulled >= 5)
  await later(null)
  t.equal(pulled, 5, 'the first event and 4 read ahead')
  release()
  await done
  t.same(applied, [1, 100, 1, 100, 1, 100], 'an event the merge refuses goes on its own')
})

t.test('nothing is read past an event that readsPast refuses while it is applied', async t => {
  const log: string[] = []
  const apply = async (n: number) => {
    log.push(`apply ${n}`)
    const stop = await later(n === 1)
    log.push(`applied ${n}`)
    return stop
  }
  await applyAhead(numbers(3, log), apply, () => undefined, 100, n => n !== 1)
  t.same(log, ['yield 1', 'apply 1', 'applied 1', 'closed'], 'the iterable did not run past the event that ended it')
})

t.test('stopping returns the iterator; one still working on an event read ahead is not waited for', async t => {
  const log: string[] = []
  await applyAhead(numbers(10, log), n => n === 2, sum, 100)
  t.same(log.slice(-1), ['closed'], 'stopped: the iterator is returned')

  let pulls = 0
  async function * stuck (): AsyncGenerator<number> {
    yield 1
    pulls++
    await new Promise(() => {})
  }
  await applyAhead(stuck(), () => later(true), sum, 100)
  t.equal(pulls, 1, 'the stop did not wait for the event being read ahead')
})

t.test('an iterable that throws while read ahead throws after the events before it; a throwing apply returns the iterator', async t => {
  const applied: number[] = []
  async function * failing (): AsyncGenerator<number> {
    yield 1
    yield 200
    throw new Error('agent broke')
  }
  await t.rejects(applyAhead(failing(), n => { applied.push(n); return later(false) }, sum, 100), { message: 'agent broke' })
  t.same(applied, [1, 200])

  const log: string[] = []
  await t.rejects(applyAhead(numbers(5, log), async () => { throw new Error('store down') }, sum, 100), { message: 'store down' })
  t.equal(log.at(-1), 'closed')
})

/** A store across the network: no synchronous view; counts its writes. */
class PromiseStore extends MemoryTaskStore {
  writes = 0
  override get sync (): undefined {
    return undefined
  }

  override async replace (next: StoredTask): Promise<boolean> {
    this.writes++
    return await later(await super.replace(next))
  }
}

t.test('a run over a store across the network writes the chunks yielded during a write as one change: the task as if one at a time', async t => {
  const T0 = Date.UTC(2025, 0, 1)
  const parts = (text: string): Part[] => [{ kind: 'text', text }]
  const events: ExecutorEvent[] = [
    ...Array.from({ length: 50 }, (_, i) => `s${i} `),
    { kind: 'artifact', artifactId: 'x', name: 'data', parts: parts('x0') },
    ...Array.from({ length: 50 }, (_, i): ExecutorEvent => ({ kind: 'artifact', artifactId: 'x', append: true, parts: parts(`x${i + 1}`), lastChunk: i === 49 })),
    { kind: 'message', content: 'note' },
    'end'
  ]
  const executor: AgentExecutor = async function * () { yield * events }
  const store = new PromiseStore({ maxTasks: 10, ttlSeconds: 60, now: () => T0 })
  const bus = new MemoryTaskEventBus()
  const service = new TaskService({ store, bus, executor, log: pino({ level: 'silent' }), toolsFor: () => ({ available: () => [], call: async () => ({}) }) })
  t.teardown(async () => { await service.drain(0); await store.close(); await bus.close() })
  const alice = createPrincipal('alice', 'api_key', ['api:read'], {})
  const created = await service.create({ role: 'user', messageId: 'm1', parts: parts('go') }, alice)
  const seen: TaskEvent[] = []
  bus.subscribe(created.task.id, event => seen.push(event))
  service.dispatch(created, alice)
  const done = await service.waitSettled(created, 10_000)
  t.equal(done.task.status.state, 'completed')
  const text = (i: number) => done.task.artifacts[i].parts.map(p => p.kind === 'text' ? p.text : '').join('')
  t.equal(text(0), Array.from({ length: 50 }, (_, i) => `s${i} `).join('') + 'end', 'the result artifact: every string, in order')
  t.equal(done.task.artifacts[0].parts.length, 51, 'one part per string, as one write each would leave it')
  t.match(done.task.artifacts[1], { artifactId: 'x', name: 'data' })
  t.equal(text(1), Array.from({ length: 51 }, (_, i) => `x${i}`).join(''))
  t.ok(store.writes < events.length, `${store.writes} writes for ${events.length} events`)
  const appends = seen.filter(e => e.type === 'artifact' && e.append)
  const last = appends.filter(e => e.type === 'artifact' && e.artifact.artifactId === 'x').at(-1)
  t.match(last, { artifact: { artifactId: 'x' }, lastChunk: true }, 'a merged chunk takes the lastChunk of its last')
  await until(() => service.running === 0)
})
