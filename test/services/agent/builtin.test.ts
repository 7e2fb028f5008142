import { randomUUID } from 'node:crypto'
import { setImmediate as tick } from 'node:timers/promises'
import { pino } from 'pino'
import t, { type Test } from 'tap'
import type { Message, Part, Task } from '../../../schemas/task.js'
import { createBuiltinAgent } from '../../../services/agent/builtin.js'
import type { AgentExecutor, AgentTools } from '../../../services/agent/executor.js'
import { createPrincipal, type Principal } from '../../../services/auth/principal.js'
import { JsonRpcError, RpcCode, invalidParams } from '../../../services/kernel/errors.js'
import { MemoryTaskEventBus } from '../../../services/tasks/event-bus.js'
import { MemoryTaskStore } from '../../../services/tasks/memory-store.js'
import { FAILED_MESSAGE, TaskService } from '../../../services/tasks/task-service.js'

const alice = createPrincipal('alice', 'api_key', ['api:read'], {})
const SETTLE_MS = 10_000

interface ToolCall {
  name: string
  args: Record<string, unknown>
  principal: Principal
}

/** Tools whose `call` answers from `answer`: the real tools are tested with the JSON-RPC methods. */
function stubTools (answer: (name: string, args: Record<string, unknown>) => unknown): { calls: ToolCall[], toolsFor: (p: Principal) => AgentTools } {
  const calls: ToolCall[] = []
  return {
    calls,
    toolsFor: principal => ({
      available: () => ['status', 'capabilities', 'list_directory'],
      call: async (name, args) => {
        calls.push({ name, args, principal })
        return answer(name, args)
      }
    })
  }
}

function setup (t: Test, executor: AgentExecutor, toolsFor: (p: Principal) => AgentTools = stubTools(() => ({})).toolsFor): TaskService {
  const store = new MemoryTaskStore({ maxTasks: 100, ttlSeconds: 3600 })
  const bus = new MemoryTaskEventBus()
  const service = new TaskService({ store, bus, executor, toolsFor, log: pino({ level: 'silent' }) })
  t.teardown(async () => {
    await service.drain(0)
    await store.close()
  })
  return service
}

function message (...parts: Array<string | Part>): Message {
  return {
    role: 'user',
    messageId: randomUUID(),
    parts: parts.map(p => typeof p === 'string' ? { kind: 'text', text: p } : p)
  }
}

async function run (service: TaskService, msg: Message): Promise<Task> {
  const created = await service.create(msg, alice)
  service.dispatch(created, alice)
  return (await service.waitSettled(created, SETTLE_MS)).task
}

const statusText = (task: Task) => task.status.message?.parts.map(p => p.kind === 'text' ? p.text : '').join('')

t.test('a text message is echoed back as the Agent-result artifact', async t => {
  const service = setup(t, createBuiltinAgent())
  const task = await run(service, message('Hello, agent'))
  t.equal(task.status.state, 'completed')
  t.equal(task.artifacts.length, 1)
  t.match(task.artifacts[0], { name: 'Agent-result', parts: [{ kind: 'text', text: 'Hello, agent' }] })
})

t.test('every part is echoed, and a message without text is echoed too', async t => {
  const service = setup(t, createBuiltinAgent())
  const file: Part = { kind: 'file', file: { name: 'a.txt', mimeType: 'text/plain', bytes: 'aGk=' } }
  const data: Part = { kind: 'data', data: { answer: 42 }, metadata: { m: 1 } }
  const mixed = await run(service, message('see attached', file, data))
  t.same(mixed.artifacts[0].parts, [{ kind: 'text', text: 'see attached' }, file, data])
  const noText = await run(service, message(file, data))
  t.equal(noText.status.state, 'completed')
  t.same(noText.artifacts[0].parts, [file, data])
  t.equal(noText.artifacts[0].name, 'Agent-result')
})

t.test('status and capabilities run their tool, and the result becomes data and JSON text parts', async t => {
  const result = { status: 'ok', agent: 'Echo Agent', nested: { n: [1, 2] } }
  const tools = stubTools(() => result)
  const service = setup(t, createBuiltinAgent(), tools.toolsFor)
  for (const text of ['status', '  capabilities\n']) {
    const task = await run(service, message(text))
    t.equal(task.status.state, 'completed', text)
    t.same(task.artifacts.map(a => a.name), ['Agent-result'])
    t.same(task.artifacts[0].parts, [{ kind: 'data', data: result }, { kind: 'text', text: JSON.stringify(result, null, 2) }])
  }
  t.same(tools.calls.map(c => [c.name, c.args, c.principal.id]), [['status', {}, 'alice'], ['capabilities', {}, 'alice']])
})

t.test('list_directory takes the rest of the text as its path, . by default', async t => {
  const tools = stubTools((_name, args) => ({ path: args.path, entries: [] }))
  const service = setup(t, createBuiltinAgent(), tools.toolsFor)
  await run(service, message('list_directory'))
  await run(service, message('list_directory docs/my notes '))
  await run(service, message('list_directory', 'sub'))
  const last = await run(service, message('list_directory\t./a'))
  t.same(tools.calls.map(c => [c.name, c.args]), [
    ['list_directory', { path: '.' }],
    ['list_directory', { path: 'docs/my notes' }],
    ['list_directory', { path: 'sub' }],
    ['list_directory', { path: './a' }]
  ])
  t.same(last.artifacts[0].parts[0], { kind: 'data', data: { path: './a', entries: [] } })
})

