import t from 'tap'
import { build, call, rpc, until, userMessage } from '../../helper.js'
import { calls, finish, openaiStub, says, text, toolCall } from './openai-stub.js'

const toolData = (task: any) => task.history
  .filter((m: any) => m.role === 'agent')
  .flatMap((m: any) => m.parts.map((p: any) => p.data))

t.test('tools are filtered by the caller\'s scopes, and a forced call of another gets an insufficient-scope result', async t => {
  const stub = await openaiStub(t)
  const app = await build(t, {
    config: {
      agent: { name: 'A', executor: 'openai', llm: { base_url: stub.baseUrl } },
      security: { enabled: true, auth: { api_key: { keys: [{ key: 'reader', scopes: ['agent:read'] }] } } }
    }
  })
  stub.script(calls(['list_directory', { path: '.' }], ['status', {}]), says('done'))
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': 'reader' }, payload: rpc('message/send', { message: userMessage('look') }) })
  const task = res.json().result
  t.equal(task.status.state, 'completed')
  t.same(stub.requests[0].body.tools.map((tool: any) => tool.function.name), ['status', 'capabilities', 'ask_user'])
  const [assistant, denied, allowed] = stub.requests[1].body.messages.slice(2)
  t.same(assistant, {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_list_directory_0', type: 'function', function: { name: 'list_directory', arguments: '{"path":"."}' } },
      { id: 'call_status_1', type: 'function', function: { name: 'status', arguments: '{}' } }
    ]
  })
  t.same(denied, { role: 'tool', tool_call_id: 'call_list_directory_0', content: '{"error":{"code":-32011,"message":"needs scope files:read"}}' })
  t.match(JSON.parse(allowed.content), { result: { status: 'ok', agent: 'A' } })
  t.equal(allowed.tool_call_id, 'call_status_1')
  // The calls and their results are agent data messages in the history.
  t.match(toolData(task), [
    { tool_call: { id: 'call_list_directory_0', name: 'list_directory', arguments: '{"path":"."}' } },
    { tool_call: { id: 'call_status_1', name: 'status' } },
    { tool_result: { id: 'call_list_directory_0', name: 'list_directory', error: { code: -32011, message: 'needs scope files:read' } } },
    { tool_result: { id: 'call_status_1', name: 'status', result: { status: 'ok' } } }
  ])
  t.equal(task.artifacts[0].parts[0].text, 'done')
})

t.test('list_directory runs in the root jail; bad arguments and unknown tools are results, not failures', async t => {
  const files = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`file-${String(i).padStart(3, '0')}-${'x'.repeat(60)}.txt`, 'x']))
  const root = t.testdir({ small: { 'a.txt': 'a' }, big: files })
  const stub = await openaiStub(t)
  const app = await build(t, { config: { agent: { name: 'A', executor: 'openai', llm: { base_url: stub.baseUrl } }, tools: { list_directory: { root } } } })
  stub.script(
    { chunks: [text('Looking.'), toolCall(0, 'a', 'list_directory', { path: 'small' }), toolCall(1, 'b', 'list_directory', { path: '../' }), finish('tool_calls')] },
    { chunks: [toolCall(0, 'c', 'list_directory', '{not json'), toolCall(1, 'd', 'rm', { path: '.' }), toolCall(2, 'e', 'status', ''), finish('tool_calls')] },
    calls(['list_directory', { path: 'big' }]),
    says('Found ', 'them.')
  )
  const task = (await call(app, 'message/send', { message: userMessage('list') })).body.result
  t.equal(task.status.state, 'completed')
  // Text of two rounds is one artifact, the rounds a blank line apart.
  t.equal(task.artifacts.length, 1)
  t.equal(task.artifacts[0].parts.map((p: any) => p.text).join(''), 'Looking.\n\nFound them.')
  const results = (i: number) => stub.requests[i].body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content)
  t.match(JSON.parse(results(1)[0]), { result: { path: 'small', entries: [{ name: 'a.txt', type: 'file' }] } })
  t.same(JSON.parse(results(1)[1]), { error: { code: -32602, message: 'params.path: escapes the root through ..' } })
  t.equal(stub.requests[1].body.messages[2].content, 'Looking.')
  t.same(results(2).slice(2, 4).map((c: string) => JSON.parse(c)), [
    { error: { code: -32602, message: 'the arguments must be a JSON object' } },
    { error: { code: -32602, message: 'tool "rm" does not exist' } }
  ])
  t.match(JSON.parse(results(2)[4]), { result: { status: 'ok' } })
  // A large result reaches the model cut short; the history keeps it whole.
  const big = results(3)[5]
  t.ok(big.endsWith(' …(truncated)'))
  t.equal(big.length, 16_000 + ' …(truncated)'.length)
  t.equal(toolData(task).find((d: any) => d.tool_result?.id === 'call_list_directory_0').tool_result.result.entries.length, 300)
})

