import { randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import { setImmediate as tick } from 'node:timers/promises'
import { pino, type Logger } from 'pino'
import t, { type Test } from 'tap'
import type { Message, Task } from '../../../schemas/task.js'
import type { AgentExecutor, AgentTools, ExecutionContext, ExecutorEvent } from '../../../services/agent/executor.js'
import { ANONYMOUS, createPrincipal, type Principal } from '../../../services/auth/principal.js'
import { RpcCode } from '../../../services/kernel/errors.js'
import { MemoryTaskEventBus, type TaskEvent } from '../../../services/tasks/event-bus.js'
import { MemoryTaskStore } from '../../../services/tasks/memory-store.js'
import { FAILED_MESSAGE, SHUTDOWN_MESSAGE, TaskService, type SettledTask } from '../../../services/tasks/task-service.js'
import type { StoredTask } from '../../../services/tasks/store.js'

const alice = createPrincipal('alice', 'api_key', ['api:read'], {})
const bob = createPrincipal('bob', 'api_key', ['api:read'], {})
const admin = createPrincipal('ops', 'bearer', ['admin'], {})

/** Long enough never to be reached: waits here end when the task settles, not when this passes. */
const SETTLE_MS = 10_000
const T0 = Date.UTC(2025, 0, 1)

const tools: AgentTools = {
  available: () => [],
  call: async () => ({})
}

interface Harness {
  service: TaskService
  store: MemoryTaskStore
  bus: MemoryTaskEventBus
}

interface HarnessOptions {
  store?: MemoryTaskStore
  log?: Logger
  toolsFor?: (principal: Principal) => AgentTools
}

/** The stores' clock: it stands still at T0, so no task expires unless a test says so. */
const storeNow = () => T0

/** A service over memory backends, with a clock that ticks one ms per reading. */
function harness (t: Test, executor: AgentExecutor, opts: HarnessOptions = {}): Harness {
  let ms = T0
  const store = opts.store ?? new MemoryTaskStore({ maxTasks: 1000, ttlSeconds: 3600, now: storeNow })
  const bus = new MemoryTaskEventBus()
  const service = new TaskService({
    store,
    bus,
    executor,
    log: opts.log ?? pino({ level: 'silent' }),
    toolsFor: opts.toolsFor ?? (() => tools),
    now: () => ms++
  })
  t.teardown(async () => {
    await service.drain(0)
    await store.close()
    await bus.close()
  })
  return { service, store, bus }
}

function userMessage (text: string, extra: Partial<Message> = {}): Message {
  return { role: 'user', messageId: randomUUID(), parts: [{ kind: 'text', text }], ...extra }
}

function textOf (message: Message | null | undefined): string {
  return (message?.parts ?? []).map(p => p.kind === 'text' ? p.text : '').join('')
}

function texts (task: Task): string[][] {
  return task.artifacts.map(a => a.parts.map(p => p.kind === 'text' ? p.text : p.kind))
}

/** Creates a task, starts it and waits until it settles. */
async function send (service: TaskService, message: Message, principal: Principal = alice): Promise<SettledTask> {
  const created = await service.create(message, principal)
  service.dispatch(created, principal)
  return service.waitSettled(created, SETTLE_MS)
}

/** A promise and its resolve function: a gate an executor waits on. */
function gate<T = void> (): { promise: Promise<T>, open: (value: T) => void } {
  let open!: (value: T) => void
  const promise = new Promise<T>(resolve => { open = resolve })
  return { promise, open }
}

/** Waits until no executor runs in the service; each pass lets the pending promise chains move on. */
async function idle (service: TaskService): Promise<void> {
  while (service.running > 0) await tick()
}

function aborted (signal: AbortSignal): Promise<void> {
  return new Promise(resolve => signal.addEventListener('abort', () => resolve(), { once: true }))
}

function capture (): { log: Logger, lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = []
  const stream = new Writable({
    write (chunk, _enc, cb) {
      chunks.push(String(chunk))
      cb()
    }
  })
  return {
    log: pino({ level: 'debug' }, stream),
    lines: () => chunks.join('').split('\n').filter(Boolean).map(l => JSON.parse(l))
  }
}

t.test('create stores a submitted task whose history carries the task and context ids', async t => {
  const { service, store } = harness(t, async () => {})
  const message = userMessage('hi', { metadata: { a: 1 } })
  const record = await service.create(message, alice, { source: 'test' })
  t.match(record, { owner: 'alice', version: 1, createdAt: T0, updatedAt: T0 })
  const { task } = record
  t.match(task.id, /^[0-9a-f-]{36}$/)
  t.match(task.contextId, /^[0-9a-f-]{36}$/)
  t.same(task.status, { state: 'submitted', timestamp: new Date(T0).toISOString() })
  t.same(task.artifacts, [])
  t.same(task.metadata, { source: 'test' })
  t.same(task.history, [{ ...message, kind: 'message', taskId: task.id, contextId: task.contextId }])
  t.equal(await store.get(task.id), record)
  t.equal(service.running, 0)

  const other = await service.create(userMessage('again'), alice)
  t.equal(other.task.metadata, null)
  t.ok(other.task.contextId !== task.contextId, 'each task without a contextId gets a new one')
})

t.test('without an injected clock, times come from the system clock', async t => {
  const store = new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 60 })
  t.teardown(() => store.close())
  const service = new TaskService({
    store, bus: new MemoryTaskEventBus(), executor: async () => {}, log: pino({ level: 'silent' }), toolsFor: () => tools
  })
  const before = Date.now()
  const record = await service.create(userMessage('x'), alice)
  const after = Date.now()
  t.ok(record.createdAt >= before && record.createdAt <= after)
  t.equal(record.task.status.timestamp, new Date(record.createdAt).toISOString())
})

