import { randomUUID } from 'node:crypto'
import { pino } from 'pino'
import t from 'tap'
import type { Message, Task } from '../../../schemas/task.js'
import type { ExecutionContext } from '../../../services/agent/executor.js'
import { createPrincipal, type Principal } from '../../../services/auth/principal.js'
import { MemoryTaskEventBus } from '../../../services/tasks/event-bus.js'
import { MemoryTaskStore } from '../../../services/tasks/memory-store.js'
import { contextHistory, MAX_CONTEXT_PAGES, MAX_CONTEXT_TASKS } from '../../../services/tasks/context-history.js'
import { TaskService, type SettledTask } from '../../../services/tasks/task-service.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import type { Teardown } from '../../helper.js'

const alice = createPrincipal('alice', 'api_key', [], {})
const bob = createPrincipal('bob', 'api_key', [], {})

function userMessage (text: string, contextId?: string): Message {
  return { role: 'user', messageId: randomUUID(), parts: [{ kind: 'text', text }], ...(contextId === undefined ? {} : { contextId }) }
}

const words = (tasks: Task[]) => tasks.map(task => (task.history[0].parts[0] as { text: string }).text)

t.test('an executor sees the earlier tasks of its contextId and owner, oldest first', async t => {
  const seen = new Map<string, Task[]>()
  let ms = 0
  const store = new MemoryTaskStore({ maxTasks: 1000, ttlSeconds: 3600, now: () => 0 })
  const bus = new MemoryTaskEventBus()
  const service = new TaskService({
    store,
    bus,
    log: pino({ level: 'silent' }),
    toolsFor: () => ({ available: () => [], call: async () => ({}) }),
    now: () => ms++,
    executor: async (ctx: ExecutionContext) => {
      seen.set((ctx.message.parts[0] as { text: string }).text, await (ctx.contextHistory as () => Promise<Task[]>)())
    }
  })
  t.teardown(async () => {
    await service.drain(0)
    await store.close()
    await bus.close()
  })
  const send = async (text: string, principal: Principal, contextId?: string): Promise<SettledTask> => {
    const created = await service.create(userMessage(text, contextId), principal)
    service.dispatch(created, principal)
    return service.waitSettled(created, 10_000)
  }
  const first = await send('one', alice)
  const contextId = first.task.contextId
  await send('elsewhere', alice)
  await send('two', alice, contextId)
  await send('bob', bob, contextId)
  await send('three', alice, contextId)
  t.same(words(seen.get('one') as Task[]), [])
  t.same(words(seen.get('two') as Task[]), ['one'])
  t.same(words(seen.get('three') as Task[]), ['one', 'two'], 'other contexts and other owners are left out')
  t.same(words(seen.get('bob') as Task[]), [])
  t.equal((seen.get('three') as Task[])[1].status.state, 'completed')
})

async function fill (t: Teardown, count: number): Promise<{ store: MemoryTaskStore, records: StoredTask[] }> {
  const store = new MemoryTaskStore({ maxTasks: 10_000, ttlSeconds: 3600, now: () => 0 })
  t.teardown(() => store.close())
  const records: StoredTask[] = []
  for (let i = 0; i < count; i++) {
    const id = randomUUID()
    const task: Task = {
      id, contextId: 'c', kind: 'task', status: { state: 'completed', timestamp: '' }, artifacts: [], history: [userMessage(`m${i}`)], metadata: null
    }
    const record: StoredTask = { task, owner: 'alice', version: 1, createdAt: i, updatedAt: i }
    await store.insert(record)
    records.push(record)
  }
  return { store, records }
}

t.test('contextHistory keeps the newest `limit` tasks, limit clamped to 1..MAX_CONTEXT_TASKS', async t => {
  const { store, records } = await fill(t, MAX_CONTEXT_TASKS + 3)
  const last = records[records.length - 1]
  t.same(words(await contextHistory(store, last, 2)), [`m${MAX_CONTEXT_TASKS}`, `m${MAX_CONTEXT_TASKS + 1}`])
  t.same(words(await contextHistory(store, last, 0)), [`m${MAX_CONTEXT_TASKS + 1}`])
  t.equal((await contextHistory(store, last, 1000)).length, MAX_CONTEXT_TASKS)
  t.equal((await contextHistory(store, last)).length, 20)
  // Tasks created after the one asking (an old task resumed) are not its history.
  t.same(words(await contextHistory(store, records[1], 5)), ['m0'])
})

t.test('contextHistory looks through at most MAX_CONTEXT_PAGES pages of newer tasks', async t => {
  // Newest first, the pages hold m500..m401, ..., m100..m1: m0 is past the look.
  const { store, records } = await fill(t, MAX_CONTEXT_PAGES * MAX_CONTEXT_TASKS + 1)
  t.same(words(await contextHistory(store, records[2], 5)), ['m1'])
  t.same(words(await contextHistory(store, records[1], 5)), [])
})