t.test('ask_user puts the task in input_required; the answer resumes it as the call\'s result', async t => {
  const stub = await openaiStub(t)
  const app = await build(t, { config: { agent: { name: 'A', executor: 'openai', llm: { base_url: stub.baseUrl } } } })
  stub.script(
    calls(['ask_user', {}]),
    { chunks: [text('Let me ask.'), toolCall(0, 'q1', 'ask_user', { question: ' Which directory? ' }), toolCall(1, 'q2', 'ask_user', { question: 'And?' }), finish('tool_calls')] },
    says('Listing src.')
  )
  const asked = (await call(app, 'message/send', { message: userMessage('list something') })).body.result
  t.equal(asked.status.state, 'input_required')
  t.same(asked.status.message.parts, [{ kind: 'text', text: 'Which directory?' }])
  t.equal(asked.status.message.role, 'agent')
  t.same(JSON.parse(stub.requests[1].body.messages.at(-1).content), { error: { code: -32602, message: 'ask_user needs a question' } })

  const done = (await call(app, 'message/send', { message: userMessage('src', { taskId: asked.id }) })).body.result
  t.equal(done.status.state, 'completed')
  t.equal(done.id, asked.id)
  const messages = stub.requests[2].body.messages.slice(1)
  t.same(messages.map((m: any) => m.role), ['user', 'assistant', 'tool', 'assistant', 'tool', 'tool'])
  t.same(messages[3], {
    role: 'assistant',
    content: 'Let me ask.',
    tool_calls: [
      { id: 'q1', type: 'function', function: { name: 'ask_user', arguments: '{"question":" Which directory? "}' } },
      { id: 'q2', type: 'function', function: { name: 'ask_user', arguments: '{"question":"And?"}' } }
    ]
  })
  t.same(messages[4], { role: 'tool', tool_call_id: 'q2', content: '{"error":{"code":-32602,"message":"ask_user takes one question at a time"}}' })
  t.same(messages[5], { role: 'tool', tool_call_id: 'q1', content: 'src' })
  t.equal(done.artifacts.map((a: any) => a.parts.map((p: any) => p.text).join('')).join('|'), 'Let me ask.|Listing src.')
})

t.test('a message joining a running task replays the earlier turn\'s answer before it', async t => {
  const stub = await openaiStub(t)
  const app = await build(t, { config: { agent: { name: 'A', executor: 'openai', llm: { base_url: stub.baseUrl } } } })
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  stub.script({ chunks: [text('first'), finish()], before: () => gate }, says('second'))
  const first = (await call(app, 'message/send', { message: userMessage('one'), configuration: { blocking: false } })).body.result
  const joined = call(app, 'message/send', { message: userMessage('two', { taskId: first.id }) })
  // The first turn ends only once the second message is queued behind it.
  await until(async () => (await call(app, 'tasks/get', { id: first.id })).body.result.history.length === 2)
  release()
  const done = (await joined).body.result
  t.equal(done.status.state, 'completed')
  t.same(stub.requests[1].body.messages.slice(1), [
    { role: 'user', content: 'one' }, { role: 'assistant', content: 'first' }, { role: 'user', content: 'two' }
  ])
})