t.test('create reuses the contextId the message carries', async t => {
  const { service } = harness(t, async () => {})
  const record = await service.create(userMessage('hi', { contextId: 'ctx-1' }), alice)
  t.equal(record.task.contextId, 'ctx-1')
  t.equal(record.task.history[0].contextId, 'ctx-1')
})

t.test('strings from an executor build one Agent-result artifact, appended chunk by chunk', async t => {
  const seen: ExecutionContext[] = []
  const { service } = harness(t, async function * (ctx) {
    seen.push(ctx)
    yield 'Hello'
    yield ', world'
  })
  const done = await send(service, userMessage('hi'))
  t.equal(done.task.status.state, 'completed')
  t.equal(done.task.artifacts.length, 1)
  t.match(done.task.artifacts[0], { name: 'Agent-result', artifactId: /^[0-9a-f-]{36}$/ })
  t.same(texts(done.task), [['Hello', ', world']])
  t.equal(seen.length, 1)
  t.equal(seen[0].task.status.state, 'in_progress')
  t.equal(seen[0].message, seen[0].task.history[0])
  t.equal(seen[0].principal, alice)
  t.equal(seen[0].tools, tools)
  t.equal(seen[0].signal.aborted, false)
  t.equal(service.running, 0)
})

t.test('each turn gets its own Agent-result artifact', async t => {
  const { service } = harness(t, async function * (ctx) {
    yield `answer to ${textOf(ctx.message)}`
    if (textOf(ctx.message) === 'one') yield { kind: 'status', state: 'input_required' }
  })
  const first = await send(service, userMessage('one'))
  t.equal(first.task.status.state, 'input_required')
  const joined = await service.join(first.task.id, userMessage('two'), alice)
  const done = await service.waitSettled(joined, SETTLE_MS)
  t.equal(done.task.status.state, 'completed')
  t.same(texts(done.task), [['answer to one'], ['answer to two']])
  t.ok(done.task.artifacts[0].artifactId !== done.task.artifacts[1].artifactId)
})

/** A store across the network: no synchronous view, so every read and write is a promise. */
class PromiseStore extends MemoryTaskStore {
  override get sync (): undefined {
    return undefined
  }
}

t.test('an executor may return a string, an event, an array or nothing, at once or through a promise', async t => {
  type Result = Awaited<ReturnType<AgentExecutor>>
  const cases: Array<[string, () => Result, (task: Task) => void]> = [
    ['a string', () => 'done', task => t.same(texts(task), [['done']])],
    ['an event', () => ({ kind: 'artifact', name: 'out', parts: [{ kind: 'data', data: { n: 1 } }] }), task => {
      t.match(task.artifacts, [{ name: 'out', parts: [{ kind: 'data', data: { n: 1 } }] }])
    }],
    ['an array', () => ['a', { kind: 'message', content: 'note' }, 'b'], task => {
      t.same(texts(task), [['a', 'b']])
      t.match(task.history[1], { role: 'agent', parts: [{ kind: 'text', text: 'note' }], taskId: task.id })
    }],
    ['nothing', () => undefined, task => t.same(task.artifacts, [])],
    ['an array that ends the task early', () => ['a', { kind: 'status', state: 'completed' }, 'never'], task => {
      t.same(texts(task), [['a']])
    }]
  ]
  const stores: Array<[string, () => MemoryTaskStore]> = [
    ['a store in this process', () => new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow })],
    ['a store that answers through promises', () => new PromiseStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow })]
  ]
  for (const [storeName, makeStore] of stores) {
    for (const [name, result, check] of cases) {
      for (const [how, executor] of [['at once', result], ['through a promise', async () => result()]] as Array<[string, AgentExecutor]>) {
        await t.test(`returning ${name} ${how}, with ${storeName}`, async t => {
          const { service, bus } = harness(t, executor, { store: makeStore() })
          const created = await service.create(userMessage('x'), alice)
          const versions: number[] = []
          bus.subscribe(created.task.id, event => versions.push(event.version))
          service.dispatch(created, alice)
          const done = await service.waitSettled(created, SETTLE_MS)
          t.equal(done.task.status.state, 'completed')
          check(done.task)
          // A history-only write (an agent message) publishes nothing: versions may skip, never repeat or go back.
          t.ok(versions.every((v, i) => i === 0 || v > versions[i - 1]), 'events in version order, each once')
          t.equal(versions.at(-1), done.version, 'the last event is the settled task')
        })
      }
    }
  }
})

t.test('an executor that answers at once, over a store in this process, finishes before dispatch returns', async t => {
  const { service, store } = harness(t, () => 'done')
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  t.equal(service.running, 0)
  t.equal(store.getNow(created.task.id)?.task.status.state, 'completed')
  t.equal((await service.waitSettled(created, SETTLE_MS)).task.status.state, 'completed')
})

