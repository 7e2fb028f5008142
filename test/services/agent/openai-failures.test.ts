import { createServer } from 'node:net'
import t from 'tap'
import { build, buildLogged, call, until, userMessage, type Teardown } from '../../helper.js'
import { calls, finish, openaiStub, says, text, type Stub } from './openai-stub.js'

const KEY = 'sk-secret-key-that-must-never-be-logged'

const config = (baseUrl: string, llm: Record<string, unknown> = {}) =>
  ({ agent: { name: 'A', executor: 'openai', llm: { base_url: baseUrl, api_key: KEY, retry_delay: 0.001, ...llm } } })

/** A fresh app on the stub; the task one message/send gives. */
async function send (t: Teardown, stub: Stub, llm: Record<string, unknown> = {}): Promise<any> {
  const app = await build(t, { config: config(stub.baseUrl, llm) })
  return (await call(app, 'message/send', { message: userMessage('hi') })).body.result
}

const statusText = (task: any) => task.status.message.parts[0].text

t.test('429 and 5xx answers are retried with backoff, honouring a short Retry-After', async t => {
  const stub = await openaiStub(t)
  stub.script(
    { status: 429, headers: { 'retry-after': '0' } },
    { status: 503 },
    { status: 429, headers: { 'retry-after': new Date(Date.now() - 1000).toUTCString() } },
    { status: 502, headers: { 'retry-after': 'soon' } },
    { status: 429, headers: { 'retry-after': '3600' } },
    says('at last')
  )
  const app = await build(t, { config: config(stub.baseUrl, { max_retries: 5 }) })
  const task = (await call(app, 'message/send', { message: userMessage('hi') })).body.result
  t.equal(task.status.state, 'completed')
  t.equal(task.artifacts[0].parts[0].text, 'at last')
  t.equal(stub.requests.length, 6)
})

t.test('a 5xx past max_retries fails the task with a safe message, never the answer body', async t => {
  const stub = await openaiStub(t)
  stub.script({ status: 500, body: `upstream detail ${KEY}` })
  const { app, logs } = await buildLogged(t, { config: config(stub.baseUrl, { max_retries: 2 }) })
  const task = (await call(app, 'message/send', { message: userMessage('hi') })).body.result
  t.equal(task.status.state, 'failed')
  t.equal(statusText(task), 'The language model endpoint answered HTTP 500.')
  t.equal(stub.requests.length, 3)
  t.equal(stub.requests[0].headers.authorization, `Bearer ${KEY}`)
  const failed = logs.lines().find(l => l.msg === 'language model request failed')
  t.match(failed, { level: 40, status: 500, reason: 'HTTP 500', model: 'gpt-4o-mini', host: new URL(stub.baseUrl).host })
  t.equal(logs.lines().filter(l => l.msg === 'language model busy, retrying').length, 2)
  t.notOk(logs.text().includes(KEY), 'the key is never logged')
  t.notOk(logs.text().includes('upstream detail'), 'the answer body is never logged')
  t.notOk(/authorization/i.test(logs.text()), 'no Authorization header is logged')
})

t.test('other 4xx answers are not retried', async t => {
  const stub = await openaiStub(t)
  stub.script({ status: 401, body: '{"error":{"message":"Incorrect API key provided"}}' })
  const task = await send(t, stub)
  t.equal(task.status.state, 'failed')
  t.equal(statusText(task), 'The language model endpoint answered HTTP 401.')
  t.equal(stub.requests.length, 1)
})

t.test('a model that stays silent past the timeout fails the task, before or during its answer', async t => {
  const stub = await openaiStub(t)
  stub.script({ silent: true })
  const before = await send(t, stub, { timeout: 0.2 })
  t.equal(before.status.state, 'failed')
  t.equal(statusText(before), 'The language model did not answer within 0.2 s.')
  stub.script({ chunks: [text('part')], hang: true })
  const during = await send(t, stub, { timeout: 0.2 })
  t.equal(during.status.state, 'failed')
  t.equal(statusText(during), 'The language model did not answer within 0.2 s.')
  t.equal(during.artifacts[0].parts[0].text, 'part')
  // Both requests were aborted: the stub saw each client go away.
  await until(() => stub.aborted === 2)
})

t.test('an unreadable answer fails the task with a safe message', async t => {
  const stub = await openaiStub(t)
  const cases: Array<[any, string]> = [
    [{ chunks: ['data: {not json\n\n'] }, 'The language model sent an answer that could not be read.'],
    [{ chunks: [{ error: { message: `bad ${KEY}` } }] }, 'The language model reported an error.'],
    [{ chunks: [text('cut')], done: false }, 'The language model sent an answer that could not be read.'],
    [{ status: 204 }, 'The language model sent an answer that could not be read.'],
    [{ body: '{"choices":[{"message":{"content":"not streamed"}}]}', headers: { 'content-type': 'application/json' } },
      'The language model sent an answer that could not be read.']
  ]
  for (const [answer, message] of cases) {
    stub.script(answer)
    const task = await send(t, stub)
    t.equal(task.status.state, 'failed')
    t.equal(statusText(task), message)
    t.notOk(JSON.stringify(task).includes(KEY))
  }
})

t.test('an endpoint that cannot be reached fails the task', async t => {
  const server = createServer().listen(0, '127.0.0.1')
  await new Promise(resolve => server.once('listening', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise(resolve => server.close(resolve))
  const app = await build(t, { config: config(`http://127.0.0.1:${port}/v1`) })
  const task = (await call(app, 'message/send', { message: userMessage('hi') })).body.result
  t.equal(task.status.state, 'failed')
  t.equal(statusText(task), 'The language model endpoint could not be reached.')
})

t.test('tool calls past max_tool_rounds fail the task; the last round is sent with tool_choice none', async t => {
  const stub = await openaiStub(t)
  stub.script(calls(['status', {}]), calls(['status', {}]))
  const task = await send(t, stub, { max_tool_rounds: 1 })
  t.equal(task.status.state, 'failed')
  t.equal(statusText(task), 'The language model asked for tools past the limit of 1 round(s).')
  t.same(stub.requests.map(r => r.body.tool_choice), ['auto', 'none'])
})

t.test('max_tool_rounds 0 offers no tools, an empty system_prompt sends no system message, history_tokens 0 no history', async t => {
  const stub = await openaiStub(t)
  const app = await build(t, { config: config(stub.baseUrl, { max_tool_rounds: 0, system_prompt: '', history_tokens: 0 }) })
  stub.script(says('one'), { chunks: [text('two'), finish('length')] }, calls(['status', {}]))
  const first = (await call(app, 'message/send', { message: userMessage('a') })).body.result
  const second = (await call(app, 'message/send', { message: userMessage('b', { contextId: first.contextId }) })).body.result
  t.equal(second.status.state, 'completed')
  t.same(stub.requests[1].body.messages, [{ role: 'user', content: 'b' }])
  t.equal(stub.requests[1].body.tools, undefined)
  t.equal(stub.requests[1].body.tool_choice, undefined)
  const third = (await call(app, 'message/send', { message: userMessage('c') })).body.result
  t.equal(third.status.state, 'failed')
  t.equal(statusText(third), 'The language model asked for tools past the limit of 0 round(s).')
})
