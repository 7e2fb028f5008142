import { randomUUID } from 'node:crypto'
import { trace } from '@opentelemetry/api'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import pino from 'pino'
import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import type { TaskEvent } from '../../../services/tasks/event-bus.js'
import { RedisTaskEventBus } from '../../../services/tasks/redis-event-bus.js'
import { redisDb, until, type Teardown } from '../../helper.js'

// This file owns Redis db 7. Pub/sub channels are not per db, so every test takes its own random prefix.
const DB = 7
// Spans record in this file (an abort request carries the canceller's trace), with nowhere to go.
new NodeTracerProvider().register()
const log = pino({ level: 'silent' })

function task (id: string): Task {
  return {
    id,
    contextId: 'c1',
    kind: 'task',
    status: { state: 'in_progress', timestamp: '2026-01-01T00:00:00.000Z' },
    artifacts: [],
    history: [],
    metadata: null
  }
}

function event (id: string, version: number): TaskEvent {
  return { type: 'status', version, task: task(id), final: false }
}

async function pair (t: Teardown) {
  const client = await redisDb(t, DB)
  const keyPrefix = `test:${randomUUID()}:`
  const a = new RedisTaskEventBus(client, { keyPrefix, log })
  const b = new RedisTaskEventBus(client, { keyPrefix, log })
  t.teardown(async () => { await a.close(); await b.close() })
  return { client, a, b, keyPrefix }
}

t.test('an event published on one instance reaches the other, in order, and local listeners at once', async t => {
  const { a, b } = await pair(t)
  const onA: number[] = []
  const onB: number[] = []
  a.subscribe('t1', e => onA.push(e.version))
  const sub = b.subscribe('t1', e => onB.push(e.version))
  await sub.ready
  for (let v = 1; v <= 20; v++) a.publish('t1', event('t1', v))
  t.same(onA, Array.from({ length: 20 }, (_, i) => i + 1), 'the publisher\'s own listeners, synchronously, once each')
  await until(() => onB.length === 20)
  t.same(onB, onA, 'the other instance, in the same order')
  t.same((await new Promise<number[]>(resolve => setImmediate(() => resolve(onA)))).length, 20, 'no echo of its own messages')
})

t.test('events of other tasks are not delivered, and unsubscribing stops delivery and the channel', async t => {
  const { client, a, b, keyPrefix } = await pair(t)
  const seen: number[] = []
  const off = b.subscribe('t1', e => seen.push(e.version))
  await off.ready
  a.publish('t2', event('t2', 1))
  a.publish('t1', event('t1', 2))
  await until(() => seen.length === 1)
  t.same(seen, [2])
  t.equal(b.listenerCount('t1'), 1)
  off()
  off()
  t.equal(b.listenerCount(), 0)
  await until(async () => Number((await client.pubsub('NUMSUB', `${keyPrefix}events:t1`))[1]) === 0)
  a.publish('t1', event('t1', 3))
  // The publish goes out on `client`, the subscription on the bus's own connection: Redis has run the PUBLISH once a
  // later command on the same connection is answered (without this, the subscription could overtake it).
  await client.ping()
  // A later subscriber on the same instance gets new events only.
  const again: number[] = []
  const sub = b.subscribe('t1', e => again.push(e.version))
  await sub.ready
  a.publish('t1', event('t1', 4))
  await until(() => again.length === 1)
  t.same(again, [4])
  t.same(seen, [2], 'nothing after unsubscribing')
})

t.test('two listeners on one task share one subscription; the channel stays until the last leaves', async t => {
  const { client, a, b, keyPrefix } = await pair(t)
  const one: number[] = []
  const two: number[] = []
  const off1 = b.subscribe('t1', e => one.push(e.version))
  const off2 = b.subscribe('t1', e => two.push(e.version))
  await Promise.all([off1.ready, off2.ready])
  t.equal(Number((await client.pubsub('NUMSUB', `${keyPrefix}events:t1`))[1]), 1)
  off1()
  a.publish('t1', event('t1', 1))
  await until(() => two.length === 1)
  t.same(one, [])
  off2()
})