t.test('an executor that throws at once, or answers with a bad event, fails the task with either store', async t => {
  const executors: Array<[string, AgentExecutor]> = [
    ['throws at once', () => { throw new Error('boom') }],
    ['answers an event of an unknown kind at once', () => [{ kind: 'bogus' } as unknown as ExecutorEvent]],
    ['answers an illegal transition through a promise', async () => ['a', { kind: 'status', state: 'in_progress' }, { kind: 'status', state: 'completed' }, { kind: 'status', state: 'input_required' }]]
  ]
  for (const [storeName, PromiseOrNot] of [['in this process', MemoryTaskStore], ['through promises', PromiseStore]] as const) {
    for (const [name, executor] of executors) {
      await t.test(`an executor that ${name}, with a store ${storeName}`, async t => {
        const { service } = harness(t, executor, { store: new PromiseOrNot({ maxTasks: 10, ttlSeconds: 60, now: storeNow }) })
        const done = await send(service, userMessage('x'))
        if (name.startsWith('answers an illegal')) {
          // The events before the refused one stand; the task had completed, and stays so.
          t.equal(done.task.status.state, 'completed')
          t.same(texts(done.task), [['a']])
        } else {
          t.equal(done.task.status.state, 'failed')
          t.equal(textOf(done.task.status.message), FAILED_MESSAGE)
        }
      })
    }
  }
})

t.test('input_required waits for the client, and a joined message resumes the task', async t => {
  const calls: Array<{ text: string, state: string, history: number, signal: AbortSignal }> = []
  const { service } = harness(t, async function * (ctx) {
    calls.push({ text: textOf(ctx.message), state: ctx.task.status.state, history: ctx.task.history.length, signal: ctx.signal })
    if (calls.length === 1) {
      yield { kind: 'status', state: 'input_required', message: 'Which colour?' }
      return
    }
    yield `You chose ${textOf(ctx.message)}`
  })
  const asked = await send(service, userMessage('paint it'))
  t.equal(asked.task.status.state, 'input_required')
  t.match(asked.task.status.message, { role: 'agent', kind: 'message', taskId: asked.task.id, contextId: asked.task.contextId })
  t.equal(textOf(asked.task.status.message), 'Which colour?')
  await idle(service)
  t.equal(service.running, 0, 'nothing runs while the task waits for input')

  const joined = await service.join(asked.task.id, userMessage('blue', { contextId: asked.task.contextId }), alice)
  t.equal(joined.task.history.length, 2)
  t.match(joined.task.history[1], { role: 'user', taskId: asked.task.id, contextId: asked.task.contextId })
  const done = await service.waitSettled(joined, SETTLE_MS)
  t.equal(done.task.status.state, 'completed')
  t.same(texts(done.task), [['You chose blue']])
  t.same(calls.map(c => [c.text, c.state, c.history]), [['paint it', 'in_progress', 1], ['blue', 'in_progress', 2]])
  t.ok(calls[0].signal !== calls[1].signal, 'the resumed task runs in a new run')
})

t.test('auth_required also waits for the client', async t => {
  const { service } = harness(t, async () => ({ kind: 'status', state: 'auth_required' }))
  const done = await send(service, userMessage('x'))
  t.equal(done.task.status.state, 'auth_required')
  t.equal(done.task.status.message, undefined)
})

t.test('an executor may reject the task, or fail it with its own message', async t => {
  const rejecting = harness(t, async function * () {
    yield { kind: 'status', state: 'rejected', message: 'I will not do that.' }
    yield 'never written'
  })
  const rejected = await send(rejecting.service, userMessage('x'))
  t.equal(rejected.task.status.state, 'rejected')
  t.equal(textOf(rejected.task.status.message), 'I will not do that.')
  t.same(rejected.task.artifacts, [])

  const failing = harness(t, async () => ({ kind: 'status', state: 'failed', message: [{ kind: 'text', text: 'no disk' }] }))
  const failed = await send(failing.service, userMessage('x'))
  t.equal(failed.task.status.state, 'failed')
  t.equal(textOf(failed.task.status.message), 'no disk')
})

t.test('a status with the current state updates the status message only', async t => {
  const listener: string[] = []
  const { service, bus } = harness(t, async function * () {
    yield { kind: 'status', state: 'in_progress', message: 'halfway' }
    yield { kind: 'status', state: 'in_progress' }
  })
  const created = await service.create(userMessage('x'), alice)
  const events: TaskEvent[] = []
  bus.subscribe(created.task.id, e => events.push(e))
  service.onStatusChange((r, previous) => listener.push(`${previous}>${r.task.status.state}`))
  service.dispatch(created, alice)
  const done = await service.waitSettled(created, SETTLE_MS)
  t.equal(done.task.status.state, 'completed')
  const statuses = events.filter(e => e.type === 'status').map(e => [e.task.status.state, textOf(e.task.status.message)])
  t.same(statuses, [['in_progress', ''], ['in_progress', 'halfway'], ['in_progress', ''], ['completed', '']])
  t.same(listener, ['submitted>in_progress', 'in_progress>completed'], 'status listeners only see state changes')
})