t.test('text that is not exactly a command is echoed, and no tool is called', async t => {
  const tools = stubTools(() => ({}))
  const service = setup(t, createBuiltinAgent(), tools.toolsFor)
  for (const text of ['Status', 'status please', 'capabilities?', 'list_directoryx', 'please list_directory', '']) {
    const task = await run(service, message(text))
    t.same(task.artifacts[0].parts, [{ kind: 'text', text }], JSON.stringify(text))
  }
  t.same(tools.calls, [])
})

t.test('with tools off the agent is a plain echo', async t => {
  const tools = stubTools(() => ({}))
  const service = setup(t, createBuiltinAgent({ tools: false }), tools.toolsFor)
  const task = await run(service, message('status'))
  t.same(task.artifacts[0].parts, [{ kind: 'text', text: 'status' }])
  t.same(tools.calls, [])
})

t.test('a tool the caller lacks the scope for rejects the task, saying which scope is needed', async t => {
  const tools = stubTools(() => {
    throw new JsonRpcError(RpcCode.insufficientScope, 'Insufficient scope', 'needs scope files:read', 403)
  })
  const service = setup(t, createBuiltinAgent(), tools.toolsFor)
  const task = await run(service, message('list_directory'))
  t.equal(task.status.state, 'rejected')
  t.equal(statusText(task), 'The list_directory tool needs a scope the caller does not hold (needs scope files:read).')
  t.same(task.artifacts, [])
})

t.test('a tool error fails the task with the error\'s own safe text', async t => {
  const tools = stubTools(name => {
    if (name === 'list_directory') throw invalidParams('params.path: does not exist')
    throw new JsonRpcError(RpcCode.internalError, 'Internal error')
  })
  const service = setup(t, createBuiltinAgent(), tools.toolsFor)
  const missing = await run(service, message('list_directory nope'))
  t.equal(missing.status.state, 'failed')
  t.equal(statusText(missing), 'The list_directory tool failed: params.path: does not exist')
  const bare = await run(service, message('status'))
  t.equal(bare.status.state, 'failed')
  t.equal(statusText(bare), 'The status tool failed: Internal error', 'without data, the error message is used')
})

t.test('an unexpected tool exception fails the task with the generic message only', async t => {
  const tools = stubTools(() => { throw new Error('ECONNRESET at 10.0.0.7') })
  const service = setup(t, createBuiltinAgent(), tools.toolsFor)
  const task = await run(service, message('capabilities'))
  t.equal(task.status.state, 'failed')
  t.equal(statusText(task), FAILED_MESSAGE)
  t.equal(JSON.stringify(task).includes('ECONNRESET'), false)
})

t.test('a tool result that is not an object is wrapped in the data part', async t => {
  const answers: unknown[] = [['a', 'b'], undefined, 'text', null]
  const tools = stubTools(() => answers.shift())
  const service = setup(t, createBuiltinAgent(), tools.toolsFor)
  const parts = []
  for (let i = 0; i < 4; i++) parts.push((await run(service, message('status'))).artifacts[0].parts)
  t.same(parts, [
    [{ kind: 'data', data: { result: ['a', 'b'] } }, { kind: 'text', text: '[\n  "a",\n  "b"\n]' }],
    [{ kind: 'data', data: { result: null } }, { kind: 'text', text: 'null' }],
    [{ kind: 'data', data: { result: 'text' } }, { kind: 'text', text: '"text"' }],
    [{ kind: 'data', data: { result: null } }, { kind: 'text', text: 'null' }]
  ])
})

t.test('a delay holds the task in in_progress, then the agent answers', async t => {
  const service = setup(t, createBuiltinAgent({ delayMs: 1 }))
  const created = await service.create(message('later'), alice)
  const states: string[] = []
  service.bus.subscribe(created.task.id, e => { if (e.type === 'status') states.push(e.task.status.state) })
  service.dispatch(created, alice)
  const task = (await service.waitSettled(created, SETTLE_MS)).task
  t.same(states, ['in_progress', 'completed'])
  t.same(task.artifacts[0].parts, [{ kind: 'text', text: 'later' }])
})

t.test('a cancel during the delay ends the agent at once, with no output and no timer left', async t => {
  const timers = () => process.getActiveResourcesInfo().filter(r => r === 'Timeout').length
  const tools = stubTools(() => ({}))
  const service = setup(t, createBuiltinAgent({ delayMs: 3_600_000 }), tools.toolsFor)
  const created = await service.create(message('status'), alice)
  const before = timers()
  const running = new Promise(resolve => {
    service.bus.subscribe(created.task.id, e => { if (e.task.status.state === 'in_progress') resolve(e) })
  })
  service.dispatch(created, alice)
  await running
  await tick()
  t.equal(timers(), before + 1, 'the delay is one timer')
  const canceled = await service.cancel(created.task.id, alice)
  t.equal(timers(), before, 'the abort cleared it')
  while (service.running > 0) await tick()
  const task = (await service.get(created.task.id, alice)).task
  t.equal(canceled.task.status.state, 'canceled')
  t.equal(task.status.state, 'canceled')
  t.same(task.artifacts, [])
  t.same(tools.calls, [], 'the command never ran')
})

t.test('an agent handed an already aborted signal returns without output', async t => {
  const agent = createBuiltinAgent({ delayMs: 5 })
  const controller = new AbortController()
  controller.abort()
  const result = await agent({
    task: {} as Task,
    message: message('hi'),
    signal: controller.signal,
    principal: alice,
    tools: stubTools(() => ({})).toolsFor(alice),
    log: pino({ level: 'silent' })
  })
  t.equal(result, undefined)
})
