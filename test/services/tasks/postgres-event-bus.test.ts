// PostgresTaskEventBus (services/tasks/postgres-event-bus.ts) on a real PostgreSQL: two instances, each a bus and a
// store on one migrated schema, passing events and abort requests by LISTEN/NOTIFY, reading what they were told of,
// and catching up after their listening connection was cut.
import { trace } from '@opentelemetry/api'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import type pg from 'pg'
import pino from 'pino'
import t from 'tap'
import { connectOnce } from '../../../services/postgres/connect.js'
import { storeQuery } from '../../../services/postgres/query.js'
import type { TaskEvent } from '../../../services/tasks/event-bus.js'
import { EVENTS_CHANNEL, PostgresTaskEventBus, type PostgresTaskEventBusOptions } from '../../../services/tasks/postgres-event-bus.js'
import { PostgresTaskStore } from '../../../services/tasks/postgres-store.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { logCapture, migratedSchema, testDatabase, until, type Teardown } from '../../helper.js'
import { moved, record } from './store-contract.js'

// Spans record in this file (an abort request carries the canceller's trace), with nowhere to go.
new NodeTracerProvider().register()
const databaseUrl = testDatabase(t)
const log = pino({ level: 'silent' })

interface Instance {
  bus: PostgresTaskEventBus
  store: PostgresTaskStore
  /** What this instance's listeners heard: `<version> <type> <state>`. */
  heard: string[]
  follow: (taskId: string) => Promise<void>
}

/** One instance: a bus and a store on `pool`; `opts` replaces parts of the bus's options. */
async function instance (t: Teardown, pool: pg.Pool, opts: Partial<PostgresTaskEventBusOptions> = {}): Promise<Instance> {
  const url = await databaseUrl
  const bus: PostgresTaskEventBus = new PostgresTaskEventBus({
    connect: async () => await connectOnce(url, 5000, true),
    notify: async payload => await storeQuery(pool, 'SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, payload]),
    since: async (id, after) => await store.since(id, after),
    log,
    ...opts
  })
  const store = new PostgresTaskStore(pool, { ttlSeconds: 3600, announcer: bus, leaseTtlMs: 30_000, replay: { maxEvents: 0, ttlSeconds: 300 } })
  t.teardown(async () => {
    await bus.close()
    await store.close()
  })
  await bus.start()
  const heard: string[] = []
  const follow = async (taskId: string): Promise<void> => {
    await bus.subscribe(taskId, event => heard.push(describe(event))).ready
  }
  return { bus, store, heard, follow }
}

function describe (event: TaskEvent): string {
  return `${event.version} ${event.type} ${event.task.status.state}`
}

/** A write by `by`: the record moved to `state`, or an artifact chunk added, its event kept and announced. */
async function write (by: Instance, prev: StoredTask, change: { state?: StoredTask['task']['status']['state'], chunk?: string }): Promise<StoredTask> {
  let next = moved(prev, change.state ?? prev.task.status.state)
  let event: TaskEvent
  if (change.chunk !== undefined) {
    const artifact = { artifactId: 'a', parts: [{ kind: 'text' as const, text: change.chunk }] }
    next = { ...next, task: { ...prev.task, artifacts: [artifact] } }
    event = { type: 'artifact', version: next.version, task: next.task, artifact, append: prev.task.artifacts.length > 0, lastChunk: false }
  } else {
    event = { type: 'status', version: next.version, task: next.task, final: ['completed', 'input_required'].includes(next.task.status.state) }
  }
  t.equal(await by.store.replace(next, event), true, `version ${next.version} written`)
  by.bus.deliver(next.task.id, event)
  return next
}

t.test('the writes of one instance reach the listeners of another in order, with their task; none comes back to the writer', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const a = await instance(t, pool)
  const b = await instance(t, pool)
  let task = record('t1', Date.now())
  await a.store.insert(task)
  await a.follow('t1')
  await b.follow('t1')
  task = await write(a, task, { state: 'in_progress' })
  task = await write(a, task, { chunk: 'one' })
  task = await write(a, task, { chunk: 'two' })
  task = await write(a, task, { state: 'completed' })
  await until(() => b.heard.length === 4)
  t.same(b.heard, ['2 status in_progress', '3 artifact in_progress', '4 artifact in_progress', '5 status completed'])
  t.same(a.heard, b.heard, 'the writer heard each of its own once')
  const { rows } = await pool.query('SELECT task_id FROM a2a_task_leases')
  t.same(rows, [], 'the write that ended the task dropped the lease its insert took')
})