t.test('an agent message is appended to the history, with its metadata', async t => {
  const { service } = harness(t, async () => [
    { kind: 'message', content: 'plain' },
    { kind: 'message', content: [{ kind: 'data', data: { k: 'v' } }], metadata: { step: 2 } }
  ])
  const done = await send(service, userMessage('x'))
  t.equal(done.task.history.length, 3)
  t.equal(done.task.history[1].metadata, undefined)
  t.match(done.task.history[2], { role: 'agent', parts: [{ kind: 'data', data: { k: 'v' } }], metadata: { step: 2 } })
})

t.test('an illegal transition from an executor fails the task', async t => {
  const { log, lines } = capture()
  const { service } = harness(t, async function * () {
    yield { kind: 'status', state: 'input_required' }
    yield { kind: 'status', state: 'completed' }
  }, { log })
  const asked = await send(service, userMessage('x'))
  t.equal(asked.task.status.state, 'input_required')
  const done = await service.waitSettled(asked, SETTLE_MS)
  t.equal(done.task.status.state, 'failed')
  t.equal(textOf(done.task.status.message), FAILED_MESSAGE)
  t.match(lines().find(l => l.msg === 'agent executor failed'), {
    taskId: done.task.id, err: { code: 'A2A_ERR_ILLEGAL_TRANSITION' }
  })
})

t.test('an event of an unknown kind fails the task', async t => {
  const { service } = harness(t, async () => ({ kind: 'bogus' } as never))
  const done = await send(service, userMessage('x'))
  t.equal(done.task.status.state, 'failed')
  t.equal(textOf(done.task.status.message), FAILED_MESSAGE)
})

t.test('an executor exception fails the task; its text is logged with the task id, never stored', async t => {
  for (const [name, executor] of [
    ['a generator', async function * () {
      yield 'partial'
      throw new Error('secret detail 42')
    }],
    ['an async function', async () => { throw new Error('secret detail 42') }],
    ['a function that throws at once', () => { throw new Error('secret detail 42') }]
  ] as Array<[string, AgentExecutor]>) {
    await t.test(name, async t => {
      const { log, lines } = capture()
      const { service } = harness(t, executor, { log })
      const done = await send(service, userMessage('x'))
      t.equal(done.task.status.state, 'failed')
      t.match(done.task.status.message, { role: 'agent', parts: [{ kind: 'text', text: FAILED_MESSAGE }] })
      t.equal(JSON.stringify(done).includes('secret detail'), false)
      t.match(lines().find(l => l.msg === 'agent executor failed'), {
        level: 50, taskId: done.task.id, err: { message: 'secret detail 42' }
      })
      t.equal(service.running, 0)
    })
  }
})

t.test('cancel moves the task to canceled and aborts the executor', async t => {
  const started = gate<AbortSignal>()
  const { service } = harness(t, async function * (ctx) {
    yield 'started'
    started.open(ctx.signal)
    await aborted(ctx.signal)
    yield 'after the cancel'
  })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  const signal = await started.promise
  t.equal(service.running, 1)
  const canceled = await service.cancel(created.task.id, alice)
  t.equal(canceled.task.status.state, 'canceled')
  t.equal(signal.aborted, true)
  await idle(service)
  const after = await service.get(created.task.id, alice)
  t.equal(after.task.status.state, 'canceled')
  t.same(texts(after.task), [['started']], 'nothing the executor yields after the cancel is written')
  t.equal(service.running, 0)

  await t.rejects(service.cancel(created.task.id, alice), {
    code: RpcCode.taskNotCancelable, data: `task "${created.task.id}" is canceled`
  })
  await t.rejects(service.cancel('no-such-task', alice), { code: RpcCode.taskNotFound, data: /no-such-task/ })
})

t.test('an executor that throws or returns once aborted leaves the task canceled', async t => {
  for (const [name, executor] of [
    ['throws', async (signal: AbortSignal) => {
      await aborted(signal)
      throw new Error('aborted')
    }],
    ['returns events', async (signal: AbortSignal) => {
      await aborted(signal)
      return ['late']
    }]
  ] as Array<[string, (signal: AbortSignal) => ReturnType<AgentExecutor>]>) {
    await t.test(name, async t => {
      const { log, lines } = capture()
      const started = gate()
      const { service } = harness(t, ctx => {
        started.open()
        return executor(ctx.signal)
      }, { log })
      const created = await service.create(userMessage('x'), alice)
      service.dispatch(created, alice)
      await started.promise
      await service.cancel(created.task.id, alice)
      await idle(service)
      const after = await service.get(created.task.id, alice)
      t.equal(after.task.status.state, 'canceled')
      t.same(after.task.artifacts, [])
      t.equal(lines().filter(l => (l.level as number) >= 50).length, 0, 'a canceled executor is no failure')
    })
  }
})

t.test('a task canceled before it starts never reaches the executor', async t => {
  let calls = 0
  const { service } = harness(t, async () => { calls++ })
  const created = await service.create(userMessage('x'), alice)
  await service.cancel(created.task.id, alice)
  service.dispatch(created, alice)
  await idle(service)
  t.equal(calls, 0)
  t.equal((await service.get(created.task.id, alice)).task.status.state, 'canceled')
})

