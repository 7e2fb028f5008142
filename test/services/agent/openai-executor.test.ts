import { pino } from 'pino'
import t from 'tap'
import type { Message, Task } from '../../../schemas/task.js'
import { ANONYMOUS } from '../../../services/auth/principal.js'
import { validateConfig } from '../../../services/config/validate.js'
import { JsonRpcError } from '../../../services/kernel/errors.js'
import type { AgentTools, ExecutionContext, ExecutorEvent } from '../../../services/agent/executor.js'
import { createOpenAIExecutor } from '../../../services/agent/openai.js'
import { questionOf } from '../../../services/agent/openai-tools.js'
import { calls, openaiStub, says } from './openai-stub.js'

// The executor run directly, with a context built here (no task service): what the service never hands it.

const message: Message = { kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'hi' }] }
const task: Task = {
  id: 't1', contextId: 'c1', kind: 'task', status: { state: 'in_progress', timestamp: '' }, artifacts: [], history: [message], metadata: null
}

async function run (baseUrl: string, tools: AgentTools, controller = new AbortController()): Promise<ExecutorEvent[]> {
  const llm = { ...validateConfig({}).agent.llm, base_url: baseUrl }
  const ctx: ExecutionContext = { task, message, signal: controller.signal, principal: ANONYMOUS, tools, log: pino({ level: 'silent' }) }
  const events: ExecutorEvent[] = []
  for await (const event of createOpenAIExecutor({ llm })(ctx) as AsyncIterable<ExecutorEvent>) events.push(event)
  return events
}

const results = (events: ExecutorEvent[]) => events.flatMap(e => typeof e === 'object' && e.kind === 'message' && Array.isArray(e.content)
  ? e.content.flatMap(p => p.kind === 'data' && p.data.tool_result !== undefined ? [p.data.tool_result] : [])
  : [])

t.test('without contextHistory the conversation is the task alone', async t => {
  const stub = await openaiStub(t)
  stub.script(says('ok'))
  const events = await run(stub.baseUrl, { available: () => [], call: async () => ({}) })
  t.same(events, ['ok'])
  t.same(stub.requests[0].body.messages.slice(1), [{ role: 'user', content: 'hi' }])
  t.same(stub.requests[0].body.tools.map((tool: any) => tool.function.name), ['ask_user'])
})

t.test('a JSON-RPC error without data text is reported by its message', async t => {
  const stub = await openaiStub(t)
  stub.script(calls(['status', {}], ['capabilities', {}]), says('ok'))
  const tools: AgentTools = {
    available: () => ['status', 'capabilities'],
    call: async name => { throw new JsonRpcError(-32603, 'Internal error', name === 'status' ? undefined : '') }
  }
  t.same(results(await run(stub.baseUrl, tools)), [
    { id: 'call_status_0', name: 'status', error: { code: -32603, message: 'Internal error' } },
    { id: 'call_capabilities_1', name: 'capabilities', error: { code: -32603, message: 'Internal error' } }
  ])
})

t.test('a tool that fails with anything but a JSON-RPC error fails the run: the task service logs it', async t => {
  const stub = await openaiStub(t)
  stub.script(calls(['status', {}]))
  const tools: AgentTools = { available: () => ['status'], call: async () => { throw new Error('disk on fire') } }
  await t.rejects(run(stub.baseUrl, tools), { message: 'disk on fire' })
})

t.test('a model failure is one failed status event, after which the run ends', async t => {
  const stub = await openaiStub(t)
  stub.script({ status: 400 })
  const events = await run(stub.baseUrl, { available: () => [], call: async () => ({}) })
  t.same(events, [{ kind: 'status', state: 'failed', message: 'The language model endpoint answered HTTP 400.' }])
})

t.test('a cancel during a tool call makes no further model request', async t => {
  const stub = await openaiStub(t)
  stub.script(calls(['status', {}]), says('never asked'))
  const controller = new AbortController()
  const tools: AgentTools = { available: () => ['status'], call: async () => { controller.abort(); return {} } }
  await t.rejects(run(stub.baseUrl, tools, controller), { name: 'AbortError' })
  t.equal(stub.requests.length, 1)
})

t.test('ask_user arguments that are not an object with a question hold none', async t => {
  const question = (args: string) => questionOf({ id: 'q', name: 'ask_user', arguments: args })
  t.same(['[1]', 'null', '"x"', '{"question":5}', '{"question":"  "}', '', '{'].map(question), Array(7).fill(undefined))
  t.equal(question('{"question":"Why?"}'), 'Why?')
})
