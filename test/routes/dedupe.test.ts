import t, { type Test } from 'tap'
import type { AgentExecutor, A2AConfigInput } from '../../index.js'
import { listenGrpc, parseSse, postJson, postStream, privateRedis, testDatabase, until } from '../helper.js'
import { grpcClients, statusDetails, streamAll, unary } from './grpc-client.js'

// Idempotent sends (docs/protocol.md, "Idempotent sends") through every method and binding: the same message sent
// again by the same principal gets the task the first send made, in the form its method answers, and the agent runs
// once; the same messageId with another message is -32602, in each version's shape.

/** Counts the agent's runs, by the text of the message it runs on. "gate" waits until `open` is called. */
function counting (): { executor: AgentExecutor, runs: Map<string, number>, open: () => void } {
  const runs = new Map<string, number>()
  let open = (): void => {}
  const gate = new Promise<void>(resolve => { open = resolve })
  const executor: AgentExecutor = async function * (ctx) {
    const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
    runs.set(text, (runs.get(text) ?? 0) + 1)
    if (text.startsWith('gate')) await gate
    if (text.startsWith('ask')) {
      yield { kind: 'status', state: 'input_required', message: 'more?' }
      return
    }
    yield `echo: ${text}`
  }
  return { executor, runs, open: () => open() }
}

let n = 0
const fresh = (what: string) => `${what}-${++n}`

const rpc = (method: string, params: unknown) => ({ jsonrpc: '2.0', id: ++n, method, params })
const v03Message = (text: string, messageId: string, extra: Record<string, unknown> = {}) =>
  ({ kind: 'message', role: 'user', messageId, parts: [{ kind: 'text', text }], ...extra })
const v10Message = (text: string, messageId: string, extra: Record<string, unknown> = {}) =>
  ({ role: 'ROLE_USER', messageId, parts: [{ text }], ...extra })

/** The task id and state of an SSE stream's events (any binding's form), and the states in order. */
function streamed (raw: string): { ids: string[], states: string[] } {
  const ids: string[] = []
  const states: string[] = []
  for (const event of parseSse(raw).events) {
    const value = event.result ?? event
    const task = value.task ?? value.statusUpdate ?? value.artifactUpdate ?? value
    ids.push(task.taskId ?? task.id)
    const status = task.status
    if (status !== undefined) states.push(status.state)
  }
  return { ids, states }
}

async function app (t: Test, tasks: A2AConfigInput['tasks'] = {}, backend: A2AConfigInput = {}): Promise<{ url: string, target: string, runs: Map<string, number>, open: () => void, app: any }> {
  const { executor, runs, open } = counting()
  const config: A2AConfigInput = { ...backend, tasks: { ...backend.tasks, ...tasks }, protocol: { dialect: 'a2a' } }
  const served = await listenGrpc(t, { executor, config })
  t.teardown(open)
  return { ...served, runs, open }
}