t.test('another principal cannot see, cancel or join a task; an admin can', async t => {
  const { service } = harness(t, async function * () { yield { kind: 'status', state: 'input_required' } })
  const record = await send(service, userMessage('x'))
  const id = record.task.id
  await t.rejects(service.get(id, bob), { code: RpcCode.taskNotFound, data: `task "${id}" was not found` })
  await t.rejects(service.cancel(id, bob), { code: RpcCode.taskNotFound })
  await t.rejects(service.join(id, userMessage('y'), bob), { code: RpcCode.taskNotFound })
  t.equal((await service.get(id, admin)).task.id, id)
  t.equal((await service.get(id, ANONYMOUS)).task.id, id, 'the anonymous principal of security off holds every scope')
  t.same((await service.list({ pageSize: 10 }, alice)).tasks.map(r => r.task.id), [id])
  t.same((await service.list({ pageSize: 10 }, bob)).tasks, [])
  t.equal((await service.cancel(id, admin)).task.status.state, 'canceled')
})

t.test('join refuses an unknown task, a terminal task and another context', async t => {
  const { service } = harness(t, async function * (ctx) {
    if (textOf(ctx.message) === 'ask') yield { kind: 'status', state: 'input_required' }
  })
  await t.rejects(service.join('nope', userMessage('x'), alice), { code: RpcCode.taskNotFound })

  const done = await send(service, userMessage('x'))
  t.equal(done.task.status.state, 'completed')
  await t.rejects(service.join(done.task.id, userMessage('more'), alice), {
    code: RpcCode.invalidParams, data: `params.message.taskId: task "${done.task.id}" is completed and takes no more messages`
  })

  const waiting = await send(service, userMessage('ask'))
  await t.rejects(service.join(waiting.task.id, userMessage('y', { contextId: 'elsewhere' }), alice), {
    code: RpcCode.invalidParams, data: 'params.message.contextId: does not match the task\'s contextId'
  })
  const unchanged = await service.get(waiting.task.id, alice)
  t.equal(unchanged.task.history.length, 1)
  t.equal(unchanged.task.status.state, 'input_required')
})

t.test('a message joined while a run is in progress is answered in the same run', async t => {
  const first = gate()
  const started = gate()
  const calls: Array<{ text: string, signal: AbortSignal }> = []
  const { service } = harness(t, async function * (ctx) {
    calls.push({ text: textOf(ctx.message), signal: ctx.signal })
    if (calls.length === 1) {
      started.open()
      await first.promise
    }
    yield { kind: 'artifact', name: 'Agent-result', parts: [{ kind: 'text', text: `answer: ${textOf(ctx.message)}` }] }
  })
  const created = await service.create(userMessage('one'), alice)
  service.dispatch(created, alice)
  await started.promise
  const joined = await service.join(created.task.id, userMessage('two'), alice)
  t.equal(joined.task.status.state, 'in_progress')
  first.open()
  const done = await service.waitSettled(joined, SETTLE_MS)
  t.equal(done.task.status.state, 'completed')
  t.same(texts(done.task), [['answer: one'], ['answer: two']])
  t.same(calls.map(c => c.text), ['one', 'two'])
  t.equal(calls[0].signal, calls[1].signal, 'both messages were handled by one run')
  t.equal(done.task.history.length, 2)
})

t.test('a message joined to a canceled task whose executor still runs is refused and dropped', async t => {
  const started = gate()
  const release = gate()
  let calls = 0
  const { service } = harness(t, async () => {
    calls++
    started.open()
    await release.promise
  })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  await started.promise
  await service.cancel(created.task.id, alice)
  t.equal(service.running, 1, 'the executor ignores the abort and runs on')
  await t.rejects(service.join(created.task.id, userMessage('y'), alice), { code: RpcCode.invalidParams })
  release.open()
  await idle(service)
  t.equal(calls, 1)
  t.equal((await service.get(created.task.id, alice)).task.history.length, 1)
})

t.test('dispatching a task that is already running queues its last message behind the current one', async t => {
  const started = gate()
  const release = gate()
  const calls: AbortSignal[] = []
  const { service } = harness(t, async ctx => {
    calls.push(ctx.signal)
    started.open()
    await release.promise
    return `answer ${calls.length}`
  })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  await started.promise
  service.dispatch(created, alice)
  release.open()
  await idle(service)
  const done = await service.get(created.task.id, alice)
  t.equal(done.task.status.state, 'completed')
  t.same(texts(done.task), [['answer 1'], ['answer 2']])
  t.equal(calls.length, 2)
  t.equal(calls[0], calls[1], 'one run handled both')
})

t.test('waitSettled returns a task that settled before the wait began, with either store', async t => {
  for (const store of [new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow }), new PromiseStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow })]) {
    const { service } = harness(t, async () => 'quick', { store })
    const created = await service.create(userMessage('x'), alice)
    service.dispatch(created, alice)
    await idle(service)
    const done = await service.waitSettled(created, SETTLE_MS)
    t.equal(done.task.status.state, 'completed')
  }
})

t.test('waitSettled returns the task as it stands when the timeout passes', async t => {
  const { log, lines } = capture()
  const { service } = harness(t, async (ctx) => { await aborted(ctx.signal) }, { log })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  const current = await service.waitSettled(created, 5)
  t.match(current.task.status.state, /^(submitted|in_progress)$/)
  t.match(lines().find(l => l.msg === 'blocking wait timed out'), { taskId: created.task.id })
  await service.cancel(created.task.id, alice)
  await idle(service)
  t.equal(service.running, 0)
})