t.test('a listener that comes late reads from the first notice it gets, not from the task\'s start', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  let reads = 0
  const a = await instance(t, pool)
  const b = await instance(t, pool, { since: async (id, after) => { if (id === 't2') reads++; return await b.store.since(id, after) } })
  let task = record('t2', Date.now())
  await a.store.insert(task)
  task = await write(a, task, { state: 'in_progress' })
  for (let i = 0; i < 4; i++) task = await write(a, task, { chunk: `${i}` })
  // Notices come in the order of their writes: once B hears this one, those of t2's writes so far have come and gone.
  let marker = record('marker', Date.now())
  await a.store.insert(marker)
  await b.follow('marker')
  marker = await write(a, marker, { state: 'in_progress' })
  await until(() => b.heard.length === 1)
  b.heard.length = 0
  await b.follow('t2')
  task = await write(a, task, { chunk: 'late' })
  task = await write(a, task, { state: 'completed' })
  await until(() => b.heard.length === 2)
  t.same(b.heard.map(heard => heard.split(' ').slice(0, 2).join(' ')), ['7 artifact', '8 status'], 'from version 7 on')
  t.equal(b.heard[1], '8 status completed')
  t.ok(reads <= 2, `${reads} reads`)
})

t.test('events no longer kept: the listener gets the task as it stands, as a status event', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  let open = (): void => {}
  const gate = new Promise<void>(resolve => { open = resolve })
  const a = await instance(t, pool)
  const b = await instance(t, pool, { since: async (id, after) => { await gate; return await b.store.since(id, after) } })
  let task = record('t3', Date.now())
  await a.store.insert(task)
  await b.follow('t3')
  task = await write(a, task, { state: 'in_progress' })
  task = await write(a, task, { chunk: 'x' })
  task = await write(a, task, { state: 'completed' })
  await pool.query('DELETE FROM a2a_task_events')
  open()
  await until(() => b.heard.length === 1)
  t.same(b.heard, ['4 status completed'])
})

t.test('an abort request reaches every instance\'s handlers once, the requester\'s at once', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const a = await instance(t, pool)
  const b = await instance(t, pool)
  const c = await instance(t, pool)
  const aborted: string[] = []
  for (const [name, at] of [['a', a], ['b', b], ['c', c]] as const) at.bus.onAbortRequest(id => aborted.push(`${name} ${id}`))
  a.bus.requestAbort('t4')
  t.same(aborted, ['a t4'], 'the requester at once')
  await until(() => aborted.length === 3)
  t.same(aborted.sort(), ['a t4', 'b t4', 'c t4'])
})

t.test('an abort request made inside a span carries its traceparent to the other instances; one made outside, none', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const a = await instance(t, pool)
  const b = await instance(t, pool)
  const heard: Array<[string, unknown]> = []
  b.bus.onAbortRequest((id, carrier) => heard.push([id, carrier]))
  const traceparent = trace.getTracer('test').startActiveSpan('cancel', span => {
    a.bus.requestAbort('t5')
    span.end()
    return `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`
  })
  a.bus.requestAbort('t6')
  await until(() => heard.length === 2)
  // Notices go through the pool, each on a connection of its own: they may arrive in either order.
  t.same(heard.sort(([a], [b]) => String(a).localeCompare(String(b))), [['t5', { traceparent }], ['t6', undefined]])
})

t.test('a listening connection cut: subscriptions fail meanwhile; once back, what was written meanwhile is heard', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const url = await databaseUrl
  let refuse = false
  const a = await instance(t, pool)
  const b = await instance(t, pool, {
    connect: async () => {
      if (refuse) throw new Error('refused for the test')
      return await connectOnce(url, 5000, true)
    }
  })
  let task = record('t5', Date.now())
  await a.store.insert(task)
  await b.follow('t5')
  refuse = true
  const { rows } = await pool.query(`SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
    WHERE datname = current_database() AND query = 'LISTEN ${EVENTS_CHANNEL}' AND pid <> pg_backend_pid()`)
  t.ok(rows.length >= 2, 'the listening connections ended')
  await until(async () => await b.bus.subscribe('other', () => {}).ready.then(() => false, (err: { code?: string }) => err.code === 'A2A_ERR_STORAGE_UNAVAILABLE'))
  await until(async () => await a.bus.subscribe('other', () => {}).ready.then(() => true, () => false))
  task = await write(a, task, { state: 'in_progress' })
  task = await write(a, task, { state: 'completed' })
  t.same(b.heard, [], 'nothing heard while not listening')
  refuse = false
  await until(() => b.heard.length === 2)
  t.same(b.heard, ['2 status in_progress', '3 status completed'], 'read once back')
  await b.bus.subscribe('other', () => {}).ready
})