function methods (t: Test, backend: string, config: A2AConfigInput = {}): void {
  t.test(`${backend}: a duplicate answers the first send's task, through each method and binding, and the agent runs once`, async t => {
    const { url, target, runs } = await app(t, {}, config)
    const { v1, v03 } = grpcClients(t, target)
    const sends: Array<[string, (text: string, messageId: string) => Promise<{ id: string, state: string }>]> = [
      ['JSON-RPC message/send', async (text, messageId) => {
        const { json } = await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))
        return { id: json.result.id, state: json.result.status.state }
      }],
      ['JSON-RPC message/send, not blocking', async (text, messageId) => {
        const { json } = await postJson(url, rpc('message/send', { message: v03Message(text, messageId), configuration: { blocking: false } }))
        return { id: json.result.id, state: 'any' }
      }],
      ['JSON-RPC SendMessage', async (text, messageId) => {
        const { json } = await postJson(url, rpc('SendMessage', { message: v10Message(text, messageId) }), { 'a2a-version': '1.0' })
        return { id: json.result.task.id, state: json.result.task.status.state }
      }],
      ['REST v1.0 message:send', async (text, messageId) => {
        const { json } = await postJson(`${url}/message:send`, { message: v10Message(text, messageId) })
        return { id: json.task.id, state: json.task.status.state }
      }],
      ['REST v0.3 message:send', async (text, messageId) => {
        const { json } = await postJson(`${url}/v1/message:send`, { message: { messageId, role: 'ROLE_USER', content: [{ text }] } })
        return { id: json.task.id, state: json.task.status.state }
      }],
      ['gRPC v1.0 SendMessage', async (text, messageId) => {
        const { value } = await unary(v1, 'SendMessage', { message: v10Message(text, messageId) })
        return { id: value.task.id, state: value.task.status.state }
      }],
      ['gRPC v0.3 SendMessage', async (text, messageId) => {
        const { value } = await unary(v03, 'SendMessage', { request: { messageId, role: 'ROLE_USER', content: [{ text }] } })
        return { id: value.task.id, state: value.task.status.state }
      }],
      ['JSON-RPC message/stream', async (text, messageId) => {
        const res = await postStream(url, rpc('message/stream', { message: v03Message(text, messageId) }))
        const { ids, states } = streamed(res.raw)
        return { id: ids[ids.length - 1], state: states[states.length - 1] }
      }],
      ['JSON-RPC SendStreamingMessage', async (text, messageId) => {
        const res = await postStream(url, rpc('SendStreamingMessage', { message: v10Message(text, messageId) }), { 'a2a-version': '1.0' })
        const { ids, states } = streamed(res.raw)
        return { id: ids[ids.length - 1], state: states[states.length - 1] }
      }],
      ['REST v1.0 message:stream', async (text, messageId) => {
        const res = await postJson(`${url}/message:stream`, { message: v10Message(text, messageId) })
        const { ids, states } = streamed(res.text)
        return { id: ids[ids.length - 1], state: states[states.length - 1] }
      }],
      ['gRPC v1.0 SendStreamingMessage', async (text, messageId) => {
        const { messages } = await streamAll(v1, 'SendStreamingMessage', { message: v10Message(text, messageId) })
        const last = messages[messages.length - 1]
        const task = last.task ?? last.statusUpdate
        return { id: task.taskId ?? task.id, state: task.status.state }
      }]
    ]
    for (const [name, send] of sends) {
      const text = fresh('hello')
      const messageId = fresh('m')
      const first = await send(text, messageId)
      const again = await send(text, messageId)
      t.equal(again.id, first.id, `${name}: the same task`)
      if (first.state !== 'any') t.match([first.state, again.state], [/completed|COMPLETED/, /completed|COMPLETED/], `${name}: both answered at completion`)
      t.equal(runs.get(text), 1, `${name}: the agent ran once`)
    }
  })

  t.test(`${backend}: a duplicate sent through another method or binding gets the same task too`, async t => {
    const { url, target, runs } = await app(t, {}, config)
    const { v1 } = grpcClients(t, target)
    const text = fresh('across')
    const messageId = fresh('m')
    const first = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))).json.result
    const rest = (await postJson(`${url}/message:send`, { message: v10Message(text, messageId) })).json.task
    const grpc = (await unary(v1, 'SendMessage', { message: v10Message(text, messageId) })).value.task
    const stream = streamed((await postStream(url, rpc('SendStreamingMessage', { message: v10Message(text, messageId) }), { 'a2a-version': '1.0' })).raw)
    t.same([rest.id, grpc.id, ...new Set(stream.ids)], [first.id, first.id, first.id])
    // No stream followed the first send's task, so no store kept its events (memory keeps none before a stream
    // follows; Redis stored the task once, completed): the duplicate stream starts from its snapshot.
    t.same(stream.states, ['TASK_STATE_COMPLETED'], 'the duplicate stream starts from the task\'s snapshot')
    t.equal(runs.get(text), 1)

    // A task first sent with a stream was followed from its start: a duplicate stream replays it from its first event.
    const streamedText = fresh('streamed')
    const streamedId = fresh('m')
    const send = async () => streamed((await postStream(url, rpc('SendStreamingMessage', { message: v10Message(streamedText, streamedId) }), { 'a2a-version': '1.0' })).raw)
    const original = await send()
    const again = await send()
    t.same(new Set([...original.ids, ...again.ids]).size, 1, 'one task')
    t.same(again.states, ['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'], 'the duplicate stream replays the task from its first event')
    t.equal(runs.get(streamedText), 1)
  })

  t.test(`${backend}: the same messageId with another message is -32602 naming message.messageId, in each version's shape`, async t => {
    const { url, target, runs } = await app(t, {}, config)
    const { v1 } = grpcClients(t, target)
    const messageId = fresh('m')
    const text = fresh('first')
    await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))
    const detail = `params.message.messageId: "${messageId}" was already used for another message`
    const v03 = (await postJson(url, rpc('message/send', { message: v03Message('other', messageId) }))).json
    t.same(v03.error, { code: -32602, message: 'Invalid params', data: detail }, 'v0.3: the detail as data')
    const meta = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId, { metadata: { k: 1 } }) }))).json
    t.equal(meta.error.code, -32602, 'other metadata is another message')
    const context = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId, { contextId: 'c' }) }))).json
    t.equal(context.error.code, -32602, 'another contextId too')
    const v10 = (await postJson(url, rpc('SendMessage', { message: v10Message('other', messageId) }), { 'a2a-version': '1.0' })).json
    t.match(v10.error, {
      code: -32602,
      data: [{ reason: 'INVALID_PARAMS' }, { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.messageId', description: `"${messageId}" was already used for another message` }] }]
    }, 'v1.0: the BadRequest field violation')
    const rest = await postJson(`${url}/message:send`, { message: v10Message('other', messageId) })
    t.equal(rest.status, 400)
    t.match(rest.json.error, { status: 'INVALID_ARGUMENT', details: [{ reason: 'INVALID_PARAMS' }, { fieldViolations: [{ field: 'message.messageId' }] }] })
    const grpc = await unary(v1, 'SendMessage', { message: v10Message('other', messageId) })
    t.equal(grpc.error?.code, 3, 'gRPC INVALID_ARGUMENT')
    t.match(statusDetails(grpc.error as any).details, [{ reason: 'INVALID_PARAMS' }, { fieldViolations: [{ field: 'message.messageId' }] }])
    const stream = parseSse((await postStream(url, rpc('SendStreamingMessage', { message: v10Message('other', messageId) }), { 'a2a-version': '1.0' })).raw)
    t.equal(stream.events[0].error.code, -32602, 'a stream: the error event')
    t.equal(runs.get('other'), undefined, 'never run')
  })

  t.test(`${backend}: another principal's messageId is its own`, async t => {
    const security = { enabled: true, auth: { api_key: { keys: [{ key: 'key-a', scopes: ['*'], id: 'a' }, { key: 'key-b', scopes: ['*'], id: 'b' }] } } }
    const { url, runs } = await app(t, {}, { ...config, security })
    const text = fresh('mine')
    const messageId = fresh('m')
    const send = async (key: string) => (await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }), { 'x-api-key': key })).json.result
    const [a, b, again] = [await send('key-a'), await send('key-b'), await send('key-a')]
    t.not(a.id, b.id, 'two tasks')
    t.equal(again.id, a.id, "each principal's duplicate gets its own")
    t.equal(runs.get(text), 2, 'two runs')
  })

  t.test(`${backend}: a window of 0 turns deduplication off`, async t => {
    const { url, runs } = await app(t, { dedupe_window: 0 }, config)
    const text = fresh('off')
    const messageId = fresh('m')
    const a = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))).json.result
    const b = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))).json.result
    t.not(a.id, b.id, 'two tasks')
    t.equal(runs.get(text), 2, 'two runs')
    // A stream too: each one is a new task, followed from its start.
    const streamText = fresh('off-stream')
    const streamId = fresh('m')
    const first = streamed((await postStream(url, rpc('message/stream', { message: v03Message(streamText, streamId) }))).raw)
    const second = streamed((await postStream(url, rpc('message/stream', { message: v03Message(streamText, streamId) }))).raw)
    t.not(first.ids[0], second.ids[0], 'two streamed tasks')
    t.equal(first.states.at(-1), 'completed')
    t.equal(second.states.at(-1), 'completed')
    t.equal(runs.get(streamText), 2, 'two streamed runs')
  })

  t.test(`${backend}: a duplicate of a send still running waits for it as its method would; a non-blocking one answers it as it stands`, async t => {
    const { url, runs, open } = await app(t, {}, config)
    const text = fresh('gate')
    const messageId = fresh('m')
    const first = postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))
    await until(() => runs.get(text) === 1)
    const now = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId), configuration: { blocking: false } }))).json.result
    t.equal(now.status.state, 'working', 'not blocking: the task as it stands')
    const blocking = postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))
    const stream = postStream(url, rpc('message/stream', { message: v03Message(text, messageId) }))
    open()
    const [a, b, s] = await Promise.all([first, blocking, stream])
    t.equal(b.json.result.id, a.json.result.id)
    t.equal(b.json.result.status.state, 'completed', 'blocking: once it completed')
    const followed = streamed(s.raw)
    t.same([...new Set(followed.ids)], [a.json.result.id])
    t.equal(followed.states[followed.states.length - 1], 'completed', 'the stream followed it to its end')
    t.equal(runs.get(text), 1)
  })

  t.test(`${backend}: a message continuing a task is appended and run once; its duplicate answers the task`, async t => {
    const { url, runs } = await app(t, {}, config)
    const asked = (await postJson(url, rpc('message/send', { message: v03Message(fresh('ask'), fresh('m')) }))).json.result
    t.equal(asked.status.state, 'input-required')
    const text = fresh('reply')
    const messageId = fresh('m')
    const reply = v03Message(text, messageId, { taskId: asked.id, contextId: asked.contextId })
    const first = (await postJson(url, rpc('message/send', { message: reply }))).json.result
    const again = (await postJson(url, rpc('message/send', { message: reply }))).json.result
    const stream = streamed((await postStream(url, rpc('message/stream', { message: reply }))).raw)
    t.equal(first.status.state, 'completed')
    t.same([again.id, again.status.state, ...new Set(stream.ids)], [asked.id, 'completed', asked.id])
    t.equal(again.history.filter((m: any) => m.messageId === messageId).length, 1, 'appended once')
    t.equal(runs.get(text), 1, 'run once')
    const refused = (await postJson(url, rpc('message/send', { message: v03Message('x', fresh('m'), { taskId: asked.id }) }))).json
    t.equal(refused.error.code, -32602, 'a message to a completed task is refused')
    t.equal(runs.get('x'), undefined)
  })

  t.test(`${backend}: a send refused before its task is made leaves the messageId free for a retry`, async t => {
    const { url, runs } = await app(t, {}, config)
    const messageId = fresh('m')
    const text = fresh('retry')
    const refused = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId, { taskId: 'no-such-task' }) }))).json
    t.equal(refused.error.code, -32001, 'the task is not found')
    const later = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId, { taskId: 'no-such-task' }) }))).json
    t.equal(later.error.code, -32001, 'its retry is handled again, not answered as a duplicate')
    t.equal(runs.get(text), undefined)
  })
}