t.test('waitSettled survives a store that fails its first read', async t => {
  class FlakyStore extends MemoryTaskStore {
    failNext = false
    override async get (id: string): Promise<StoredTask | null> {
      if (this.failNext) {
        this.failNext = false
        throw new Error('store down')
      }
      return super.get(id)
    }
  }
  const store = new FlakyStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow })
  const started = gate()
  const release = gate()
  const { service } = harness(t, async () => {
    started.open()
    await release.promise
    return 'ok'
  }, { store })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  await started.promise
  store.failNext = true
  const waiting = service.waitSettled(created, SETTLE_MS)
  release.open()
  t.equal((await waiting).task.status.state, 'completed')
})

t.test('drain fails the tasks still running at the deadline, then aborts them', async t => {
  const started = gate<AbortSignal>()
  const { service } = harness(t, async function * (ctx) {
    yield 'partial'
    started.open(ctx.signal)
    await aborted(ctx.signal)
  })
  const statuses: string[] = []
  service.onStatusChange((r, previous) => statuses.push(`${previous}>${r.task.status.state}`))
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  const signal = await started.promise
  await service.drain(5)
  t.equal(signal.aborted, true)
  const after = await service.get(created.task.id, alice)
  t.equal(after.task.status.state, 'failed')
  t.match(after.task.status.message, { role: 'agent', parts: [{ kind: 'text', text: SHUTDOWN_MESSAGE }] })
  t.same(texts(after.task), [['partial']])
  t.same(statuses, ['submitted>in_progress', 'in_progress>failed'])
  await idle(service)
  t.equal(service.running, 0)
})

t.test('every drain call shares the first one', async t => {
  const release = gate()
  const { service } = harness(t, async () => { await release.promise })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  const first = service.drain(SETTLE_MS)
  const second = service.drain(0)
  t.equal(second, first)
  release.open()
  await second
  t.equal((await service.get(created.task.id, alice)).task.status.state, 'completed', 'the later, shorter deadline is not used')
})

t.test('drain waits for runs that finish in time and fails nothing', async t => {
  const release = gate()
  const { service } = harness(t, async () => {
    await release.promise
    return 'finished'
  })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  const draining = service.drain(SETTLE_MS)
  release.open()
  await draining
  const after = await service.get(created.task.id, alice)
  t.equal(after.task.status.state, 'completed')
  t.same(texts(after.task), [['finished']])
})

t.test('drain leaves a task that is already terminal as it is', async t => {
  const started = gate()
  const release = gate()
  const { service } = harness(t, async () => {
    started.open()
    await release.promise
  })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  await started.promise
  await service.cancel(created.task.id, alice)
  await service.drain(0)
  t.equal((await service.get(created.task.id, alice)).task.status.state, 'canceled')
  release.open()
})

t.test('drain logs a task it cannot fail, and goes on', async t => {
  let now = T0
  const store = new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 1, now: () => now })
  const { log, lines } = capture()
  const started = gate()
  const release = gate()
  const { service } = harness(t, async () => {
    started.open()
    await release.promise
  }, { store, log })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  await started.promise
  await service.cancel(created.task.id, alice)
  // The canceled task expires while its executor, which ignores the abort, still runs.
  now += 60_000
  await service.drain(0)
  t.match(lines().find(l => l.msg === 'could not fail a task at shutdown'), {
    level: 50, taskId: created.task.id, err: { code: 'A2A_ERR_TASK_NOT_FOUND' }
  })
  release.open()
})

t.test('status listeners see every state change once, with the previous state', async t => {
  const { service } = harness(t, async function * (ctx) {
    if (textOf(ctx.message) === 'first') yield { kind: 'status', state: 'input_required', message: 'more?' }
    else yield 'thanks'
  })
  const changes: Array<[string, string, number]> = []
  service.onStatusChange((record, previous) => changes.push([previous, record.task.status.state, record.version]))
  const second: string[] = []
  service.onStatusChange(record => second.push(record.task.status.state))
  const waiting = await send(service, userMessage('first'))
  await service.waitSettled(await service.join(waiting.task.id, userMessage('second'), alice), SETTLE_MS)
  t.same(changes.map(([from, to]) => `${from}>${to}`), [
    'submitted>in_progress', 'in_progress>input_required', 'input_required>in_progress', 'in_progress>completed'
  ])
  const versions = changes.map(c => c[2])
  t.same(versions, [...versions].sort((a, b) => a - b))
  t.same(second, ['in_progress', 'input_required', 'in_progress', 'completed'])
})

