import t from 'tap'
import type { A2AConfigInput } from '../../../index.js'
import { createServer } from '../../../server.js'
import { validateConfig } from '../../../services/config/validate.js'
import { build, call, listen, logCapture, parseSseBlock, rpc, until, userMessage, type Teardown } from '../../helper.js'
import { openaiStub, says, text, finish, type Stub } from './openai-stub.js'

const KEY = 'sk-test-0123456789abcdef'

function llmConfig (stub: Stub, extra: A2AConfigInput = {}, llm: Record<string, unknown> = {}): A2AConfigInput {
  return {
    ...extra,
    agent: { name: 'LLM Agent', executor: 'openai', llm: { base_url: stub.baseUrl, api_key: KEY, retry_delay: 0, ...llm } }
  }
}

/** POSTs a streaming call and hands each SSE event to `seen` as it arrives; resolves with them all at the end. */
async function streamEvents (url: string, body: unknown, seen: any[] = []): Promise<any[]> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const frame = parseSseBlock(block)
      if (frame !== null) seen.push(frame.data)
    }
  }
  return seen
}

/** A stub and an app whose executor talks to it. */
async function setup (t: Teardown, extra: A2AConfigInput = {}, llm: Record<string, unknown> = {}) {
  const stub = await openaiStub(t)
  const app = await build(t, { config: llmConfig(stub, extra, llm) })
  return { stub, app }
}

t.test('message/send completes with the whole streamed text; the request carries the settings and the key', async t => {
  const { stub, app } = await setup(t, {}, { model: 'test-model', temperature: 0.7, max_tokens: 99, system_prompt: 'Be brief.' })
  stub.script(says('Hel', 'lo', ' world'))
  const res = await call(app, 'message/send', { message: userMessage('hi there') })
  const task = res.body.result
  t.equal(task.status.state, 'completed')
  t.equal(task.artifacts.length, 1)
  t.equal(task.artifacts[0].name, 'Agent-result')
  t.equal(task.artifacts[0].parts.map((p: any) => p.text).join(''), 'Hello world')
  t.equal(stub.requests.length, 1)
  const { headers, body } = stub.requests[0]
  t.equal(headers.authorization, `Bearer ${KEY}`)
  t.equal(headers['content-type'], 'application/json')
  t.match(body, { model: 'test-model', stream: true, temperature: 0.7, max_tokens: 99, tool_choice: 'auto' })
  t.notOk('stream_options' in body, 'no trace records (no SDK in this process): the request asks for no usage')
  t.equal(body.messages[0].role, 'system')
  t.match(body.messages[0].content, /^Be brief\.\n\nWhen you need more information from the user/)
  t.same(body.messages.slice(1), [{ role: 'user', content: 'hi there' }])
  t.same(body.tools.map((tool: any) => tool.function.name), ['status', 'capabilities', 'list_directory', 'ask_user'])
  t.match(body.tools[2], { type: 'function', function: { parameters: { required: ['path'] } } })
})

t.test('the standalone server answers through real HTTP, with the key in no log line at debug level', async t => {
  const stub = await openaiStub(t)
  const logs = logCapture()
  const app = await createServer(validateConfig({ ...llmConfig(stub), server: { log_level: 'debug' } }), { logStream: logs.stream })
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  stub.script(says('over ', 'the wire'))
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage('hi') })) })
  const task = (await res.json() as any).result
  t.equal(task.status.state, 'completed')
  t.equal(task.artifacts[0].parts.map((p: any) => p.text).join(''), 'over the wire')
  t.equal(stub.requests[0].headers.authorization, `Bearer ${KEY}`)
  t.ok(logs.lines().length > 0)
  t.notOk(logs.text().includes(KEY))
})

t.test('without an api_key no Authorization header is sent, and a trailing slash in base_url is fine', async t => {
  const stub = await openaiStub(t)
  const app = await build(t, { config: { agent: { name: 'A', executor: 'openai', llm: { base_url: `${stub.baseUrl}/` } } } })
  const res = await call(app, 'message/send', { message: userMessage('hi') })
  t.equal(res.body.result.status.state, 'completed')
  t.equal(stub.requests[0].headers.authorization, undefined)
})