t.test('an abort request reaches every instance\'s handler', async t => {
  const { client, a, b, keyPrefix } = await pair(t)
  const heard: string[] = []
  a.onAbortRequest(id => heard.push(`a:${id}`))
  b.onAbortRequest(id => heard.push(`b:${id}`))
  await until(async () => Number((await client.pubsub('NUMSUB', `${keyPrefix}abort`))[1]) === 2)
  b.requestAbort('t9')
  await until(() => heard.length === 2)
  t.same(heard.sort(), ['a:t9', 'b:t9'])
})

t.test('an abort request made inside a span carries its traceparent, with or without the cancel\'s event', async t => {
  const { client, a, b, keyPrefix } = await pair(t)
  const heard: Array<[string, unknown]> = []
  a.onAbortRequest((id, carrier) => heard.push([id, carrier]))
  b.onAbortRequest(() => {})
  await until(async () => Number((await client.pubsub('NUMSUB', `${keyPrefix}abort`))[1]) === 2)
  const seen: string[] = []
  const sub = a.subscribe('t2', e => seen.push(`${e.type}:${e.version}`), { local: true })
  await sub.ready
  const traceparent = trace.getTracer('test').startActiveSpan('cancel', span => {
    b.requestAbort('t1')
    b.requestAbort('t2', event('t2', 3))
    span.end()
    return `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`
  })
  b.requestAbort('t3', event('t3', 4))
  await until(() => heard.length === 3)
  t.same(heard, [['t1', { traceparent }], ['t2', { traceparent }], ['t3', undefined]])
  t.same(seen, ['status:3'], 'the event before the traceparent still reaches the local listener')
  sub()
})

t.test('a local listener hears its own process and the cancellations made elsewhere, at no subscription', async t => {
  const { client, a, b, keyPrefix } = await pair(t)
  b.onAbortRequest(() => {})
  await until(async () => Number((await client.pubsub('NUMSUB', `${keyPrefix}abort`))[1]) === 2)
  const seen: string[] = []
  const sub = b.subscribe('t1', e => seen.push(`${e.type}:${e.version}`), { local: true })
  await sub.ready
  t.equal(Number((await client.pubsub('NUMSUB', `${keyPrefix}events:t1`))[1]), 0, 'no channel subscription')
  t.equal(b.listenerCount('t1'), 1)
  b.deliver('t1', event('t1', 2))
  t.same(seen, ['status:2'], 'this process\'s events, at once')
  a.publish('t1', event('t1', 3))
  // The cancel made on A reaches B's local listener with the abort request; B's own requests do not echo.
  const canceled: TaskEvent = { type: 'status', version: 4, task: { ...task('t1'), status: { state: 'canceled', timestamp: '2026-01-01T00:00:01.000Z' } }, final: true }
  a.requestAbort('t1', canceled)
  b.requestAbort('t1', event('t1', 9))
  a.requestAbort('t2', event('t2', 5))
  await until(() => seen.length === 2)
  t.same(seen, ['status:2', 'status:4'], 'A\'s published event does not reach it; the cancellation does, once')
  sub()
  t.equal(b.listenerCount(), 0)
})

t.test('deliver reaches both kinds of listener though one throws; an unreadable cancellation is logged and dropped', async t => {
  const { client, a, b, keyPrefix } = await pair(t)
  const seen: string[] = []
  const sub = b.subscribe('t1', () => { throw new Error('listener broke') })
  await sub.ready
  b.subscribe('t1', e => seen.push(`local:${e.version}`), { local: true })
  t.throws(() => b.deliver('t1', event('t1', 2)), /listener broke/, 'the first failure is rethrown')
  t.same(seen, ['local:2'], 'after the local listener had the event')
  const heard: string[] = []
  b.onAbortRequest(id => heard.push(id))
  await until(async () => Number((await client.pubsub('NUMSUB', `${keyPrefix}abort`))[1]) === 2)
  await client.publish(`${keyPrefix}abort`, `${randomUUID()}\nt1\n{not json`)
  a.requestAbort('t1', event('t1', 3))
  await until(() => heard.length === 2)
  t.same(heard, ['t1', 't1'], 'both requests still abort')
  t.same(seen, ['local:2', 'local:3'], 'only the readable cancellation reached the listener')
})

