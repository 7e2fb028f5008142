import pino from 'pino'
import t, { type Test } from 'tap'
import type { AgentExecutor } from '../../../services/agent/executor.js'
import { ANONYMOUS } from '../../../services/auth/principal.js'
import { StorageUnavailable } from '../../../services/kernel/errors.js'
import { MemoryTaskEventBus, type TaskEvent } from '../../../services/tasks/event-bus.js'
import { RedisTaskStore } from '../../../services/tasks/redis-store.js'
import type { InsertOptions, ReplaceOutcome, StoredTask } from '../../../services/tasks/store.js'
import { SHUTDOWN_MESSAGE, TaskService } from '../../../services/tasks/task-service.js'
import { logCapture, privateRedis, until } from '../../helper.js'

/**
 * The real Redis store, with faults in its answers: `refuse` writes fail before they reach Redis (as a full Redis
 * refuses them), `lose` writes land and then their answer is lost (as a command that timed out while Redis stalled).
 */
class FaultyStore extends RedisTaskStore {
  refuse = 0
  lose = 0
  /** Writes that lose their compare-and-set, as if another writer got there first. */
  conflict = 0
  /** Inserts wait for this before they go to Redis. */
  insertGate: Promise<void> | undefined

  override async insert (record: StoredTask, opts?: InsertOptions): Promise<void> {
    await this.insertGate
    return await super.insert(record, opts)
  }

  override async replace (next: StoredTask, event?: TaskEvent): Promise<ReplaceOutcome> {
    if (this.conflict > 0) {
      this.conflict--
      return false
    }
    if (this.refuse > 0) {
      this.refuse--
      throw new StorageUnavailable('redis replied OOM')
    }
    const written = await super.replace(next, event)
    if (this.lose > 0) {
      this.lose--
      throw new StorageUnavailable('redis command timed out')
    }
    return written
  }
}

async function harness (t: Test, executor: AgentExecutor, interruptedTtlMs?: number) {
  const redis = await privateRedis(t)
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const store = new FaultyStore(client, { keyPrefix: 's:', ttlSeconds: 60 })
  const bus = new MemoryTaskEventBus()
  const logs = logCapture()
  const service = new TaskService({ store, bus, executor, interruptedTtlMs, log: pino(logs.stream), toolsFor: () => ({ available: () => [], call: async () => ({}) }) })
  t.teardown(() => service.drain(0))
  const message = { kind: 'message' as const, role: 'user' as const, messageId: 'm1', parts: [{ kind: 'text' as const, text: 'go' }] }
  const start = async () => {
    const record = await service.create(message, ANONYMOUS)
    const events: TaskEvent[] = []
    bus.subscribe(record.task.id, event => { events.push(event) })
    service.dispatch(record, ANONYMOUS)
    return { id: record.task.id, events }
  }
  return { store, service, logs, start, client }
}

t.test('a shutdown while a new task\'s insert is on its way: the task is stored, then failed, its events in order', async t => {
  const { store, service } = await harness(t, () => new Promise<void>(() => {}))
  let open!: () => void
  store.insertGate = new Promise(resolve => { open = resolve })
  const message = { kind: 'message' as const, role: 'user' as const, messageId: 'm2', parts: [{ kind: 'text' as const, text: 'go' }] }
  const events: string[] = []
  let id = ''
  const started = service.start(message, ANONYMOUS, null, undefined, record => {
    id = record.task.id
    service.bus.subscribe(id, event => { events.push(event.task.status.state) })
  })
  t.equal(service.running, 1, 'its turn has begun (an executor that waits) before the task is stored')
  const drained = service.drain(0)
  open()
  t.equal((await started).version, 1)
  await drained
  const { task } = await service.get(id, ANONYMOUS)
  t.equal(task.status.state, 'failed', 'the shutdown\'s write waited for the insert')
  t.equal(task.status.message?.parts[0].kind === 'text' && task.status.message.parts[0].text, SHUTDOWN_MESSAGE)
  t.same(events, ['in_progress', 'failed'])
})

t.test('an update of a new task before it is stored applies to what is stored; one that changes nothing is no write', async t => {
  const { service } = await harness(t, () => 'answered at once')
  const message = { kind: 'message' as const, role: 'user' as const, messageId: 'm3', parts: [{ kind: 'text' as const, text: 'go' }] }
  const seen: Array<Promise<unknown> | unknown> = []
  const created = await service.start(message, ANONYMOUS, null, undefined, record => {
    seen.push(service.update(record.task.id, task => ({ ...task, metadata: { tagged: true } })))
    seen.push(service.update(record.task.id, () => null))
  })
  const [tagged, unchanged] = await Promise.all(seen) as StoredTask[]
  t.equal(tagged.version, 2)
  t.equal(unchanged, tagged, 'the task as the first update left it')
  const stored = await service.get(created.task.id, ANONYMOUS)
  t.same(stored.task.metadata, { tagged: true })
  t.equal(stored.task.status.state, 'completed')
  t.equal(stored.version, 5, 'the update, then in_progress, the artifact and completed, in one insert')
})