t.test('a2a dialect: each chunk of the model stream is an artifact-update, appended after the first', async t => {
  const stub = await openaiStub(t)
  const { url } = await listen(t, { config: llmConfig(stub, { protocol: { dialect: 'a2a' } }) })
  const seen: any[] = []
  const updates = () => seen.filter(e => e.result.kind === 'artifact-update').length
  // Each chunk is written only once the client has seen the previous one arrive: one read, one update.
  stub.script({ chunks: [text('Hel'), text('lo'), text(' world'), finish()], before: i => until(() => updates() >= i) })
  const events = await streamEvents(url, rpc('message/stream', { message: userMessage('hi') }), seen)
  t.same(events.map(e => e.result.kind), ['task', 'status-update', 'artifact-update', 'artifact-update', 'artifact-update', 'status-update'])
  const chunks = events.filter(e => e.result.kind === 'artifact-update').map(e => e.result)
  t.same(chunks.map(c => [c.append, c.artifact.parts[0].text]), [[false, 'Hel'], [true, 'lo'], [true, ' world']])
  t.equal(chunks[0].artifact.name, 'Agent-result')
  t.ok(chunks.every(c => c.artifact.artifactId === chunks[0].artifact.artifactId))
  t.match(events[events.length - 1].result, { status: { state: 'completed' }, final: true })
})

t.test('default dialect: the snapshots grow with each chunk, and the last one is completed with the full text', async t => {
  const stub = await openaiStub(t)
  const { url } = await listen(t, { config: llmConfig(stub) })
  const seen: any[] = []
  const withText = () => seen.filter(e => e.result.artifacts.length > 0).length
  stub.script({ chunks: [text('one'), text(' two'), finish()], before: i => until(() => withText() >= i) })
  const events = await streamEvents(url, rpc('message/stream', { message: userMessage('hi') }), seen)
  const texts = events.map(e => e.result.artifacts[0]?.parts.map((p: any) => p.text).join('') ?? null)
  t.same(texts, [null, 'one', 'one two', 'one two'])
  t.same(events.map(e => e.result.status.state), ['in_progress', 'in_progress', 'in_progress', 'completed'])
})

t.test('messages of one contextId share history: earlier exchanges of the same owner, within the token budget', async t => {
  const keys = [{ key: 'alice-key', scopes: [] }, { key: 'bob-key', scopes: [] }]
  const { stub, app } = await setup(t, { security: { enabled: true, auth: { api_key: { keys } } } }, { history_tokens: 5 })
  const send = async (key: string, words: string, contextId?: string) => {
    const res = await app.inject({
      method: 'POST', url: '/', headers: { 'x-api-key': key }, payload: rpc('message/send', { message: userMessage(words, contextId === undefined ? {} : { contextId }) })
    })
    return res.json().result
  }
  stub.script(says('first answer'), says('second answer'), says('third'), says('bob'))
  const first = await send('alice-key', 'one')
  const contextId = first.contextId
  await send('alice-key', 'two', contextId)
  await send('alice-key', 'three', contextId)
  await send('bob-key', 'mine', contextId)
  const sent = stub.requests.map(r => r.body.messages.slice(1))
  t.same(sent[0], [{ role: 'user', content: 'one' }])
  // 'one' + 'first answer' is 1 + 3 = 4 estimated tokens: within 5.
  t.same(sent[1], [
    { role: 'user', content: 'one' }, { role: 'assistant', content: 'first answer' }, { role: 'user', content: 'two' }
  ])
  // The newest exchange ('two' + 'second answer', 5 tokens) fills the budget: the older one is left out.
  t.same(sent[2], [
    { role: 'user', content: 'two' }, { role: 'assistant', content: 'second answer' }, { role: 'user', content: 'three' }
  ])
  // Another owner's tasks in the same context are not its history.
  t.same(sent[3], [{ role: 'user', content: 'mine' }])
})

t.test('the task running when cancel comes aborts the model request', async t => {
  const { stub, app } = await setup(t)
  stub.script({ chunks: [text('partial')], hang: true })
  const sent = await call(app, 'message/send', { message: userMessage('long'), configuration: { blocking: false } })
  const id = sent.body.result.id
  await until(async () => (await call(app, 'tasks/get', { id })).body.result.artifacts.length > 0)
  const canceled = await call(app, 'tasks/cancel', { id })
  t.equal(canceled.body.result.status.state, 'canceled')
  await until(() => stub.aborted === 1)
  await until(() => app.a2aTasks.running === 0)
  const task = (await call(app, 'tasks/get', { id })).body.result
  t.equal(task.status.state, 'canceled')
  t.equal(task.artifacts[0].parts[0].text, 'partial')
})

t.test('a cancel while waiting to retry a 429 ends the run at once', async t => {
  const { stub, app } = await setup(t)
  stub.script({ status: 429, headers: { 'retry-after': '30' } })
  const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { blocking: false } })
  await until(() => stub.requests.length === 1)
  await call(app, 'tasks/cancel', { id: sent.body.result.id })
  await until(() => app.a2aTasks.running === 0)
  t.equal(stub.requests.length, 1)
})