t.test('an event published without its write\'s notice (a store that does not announce) reaches the other instances too', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const a = await instance(t, pool)
  const b = await instance(t, pool)
  const quiet = new PostgresTaskStore(pool, { ttlSeconds: 3600 })
  const task = record('t6', Date.now())
  await quiet.insert(task)
  await b.follow('t6')
  const next = moved(task, 'in_progress')
  const event: TaskEvent = { type: 'status', version: 2, task: next.task, final: false }
  t.equal(await quiet.replace(next, event), true)
  a.bus.publish('t6', event)
  await until(() => b.heard.length === 1)
  t.same(b.heard, ['2 status in_progress'])
  const off = b.bus.subscribe('t6', () => {})
  t.same([b.bus.listenerCount('t6'), b.bus.listenerCount()], [2, 2])
  off()
  off()
  t.equal(b.bus.listenerCount('t6'), 1, 'unsubscribed once')
})

t.test('what a bus cannot do is logged and lost, never thrown: a notice not sent, a read refused, a listener that throws', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const logs = logCapture()
  let failRead = true
  const a = await instance(t, pool)
  const b = await instance(t, pool, {
    log: pino({ level: 'warn' }, logs.stream),
    notify: async () => { throw new Error('refused for the test') },
    since: async (id, after) => {
      if (failRead) throw new Error('refused for the test')
      return await b.store.since(id, after)
    }
  })
  b.bus.requestAbort('t7')
  b.bus.publish('t7', { type: 'status', version: 1, task: record('t7', Date.now()).task, final: false })
  let task = record('t7', Date.now())
  await a.store.insert(task)
  await b.follow('t7')
  b.bus.subscribe('t7', () => { throw new Error('a listener that throws') })
  task = await write(a, task, { state: 'in_progress' })
  await until(() => logs.text().includes('task events not read'))
  failRead = false
  task = await write(a, task, { state: 'completed' })
  await until(() => b.heard.length > 0)
  t.same(b.heard, ['2 status in_progress', '3 status completed'], 'the next notice read what the refused read missed')
  await until(() => logs.text().includes('task event listener failed'))
  t.same(logs.lines().map(line => line.msg).filter((msg, i, all) => all.indexOf(msg) === i),
    ['task abort request not published', 'task event not published', 'task events not read', 'task event listener failed'])
})

t.test('what this instance wrote while a read was under way is not heard again from the read', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  let open = (): void => {}
  const gate = new Promise<void>(resolve => { open = resolve })
  let gated = 0
  const a = await instance(t, pool)
  const b = await instance(t, pool, { since: async (id, after) => { gated++; await gate; return await b.store.since(id, after) } })
  let task = record('t8', Date.now())
  await a.store.insert(task)
  await b.follow('t8')
  task = await write(a, task, { state: 'in_progress' })
  await until(() => gated === 1)
  // B takes the next turn itself while its read of A's write waits.
  task = await write(b, task, { state: 'completed' })
  open()
  await until(() => gated === 1 && b.heard.length === 1)
  await new Promise(resolve => setTimeout(resolve, 50))
  t.same(b.heard, ['3 status completed'], 'A\'s write, read after B\'s own, is older than what B\'s listeners have')
})

t.test('a bus that cannot listen at start keeps trying, and listens once it can; one closed at once lets its connection go', async t => {
  const pool = await migratedSchema(t, await databaseUrl)
  const url = await databaseUrl
  const logs = logCapture()
  let attempts = 0
  const bus = new PostgresTaskEventBus({
    // The first two connections open but cannot LISTEN (already ended).
    connect: async () => {
      const client = await connectOnce(url)
      if (++attempts <= 2) await client.end()
      return client
    },
    notify: async () => {},
    since: async () => null,
    log: pino({ level: 'info' }, logs.stream)
  })
  t.teardown(() => bus.close())
  await bus.start()
  await t.rejects(bus.subscribe('x', () => {}).ready, { code: 'A2A_ERR_STORAGE_UNAVAILABLE' }, 'not listening yet')
  await until(async () => await bus.subscribe('x', () => {}).ready.then(() => true, () => false))
  t.equal(attempts, 3)
  t.same(logs.lines().map(line => line.msg), ['postgres event listener not listening; retrying', 'postgres event listener back'])

  const closed = new PostgresTaskEventBus({ connect: async () => await connectOnce(url), notify: async () => {}, since: async () => null, log })
  await closed.close()
  await closed.start()
  await t.rejects(closed.subscribe('x', () => {}).ready, { code: 'A2A_ERR_STORAGE_UNAVAILABLE' })
  await until(async () => (await pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN a2a_events' AND state = 'idle'")).rowCount === 1)
  t.pass('only the first bus listens')
})