t.test('writes whose answers were lost after they landed are taken as done: nothing applied or published twice', async t => {
  const { store, service, start } = await harness(t, async function * () { yield 'result' })
  store.lose = 3
  const { id, events } = await start()
  await until(() => service.running === 0)
  const { task } = await service.get(id, ANONYMOUS)
  t.equal(task.status.state, 'completed')
  t.same(task.artifacts.map(a => a.parts), [[{ kind: 'text', text: 'result' }]], 'one artifact, one part')
  t.same(events.map(e => e.type === 'status' ? e.task.status.state : 'artifact'), ['in_progress', 'artifact', 'completed'],
    'each change published once')
  t.equal(store.lose, 0, 'all three writes lost their answer')
})

t.test('writes refused by the store are retried with backoff and logged, not blamed on the agent', async t => {
  const { store, service, logs, start } = await harness(t, async function * () { yield 'result' })
  store.refuse = 3
  const { id } = await start()
  await until(() => service.running === 0)
  t.equal((await service.get(id, ANONYMOUS)).task.status.state, 'completed')
  t.equal(logs.lines().filter(l => l.msg === 'task write refused by storage, will retry').length, 3)
  t.equal(logs.lines().filter(l => l.msg === 'agent executor failed').length, 0)
})

t.test('an executor event the state machine refuses still fails the task as the agent\'s error over Redis', async t => {
  const { service, logs, start } = await harness(t, async function * () {
    yield { kind: 'status', state: 'input_required' }
    // input_required may only go back to in_progress (or be canceled).
    yield { kind: 'status', state: 'completed' }
  })
  const { id } = await start()
  await until(() => service.running === 0)
  t.equal((await service.get(id, ANONYMOUS)).task.status.state, 'failed')
  t.match(logs.lines().filter(l => l.msg === 'agent executor failed'), [{ err: { code: 'A2A_ERR_ILLEGAL_TRANSITION' } }])
})

t.test('a write that loses its compare-and-set re-reads and applies again, in a run and from a request', async t => {
  const { store, service, start } = await harness(t, async function * () { yield 'result' })
  store.conflict = 2
  const { id } = await start()
  await until(() => service.running === 0)
  const done = await service.get(id, ANONYMOUS)
  t.equal(done.task.status.state, 'completed')
  store.conflict = 1
  const updated = await service.update(id, task => ({ ...task, metadata: { seen: true } }))
  t.same(updated.task.metadata, { seen: true })
  t.equal(updated.version, done.version + 1)
})

t.test('a task that vanishes from Redis while it runs ends its run with an error log', async t => {
  let go!: () => void
  const waiting = new Promise<void>(resolve => { go = resolve })
  const { service, logs, start, client } = await harness(t, async function * () {
    await waiting
    yield 'late'
  })
  const { id } = await start()
  await until(async () => (await service.get(id, ANONYMOUS)).task.status.state === 'in_progress')
  await client.del(`s:t:${id}`)
  go()
  await until(() => service.running === 0)
  t.match(logs.lines().filter(l => l.msg === 'task run failed'), [{ taskId: id, err: { code: 'A2A_ERR_TASK_NOT_FOUND' } }])
})

t.test('an interrupted task the store will not let be canceled is logged and handed out again later', async t => {
  const { store, service, logs, start, client } = await harness(t, async function * () { yield { kind: 'status', state: 'input_required' } }, 0)
  const { id } = await start()
  await until(async () => (await service.get(id, ANONYMOUS)).task.status.state === 'input_required')
  store.refuse = 1
  t.same(await service.expireInterrupted(), [])
  t.match(logs.lines().filter(l => l.msg === 'could not cancel an expired interrupted task'), [{ taskId: id }])
  await client.zadd('s:interrupted', 0, id)
  t.same(await service.expireInterrupted(), [id], 'canceled once the store takes the write')
  t.equal((await service.get(id, ANONYMOUS)).task.status.state, 'canceled')
})

t.test('a claimed interrupted task that vanished or moved on meanwhile is left alone', async t => {
  const { service, start, client } = await harness(t, async function * () { yield 'done' }, 0)
  const { id } = await start()
  await until(() => service.running === 0)
  await client.zadd('s:interrupted', 0, id, 0, 'vanished')
  t.same(await service.expireInterrupted(), [], 'a completed task is not canceled, a missing one is skipped')
  t.equal((await service.get(id, ANONYMOUS)).task.status.state, 'completed')
})

t.test('a new task whose insert is refused after its first turn ended: the send fails, nothing is stored or left running', async t => {
  const { store, service } = await harness(t, () => 'answered at once')
  let refuse: (err: Error) => void = () => {}
  store.insertGate = new Promise((_resolve, reject) => { refuse = reject })
  const message = { kind: 'message' as const, role: 'user' as const, messageId: 'm4', parts: [{ kind: 'text' as const, text: 'go' }] }
  let id = ''
  const started = Promise.resolve(service.start(message, ANONYMOUS, null, undefined, record => { id = record.task.id }))
  started.catch(() => {})
  // The turn is over before the store answers: the refusal finds no run to stop.
  await until(() => service.running === 0)
  refuse(new StorageUnavailable('redis replied OOM'))
  await t.rejects(started, { message: 'redis replied OOM' })
  await t.rejects(service.get(id, ANONYMOUS), { code: -32001 }, 'the task was never stored')
  t.equal(service.running, 0)
})