methods(t, 'memory')

t.test('redis', async t => {
  const redis = await privateRedis(t)
  methods(t, 'redis', {
    tasks: { backend: 'kvcache' },
    push_notifications: { backend: 'kvcache' },
    services: { cache: { type: 'cache', url: redis.url } }
  })
})

t.test('postgres', async t => {
  const url = await testDatabase(t)
  methods(t, 'postgres', { tasks: { backend: 'postgres' }, push_notifications: { enabled: false }, services: { postgres: { url } } })
})

t.test('memory: a send refused for its principal\'s live tasks releases its messageId; its retry, once there is room, runs', async t => {
  const { url, runs, open } = await app(t, { max_live_per_principal: 1 })
  const gate = fresh('gate')
  const held = postJson(url, rpc('message/send', { message: v03Message(gate, fresh('m')) }))
  await until(() => runs.get(gate) === 1)
  const text = fresh('later')
  const messageId = fresh('m')
  const refused = await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))
  t.equal(refused.json.error.code, -32012, 'refused: too many unfinished tasks')
  open()
  await held
  const retried = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))).json.result
  t.equal(retried.status.state, 'completed', 'the retry is a first send')
  t.equal(runs.get(text), 1)
})

t.test('memory: a duplicate of a send the agent answered with a question answers it at once; the metrics count duplicates', async t => {
  const { executor, runs } = counting()
  const { url } = await listenGrpc(t, { executor, config: { metrics: { enabled: true } } })
  const text = fresh('ask')
  const messageId = fresh('m')
  const first = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))).json.result
  const again = (await postJson(url, rpc('message/send', { message: v03Message(text, messageId) }))).json.result
  t.same([again.id, again.status.state], [first.id, 'input_required'], 'the seed dialect')
  t.equal(runs.get(text), 1)
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /^a2a_sends_deduplicated_total 1$/m)
})