t.test('the bus receives status and artifact events in version order, with append and lastChunk', async t => {
  const { service, bus } = harness(t, async function * () {
    yield 'a'
    yield 'b'
    yield { kind: 'artifact', artifactId: 'stream', parts: [{ kind: 'text', text: '1' }], lastChunk: false }
    yield { kind: 'artifact', artifactId: 'stream', append: true, parts: [{ kind: 'text', text: '2' }], lastChunk: true }
    yield {
      kind: 'artifact', artifactId: 'doc', name: 'Doc', description: 'a doc', metadata: { v: 1 }, parts: [{ kind: 'text', text: 'v1' }]
    }
    // The same id without append replaces the artifact; append to an unknown id creates one.
    yield { kind: 'artifact', artifactId: 'doc', name: 'Doc', parts: [{ kind: 'text', text: 'v2' }] }
    yield { kind: 'artifact', artifactId: 'doc', append: true, parts: [{ kind: 'text', text: '+' }] }
    yield { kind: 'artifact', artifactId: 'fresh', append: true, parts: [{ kind: 'text', text: 'new' }] }
  })
  const created = await service.create(userMessage('x'), alice)
  const events: TaskEvent[] = []
  bus.subscribe(created.task.id, e => events.push(e))
  service.dispatch(created, alice)
  const done = await service.waitSettled(created, SETTLE_MS)

  t.same(events.map(e => e.version), Array.from({ length: events.length }, (_, i) => i + 2))
  t.equal(events[events.length - 1].task, done.task)
  const summary = events.map(e => e.type === 'status'
    ? ['status', e.task.status.state, e.final]
    : ['artifact', e.artifact.artifactId === done.task.artifacts[0].artifactId ? 'result' : e.artifact.artifactId,
        e.artifact.name ?? null, e.artifact.parts.map(p => p.kind === 'text' ? p.text : ''), e.append, e.lastChunk])
  t.same(summary, [
    ['status', 'in_progress', false],
    ['artifact', 'result', 'Agent-result', ['a'], false, true],
    ['artifact', 'result', 'Agent-result', ['b'], true, true],
    ['artifact', 'stream', null, ['1'], false, false],
    ['artifact', 'stream', null, ['2'], true, true],
    ['artifact', 'doc', 'Doc', ['v1'], false, true],
    ['artifact', 'doc', 'Doc', ['v2'], false, true],
    ['artifact', 'doc', 'Doc', ['+'], true, true],
    ['artifact', 'fresh', null, ['new'], false, true],
    ['status', 'completed', true]
  ])
  const v1 = events[5]
  t.match(v1.type === 'artifact' && v1.artifact, { description: 'a doc', metadata: { v: 1 } })
  t.same(texts(done.task), [['a', 'b'], ['1', '2'], ['v2', '+'], ['new']])
  t.equal(done.task.artifacts[2].description, undefined, 'a replaced artifact keeps only what the new one has')
})

t.test('update publishes an artifact change made outside an executor as a whole, last chunk', async t => {
  const { service, bus } = harness(t, async function * () { yield { kind: 'status', state: 'input_required' } })
  const waiting = await send(service, userMessage('x'))
  const events: TaskEvent[] = []
  bus.subscribe(waiting.task.id, e => events.push(e))
  const artifact = { artifactId: 'note', name: 'Note', parts: [{ kind: 'text' as const, text: 'one' }] }
  await service.update(waiting.task.id, task => ({ ...task, artifacts: [...task.artifacts, artifact] }))
  const edited = { ...artifact, parts: [{ kind: 'text' as const, text: 'two' }] }
  const written = await service.update(waiting.task.id, task => ({ ...task, artifacts: [edited] }))
  t.same(events.map(e => e.type === 'artifact' && [e.artifact, e.append, e.lastChunk]), [
    [artifact, false, true],
    [edited, false, true]
  ])
  // A mutation that changes nothing returns the current record and publishes nothing.
  t.equal(await service.update(waiting.task.id, () => null), written)
  await service.update(waiting.task.id, task => ({ ...task, metadata: { seen: true } }))
  t.equal(events.length, 2, 'a change to neither status nor artifacts is not published')
  await t.rejects(service.update('nope', task => task), { code: 'A2A_ERR_TASK_NOT_FOUND' })
})

t.test('events of a task another writer finished are dropped', async t => {
  // Two services over one store, as two instances: the other one cancels, and this one's executor is not aborted.
  const store = new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow })
  t.teardown(() => store.close())
  const cases: Array<[string, (release: Promise<void>) => AgentExecutor]> = [
    ['an executor that yields on', release => async function * () {
      await release
      yield 'late'
    }],
    ['an executor that returns without events', release => async () => { await release }],
    ['an executor that throws', release => async () => {
      await release
      throw new Error('late failure')
    }]
  ]
  for (const [name, make] of cases) {
    await t.test(name, async t => {
      const started = gate()
      const release = gate()
      const executor = make(release.promise)
      const here = harness(t, ctx => {
        started.open()
        return executor(ctx)
      }, { store })
      const there = harness(t, async () => {}, { store })
      const created = await here.service.create(userMessage('x'), alice)
      here.service.dispatch(created, alice)
      await started.promise
      await there.service.cancel(created.task.id, alice)
      release.open()
      await idle(here.service)
      const after = await store.get(created.task.id) as StoredTask
      t.equal(after.task.status.state, 'canceled')
      t.same(after.task.artifacts, [])
      t.equal(after.task.status.message, undefined)
    })
  }
})

t.test('update gives up with TaskConflict when every compare-and-set loses', async t => {
  // A store across the network (no synchronous view), where another writer wins every time.
  class ContendedStore extends MemoryTaskStore {
    replaces = 0
    override get sync (): undefined {
      return undefined
    }

    override async replace (): Promise<boolean> {
      this.replaces++
      return false
    }
  }
  const store = new ContendedStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow })
  const { service } = harness(t, async () => {}, { store })
  const created = await service.create(userMessage('x'), alice)
  await t.rejects(service.update(created.task.id, task => ({ ...task, metadata: {} })), {
    code: 'A2A_ERR_TASK_CONFLICT', statusCode: 409
  })
  t.equal(store.replaces, 16)
})