t.test('follow moves the local listeners of a task to its channel; their unsubscribe still works', async t => {
  const { client, a, b, keyPrefix } = await pair(t)
  t.equal(b.follow('t1'), undefined, 'nothing to follow without local listeners')
  const seen: number[] = []
  const off = b.subscribe('t1', e => seen.push(e.version), { local: true })
  a.publish('t1', event('t1', 1))
  await (b.follow('t1') as Promise<void>)
  t.equal(Number((await client.pubsub('NUMSUB', `${keyPrefix}events:t1`))[1]), 1, 'subscribed now')
  a.publish('t1', event('t1', 2))
  await until(() => seen.length === 1)
  t.same(seen, [2], 'what other instances publish from then on')
  off()
  t.equal(b.listenerCount(), 0)
  await until(async () => Number((await client.pubsub('NUMSUB', `${keyPrefix}events:t1`))[1]) === 0)
})

t.test('an abort request from an instance of an earlier release (a bare task id) still reaches the handlers', async t => {
  const { client, a, keyPrefix } = await pair(t)
  const heard: string[] = []
  a.onAbortRequest(id => heard.push(id))
  await until(async () => Number((await client.pubsub('NUMSUB', `${keyPrefix}abort`))[1]) >= 1)
  await client.publish(`${keyPrefix}abort`, 't7')
  await client.publish(`${keyPrefix}abort`, `${randomUUID()}\nt8`)
  await until(() => heard.length === 2)
  t.same(heard, ['t7', 't8'])
})

t.test('an announced message is the event as published, with the task serialized once', async t => {
  const { client, a, b } = await pair(t)
  const seen: TaskEvent[] = []
  const sub = b.subscribe('t1', e => seen.push(e))
  await sub.ready
  const e: TaskEvent = { type: 'artifact', version: 3, task: task('t1'), artifact: { artifactId: 'x', parts: [{ kind: 'text', text: 'hi' }] }, append: true, lastChunk: false }
  const message = a.message(e, JSON.stringify(e.task))
  await client.publish(a.channel('t1'), message)
  await until(() => seen.length === 1)
  t.same(seen[0], e)
})

t.test('an unreadable message and a throwing listener are logged and go no further', async t => {
  const { client, b, keyPrefix } = await pair(t)
  const seen: number[] = []
  const sub = b.subscribe('t1', () => { throw new Error('listener broke') })
  b.subscribe('t1', e => seen.push(e.version))
  await sub.ready
  await client.publish(`${keyPrefix}events:t1`, `${randomUUID()}\n{not json`)
  await client.publish(`${keyPrefix}events:t1`, `${randomUUID()}\n${JSON.stringify(event('t1', 5))}`)
  await until(() => seen.length === 1)
  t.same(seen, [5], 'the good event still reaches the other listener')
})

t.test('with Redis unreachable, ready rejects with StorageUnavailable and publish does not throw', async t => {
  const { Redis } = await import('ioredis')
  const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null })
  client.on('error', () => {})
  const bus = new RedisTaskEventBus(client, { keyPrefix: 'down:', log })
  t.teardown(async () => { await bus.close(); client.disconnect() })
  const sub = bus.subscribe('t1', () => {})
  await t.rejects(sub.ready, { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  t.doesNotThrow(() => bus.publish('t1', event('t1', 1)))
  t.doesNotThrow(() => bus.requestAbort('t1'))
  sub()
})

/** The task `id` at `version`, its artifact `x` holding the texts `texts`. */
function withText (id: string, texts: string[]): Task {
  return { ...task(id), artifacts: [{ artifactId: 'x', parts: texts.map(text => ({ kind: 'text' as const, text })) }] }
}

function chunkOf (id: string, version: number, text: string, artifactId = 'x'): TaskEvent {
  return { type: 'artifact', version, task: task(id), artifact: { artifactId, parts: [{ kind: 'text', text }] }, append: true, lastChunk: false }
}

const texts = (e: TaskEvent) => e.task.artifacts.map(a => a.parts.map(p => (p as { text: string }).text).join('|'))

t.test('a chunk announced without its task (issue 39 row 7) is added to the task as last seen, read from the store when that is not the version before', async t => {
  const client = await redisDb(t, DB)
  const keyPrefix = `test:${randomUUID()}:`
  const stored: Array<{ version: number, task: Task } | null | Error> = []
  const loads: Array<(value: unknown) => void> = []
  const a = new RedisTaskEventBus(client, { keyPrefix, log })
  const b = new RedisTaskEventBus(client, {
    keyPrefix,
    log,
    load: async () => await new Promise(resolve => { loads.push(resolve) }).then(() => {
      const next = stored.shift() as { version: number, task: Task } | null | Error
      if (next instanceof Error) throw next
      return next
    })
  })
  t.teardown(async () => { await a.close(); await b.close() })
  const seen: TaskEvent[] = []
  const sub = b.subscribe('k', e => seen.push(e))
  await sub.ready
  const announce = async (e: TaskEvent) => await client.publish(a.channel('k'), a.message(e))
  t.notMatch(a.message(chunkOf('k', 2, 'p1')), /"task"/, 'a chunk\'s message leaves its task out')

  // No task seen yet: read first; what comes meanwhile waits behind the read.
  stored.push({ version: 1, task: withText('k', ['p0']) })
  await announce(chunkOf('k', 2, 'p1'))
  await announce(chunkOf('k', 3, 'p2'))
  await until(() => loads.length === 1)
  await new Promise(resolve => setTimeout(resolve, 20))
  t.equal(seen.length, 0, 'nothing goes out before the read')
  loads[0](null)
  await until(() => seen.length === 2)
  t.same(seen.map(texts), [['p0|p1'], ['p0|p1|p2']], 'each chunk added to the task as of the version before')

  // A whole task, then a chunk after a write with no event (a gap): read again, and the read is ahead of the chunk.
  await client.publish(a.channel('k'), a.message({ type: 'status', version: 4, task: withText('k', ['w']), final: false }, JSON.stringify(withText('k', ['w']))))
  await until(() => seen.length === 3)
  stored.push({ version: 7, task: withText('k', ['w', 'p6', 'p7']) })
  await announce(chunkOf('k', 6, 'p6'))
  await until(() => loads.length === 2)
  loads[1](null)
  await until(() => seen.length === 4)
  t.same(texts(seen[3]), ['w|p6|p7'], 'a chunk older than the task read goes with the task read')
  t.equal(seen[3].version, 6)

  // The read finds the task older than the chunk's version before: the chunk goes on, added to what was read.
  stored.push({ version: 8, task: withText('k', ['old']) })
  await announce(chunkOf('k', 10, 'p10', 'y'))
  await until(() => loads.length === 3)
  loads[2](null)
  await until(() => seen.length === 5)
  t.same(texts(seen[4]), ['old', 'p10'], 'the chunk of an artifact the task lacks adds it')

  // A read that fails, or finds no task, drops the chunk (logged).
  const other: TaskEvent[] = []
  const sub2 = b.subscribe('gone', e => other.push(e))
  await sub2.ready
  stored.push(new Error('down'))
  await client.publish(a.channel('gone'), a.message(chunkOf('gone', 2, 'lost')))
  await until(() => loads.length === 4)
  loads[3](null)
  stored.push(null)
  await client.publish(a.channel('gone'), a.message(chunkOf('gone', 3, 'lost')))
  await until(() => loads.length === 5)
  loads[4](null)
  await announce(chunkOf('k', 11, 'p11', 'y'))
  await until(() => seen.length === 6)
  t.same(other, [], 'no chunk without a task to add it to')

  // Unsubscribed while the read runs: nothing goes out once it is done.
  const late: TaskEvent[] = []
  const sub3 = b.subscribe('late', e => late.push(e))
  await sub3.ready
  stored.push({ version: 1, task: withText('late', []) })
  await client.publish(a.channel('late'), a.message(chunkOf('late', 2, 'x')))
  await until(() => loads.length === 6)
  sub3()
  loads[5](null)
  await new Promise(resolve => setTimeout(resolve, 20))
  t.same(late, [])
})

t.test('without a store to read, a chunk whose task was not seen is dropped', async t => {
  const { client, a, b } = await pair(t)
  const seen: TaskEvent[] = []
  const sub = b.subscribe('n', e => seen.push(e))
  await sub.ready
  await client.publish(a.channel('n'), a.message(chunkOf('n', 2, 'lost')))
  a.publish('n', { type: 'status', version: 3, task: withText('n', ['s']), final: false })
  await until(() => seen.length === 1)
  t.equal(seen[0].version, 3)
})