t.test('a store failure during a run is logged and ends the run', async t => {
  // A store across the network (no synchronous view) that fails its writes.
  class BrokenStore extends MemoryTaskStore {
    override get sync (): undefined {
      return undefined
    }

    override async replace (): Promise<boolean> {
      throw new Error('store down')
    }
  }
  const { log, lines } = capture()
  const store = new BrokenStore({ maxTasks: 10, ttlSeconds: 60, now: storeNow })
  let calls = 0
  const { service } = harness(t, async () => { calls++ }, { store, log })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  await idle(service)
  t.equal(service.running, 0)
  t.equal(calls, 0)
  t.match(lines().find(l => l.msg === 'task run failed'), { level: 50, taskId: created.task.id, err: { message: 'store down' } })
})

t.test('a generator whose cleanup throws after the final state keeps that state', async t => {
  const { service } = harness(t, async function * () {
    try {
      yield { kind: 'status', state: 'completed' }
    } finally {
      // eslint-disable-next-line no-unsafe-finally
      throw new Error('cleanup failed')
    }
  })
  const done = await send(service, userMessage('x'))
  t.equal(done.task.status.state, 'completed')
  t.equal(done.task.status.message, undefined)
})

t.test('the executor gets the tools of the task\'s principal', async t => {
  const asked: Principal[] = []
  let got: AgentTools | undefined
  const { service } = harness(t, async ctx => { got = ctx.tools }, {
    toolsFor: principal => {
      asked.push(principal)
      return tools
    }
  })
  await send(service, userMessage('x'), bob)
  t.same(asked.map(p => p.id), ['bob'])
  t.equal(got, tools)
})

t.test('history entries keep the message\'s fields', async t => {
  const { service } = harness(t, async () => {})
  const message = userMessage('x', { referenceTaskIds: ['r1'], extensions: ['e'] })
  const record = await service.create(message, alice)
  t.match(record.task.history[0], { referenceTaskIds: ['r1'], extensions: ['e'], messageId: message.messageId })
})

t.test('a listener that throws is logged; the write stands and the task completes', async t => {
  const { log, lines } = capture()
  const { service, bus } = harness(t, async () => 'fine', { log })
  service.onStatusChange(() => { throw new Error('status listener broke') })
  const created = await service.create(userMessage('x'), alice)
  bus.subscribe(created.task.id, () => { throw new Error('subscriber broke') })
  const seen: string[] = []
  bus.subscribe(created.task.id, event => { seen.push(event.type) })
  service.dispatch(created, alice)
  const done = await service.waitSettled(created, SETTLE_MS)
  t.equal(done.task.status.state, 'completed')
  t.same(seen, ['status', 'artifact', 'status'], 'a throwing subscriber does not keep events from the others')
  const messages = lines().map(l => l.msg)
  t.ok(messages.includes('task event listener failed'))
  t.ok(messages.includes('task status listener failed'))
})

t.test('an executor passes its context on with a spread, naming the signal, which is made on first read', async t => {
  let keys: string[] = []
  const inner: AgentExecutor = async ctx => {
    ctx.log.info('from the inner executor')
    t.equal(ctx.signal.aborted, false)
    t.equal(ctx.tools, tools)
    t.equal(ctx.principal, alice)
    t.same(await ctx.contextHistory?.(), [])
    t.same(ctx.extensions, [], 'a send that activated no extension')
    return `inner saw ${textOf(ctx.message)} in ${ctx.task.status.state}`
  }
  const { service } = harness(t, ctx => {
    keys = Object.keys(ctx)
    return inner({ ...ctx, signal: ctx.signal, message: { ...ctx.message, parts: [{ kind: 'text', text: 'rewritten' }] } })
  })
  const done = await send(service, userMessage('x'))
  t.same(texts(done.task), [['inner saw rewritten in in_progress']])
  t.same(keys.sort(), ['contextHistory', 'extensions', 'log', 'message', 'principal', 'task', 'tools'], 'all but signal are own fields')
})

t.test('a signal first read after the cancel is already aborted', async t => {
  const started = gate()
  const resume = gate()
  let seen: boolean | undefined
  const { service } = harness(t, async ctx => {
    started.open()
    await resume.promise
    seen = ctx.signal.aborted
  })
  const created = await service.create(userMessage('x'), alice)
  service.dispatch(created, alice)
  await started.promise
  await service.cancel(created.task.id, alice)
  resume.open()
  await idle(service)
  t.equal(seen, true)
})

t.test('row 15: storedVersion and stored read a task whoever owns it, from a store with no version of its own', async t => {
  const { service } = harness(t, () => 'done')
  const record = await service.create(userMessage('hello'), alice)
  t.equal(await service.storedVersion(record.task.id), record.version)
  t.equal(await service.storedVersion('no-such-task'), null)
  t.equal((await service.stored(record.task.id))?.task.id, record.task.id)
  t.equal(await service.stored('no-such-task'), null)
})
