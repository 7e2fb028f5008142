import t, { type Test } from 'tap'
import type { AgentExecutor } from '../../index.js'
import { build, listen, postStream, receiver, rpc, until, userMessage } from '../helper.js'

// Wire-level tests of the A2A v1.0 JSON-RPC methods (CONTRACT.md §11.2 to §11.4, §11.6): what a client library
// would hide. Each test names the rule it checks.

const V1 = { 'a2a-version': '1.0' }

function v1Message (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messageId: `m-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', parts: [{ text }], ...extra }
}

async function v1Call (app: Awaited<ReturnType<typeof build>>, method: string, params?: unknown, headers: Record<string, string> = V1) {
  const res = await app.inject({ method: 'POST', url: '/', headers, payload: rpc(method, params) })
  return { status: res.statusCode, body: res.json() }
}

/** No key anywhere in the answer is snake_case, and no v0.3 `kind` is there (CONTRACT.md §11.2). */
function assertProtoJson (t: Test, value: unknown, path = ''): void {
  if (typeof value !== 'object' || value === null) return
  for (const [key, item] of Object.entries(value)) {
    if (key === 'metadata' || key === 'data') continue
    if (!Array.isArray(value)) {
      if (key.includes('_')) t.fail(`snake_case key ${path}.${key}`)
      if (key === 'kind') t.fail(`v0.3 kind at ${path}`)
    }
    assertProtoJson(t, item, `${path}.${key}`)
  }
}

const HOLD: { release: () => void } = { release: () => {} }
/** Works until released: a task that stays `TASK_STATE_WORKING`. */
const holding: AgentExecutor = async function * (ctx) {
  yield 'first'
  await new Promise<void>(resolve => {
    HOLD.release = resolve
    ctx.signal.addEventListener('abort', () => resolve())
  })
  yield 'second'
}

t.test('§11.3 SendMessage: { task } in ProtoJSON, enum names, parts without kind; the task is readable in v0.3', async t => {
  const app = await build(t)
  const sent = await v1Call(app, 'SendMessage', { message: v1Message('hello'), metadata: { k: 'v' } })
  t.equal(sent.status, 200)
  const task = sent.body.result.task
  t.match(task, {
    id: String,
    contextId: String,
    status: { state: 'TASK_STATE_COMPLETED', timestamp: String },
    artifacts: [{ artifactId: String, name: 'Agent-result', parts: [{ text: 'hello' }] }],
    history: [{ role: 'ROLE_USER', parts: [{ text: 'hello' }] }],
    metadata: { k: 'v' }
  })
  t.same(Object.keys(sent.body.result), ['task'])
  assertProtoJson(t, sent.body)
  const v03 = await v1Call(app, 'tasks/get', { id: task.id }, {})
  t.match(v03.body.result, { kind: 'task', id: task.id, status: { state: 'completed' }, history: [{ kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'hello' }] }] })
})

t.test('§11.2 input: snake_case field names and enum numbers are accepted; answers never contain them', async t => {
  const app = await build(t)
  const sent = await v1Call(app, 'SendMessage', {
    message: { message_id: 'snake-1', role: 1, parts: [{ text: 'snake', metadata: { keep_me: 1 } }] },
    configuration: { history_length: 1, return_immediately: false }
  })
  t.equal(sent.body.result.task.status.state, 'TASK_STATE_COMPLETED')
  t.same(sent.body.result.task.history[0].parts[0], { text: 'snake', metadata: { keep_me: 1 } }, 'metadata keys are the client\'s own')
  t.equal(sent.body.result.task.history.length, 1, 'history_length read')
  assertProtoJson(t, sent.body)
  const listed = await v1Call(app, 'ListTasks', { status: 3, page_size: 5 })
  t.equal(listed.body.result.tasks.length, 1, 'status as its enum number (3 = COMPLETED)')
})

t.test('§11.2 parts: text, raw, url and data map to and from the v0.3 parts', async t => {
  const app = await build(t, { config: { agent: { name: 'parts', input_modes: ['*/*'] } } })
  const parts = [
    { text: 'a' },
    { raw: Buffer.from('bytes').toString('base64'), mediaType: 'application/octet-stream', filename: 'b.bin' },
    { url: 'https://example.com/c.png', mediaType: 'image/png' },
    { data: { d: [1, 2] } }
  ]
  const sent = await v1Call(app, 'SendMessage', { message: v1Message('', { parts }), configuration: { returnImmediately: true } })
  const id = sent.body.result.task.id
  t.same(sent.body.result.task.history[0].parts, parts)
  const v03 = await v1Call(app, 'tasks/get', { id }, {})
  t.same(v03.body.result.history[0].parts, [
    { kind: 'text', text: 'a' },
    { kind: 'file', file: { bytes: parts[1].raw, mimeType: 'application/octet-stream', name: 'b.bin' } },
    { kind: 'file', file: { uri: 'https://example.com/c.png', mimeType: 'image/png' } },
    { kind: 'data', data: { d: [1, 2] } }
  ])
  const two = await v1Call(app, 'SendMessage', { message: v1Message('', { parts: [{ text: 'a', url: 'https://x' }] }) })
  t.equal(two.body.error.code, -32602)
  t.same(two.body.error.data[1], {
    '@type': 'type.googleapis.com/google.rpc.BadRequest',
    fieldViolations: [{ field: 'message.parts.0', description: 'must have exactly one of text, raw, url, data' }]
  })
})

t.test('§11.4 errors: data is an ErrorInfo array; -32602 adds BadRequest field paths relative to params', async t => {
  const app = await build(t)
  const missing = await v1Call(app, 'GetTask', { id: 'nope' })
  t.same(missing.body.error, {
    code: -32001,
    message: 'Task not found',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { detail: 'task "nope" was not found' } }]
  })
  const bad = await v1Call(app, 'SendMessage', { message: { messageId: 'x', role: 'ROLE_USER' } })
  t.equal(bad.body.error.code, -32602)
  t.match(bad.body.error.data, [
    { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_PARAMS' },
    { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.parts', description: 'required' }] }
  ])
  const role = await v1Call(app, 'SendMessage', { message: v1Message('x', { role: 'user' }) })
  t.match(role.body.error.data[1], { fieldViolations: [{ field: 'message.role' }] }, 'v0.3 role names are not v1.0 enum names')
  const version = await v1Call(app, 'GetTask', { id: 'x' }, { 'a2a-version': '2.0' })
  t.match(version.body.error, { code: -32009, data: [{ reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org' }] })
  const v03 = await v1Call(app, 'tasks/get', { id: 'nope' }, {})
  t.equal(v03.body.error.data, 'task "nope" was not found', 'v0.3 methods keep the §4 data')
  const cancelDone = await v1Call(app, 'CancelTask', { id: (await v1Call(app, 'SendMessage', { message: v1Message('x') })).body.result.task.id })
  t.match(cancelDone.body.error, { code: -32002, data: [{ reason: 'TASK_NOT_CANCELABLE' }] })
})

t.test('§11.1 v1.0 methods and A2A-Version: absent, 1, 1.0.1 and 0.3 are served; 2.0, garbage and the query form are -32009', async t => {
  const app = await build(t)
  for (const version of [undefined, '1', '1.0.1', '0.3', '']) {
    const headers: Record<string, string> = version === undefined ? {} : { 'a2a-version': version }
    const res = await v1Call(app, 'ListTasks', {}, headers)
    t.type(res.body.result.totalSize, 'number', `A2A-Version ${JSON.stringify(version)}`)
  }
  for (const [headers, url] of [[{ 'a2a-version': '2.0' }, '/'], [{ 'a2a-version': 'garbage' }, '/'], [{}, '/?A2A-Version=9.1']] as const) {
    const res = await app.inject({ method: 'POST', url, headers, payload: rpc('ListTasks', {}, 'q') })
    t.equal(res.statusCode, 200)
    t.match(res.json(), {
      id: 'q',
      error: { code: -32009, message: 'Version not supported', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { detail: /is not supported; supported: 0\.3, 1\.0$/ } }] }
    }, `${JSON.stringify(headers)} ${url}`)
  }
})

t.test('§11.1 the method name picks the semantics, with or without the header', async t => {
  const app = await build(t)
  for (const headers of [{}, { 'a2a-version': '0.3' }, V1]) {
    const v1 = await v1Call(app, 'SendMessage', { message: v1Message('x') }, headers)
    t.equal(v1.body.result.task.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(headers))
    const v03 = await v1Call(app, 'message/send', { message: userMessage('x') }, headers)
    t.equal(v03.body.result.status.state, 'completed', JSON.stringify(headers))
  }
})

t.test('§11.3 GetTask historyLength: unset = all, 0 = none, N = the last N', async t => {
  const app = await build(t, { executor: async () => ({ kind: 'status', state: 'input_required', message: 'more?' }) })
  const first = (await v1Call(app, 'SendMessage', { message: v1Message('one') })).body.result.task
  t.equal(first.status.state, 'TASK_STATE_INPUT_REQUIRED', 'a blocking send returns at an interrupted state')
  await v1Call(app, 'SendMessage', { message: v1Message('two', { taskId: first.id }) })
  const all = (await v1Call(app, 'GetTask', { id: first.id })).body.result
  t.ok(all.history.length >= 2, 'both messages are in the history')
  t.same((await v1Call(app, 'GetTask', { id: first.id, historyLength: 0 })).body.result.history, [])
  const last = (await v1Call(app, 'GetTask', { id: first.id, historyLength: 1 })).body.result.history
  t.same(last, [all.history[all.history.length - 1]])
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const waiting = (await v1Call(app, 'SendMessage', { message: v1Message('three') })).body.result.task
  t.equal(waiting.status.state, 'TASK_STATE_INPUT_REQUIRED')
  const interrupted = await postStream(url, rpc('SubscribeToTask', { id: waiting.id }, 'wait'), V1)
  t.match(interrupted.events, [{ id: 'wait', result: { task: { id: waiting.id, status: { state: 'TASK_STATE_INPUT_REQUIRED' } } } }],
    'a task waiting for input: its snapshot, then the stream closes (it has not ended: no -32004)')
  const negative = await v1Call(app, 'GetTask', { id: first.id, historyLength: -1 })
  t.match(negative.body.error.data[1], { fieldViolations: [{ field: 'historyLength' }] })
})

t.test('§11.3 ListTasks: paging, filters, all four fields, pageSize is the page\'s count, includeArtifacts', async t => {
  const app = await build(t)
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    ids.push((await v1Call(app, 'SendMessage', { message: v1Message(`t${i}`, i < 2 ? { contextId: 'ctx-a' } : {}) })).body.result.task.id)
  }
  const empty = await v1Call(app, 'ListTasks', { contextId: 'none' })
  t.same(empty.body.result, { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 }, 'all four written even when 0 or ""')
  const page1 = (await v1Call(app, 'ListTasks', { pageSize: 2 })).body.result
  t.same(page1.tasks.map((task: any) => task.id), [ids[4], ids[3]], 'newest first')
  t.equal(page1.pageSize, 2)
  t.equal(page1.totalSize, 5)
  t.not(page1.nextPageToken, '')
  t.notOk('artifacts' in page1.tasks[0], 'no artifacts unless includeArtifacts')
  const page3 = (await v1Call(app, 'ListTasks', { pageSize: 2, pageToken: (await v1Call(app, 'ListTasks', { pageSize: 2, pageToken: page1.nextPageToken })).body.result.nextPageToken })).body.result
  t.same(page3.tasks.map((task: any) => task.id), [ids[0]])
  t.equal(page3.nextPageToken, '', 'the last page')
  t.equal(page3.pageSize, 1)
  const ctx = (await v1Call(app, 'ListTasks', { contextId: 'ctx-a', includeArtifacts: true, historyLength: 0 })).body.result
  t.same(ctx.tasks.map((task: any) => task.id), [ids[1], ids[0]])
  t.equal(ctx.totalSize, 2)
  t.match(ctx.tasks[0], { artifacts: [{ parts: [{ text: 't1' }] }], history: [] })
  const unset = (await v1Call(app, 'ListTasks', { contextId: '', pageToken: '', pageSize: 2 })).body.result
  t.same(unset.tasks.map((task: any) => task.id), [ids[4], ids[3]], 'empty strings are the proto\'s unset values')
  const state = (await v1Call(app, 'ListTasks', { status: 'TASK_STATE_WORKING' })).body.result
  t.equal(state.totalSize, 0)
  const future = (await v1Call(app, 'ListTasks', { statusTimestampAfter: new Date(Date.now() + 60_000).toISOString() })).body.result
  t.same(future, { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 })
  const past = (await v1Call(app, 'ListTasks', { statusTimestampAfter: '2020-01-01T00:00:00Z', pageSize: 3 })).body.result
  t.equal(past.tasks.length, 3)
  t.equal(past.totalSize, 5)
  const bad = await v1Call(app, 'ListTasks', { statusTimestampAfter: 'yesterday' })
  t.match(bad.body.error.data[1], { fieldViolations: [{ field: 'statusTimestampAfter' }] })
  // Row 13: Date.parse would take these (and answer an empty page); they are no RFC 3339 timestamps.
  for (const text of ['-1', '2026-13-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026']) {
    const refused = await v1Call(app, 'ListTasks', { statusTimestampAfter: text })
    t.match(refused.body.error, { code: -32602, data: [{}, { fieldViolations: [{ field: 'statusTimestampAfter' }] }] }, text)
  }
  const offset = (await v1Call(app, 'ListTasks', { statusTimestampAfter: '2020-01-01T02:00:00.5+02:00' })).body.result
  t.equal(offset.totalSize, 5, 'an offset is accepted')
  const badSize = await v1Call(app, 'ListTasks', { pageSize: 101 })
  t.match(badSize.body.error.data[1], { fieldViolations: [{ field: 'pageSize' }] })
  t.equal((await v1Call(app, 'ListTasks', { status: 'TASK_STATE_UNSPECIFIED' })).body.result.totalSize, 5, 'UNSPECIFIED is no filter')
  const badState = await v1Call(app, 'ListTasks', { status: 42 })
  t.match(badState.body.error.data[1], { fieldViolations: [{ field: 'status', description: 'is not a task state' }] })
})

t.test('§11.3 SendStreamingMessage: { task } first, then statusUpdate and artifactUpdate, no final, closed at the end', async t => {
  const executor: AgentExecutor = async function * () {
    yield 'one '
    yield 'two'
  }
  const { url } = await listen(t, { executor })
  const res = await postStream(url, rpc('SendStreamingMessage', { message: v1Message('x') }, 's1'), V1)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const results = res.events.map(e => e.result)
  t.same(results.map(r => Object.keys(r)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  t.ok(res.events.every(e => e.jsonrpc === '2.0' && e.id === 's1'))
  t.equal(results[0].task.status.state, 'TASK_STATE_SUBMITTED')
  t.match(results[1].statusUpdate, { taskId: results[0].task.id, contextId: results[0].task.contextId, status: { state: 'TASK_STATE_WORKING' } })
  t.match(results[2].artifactUpdate, { artifact: { parts: [{ text: 'one ' }] }, append: false })
  t.match(results[3].artifactUpdate, { artifact: { parts: [{ text: 'two' }] }, append: true })
  t.match(results[4].statusUpdate, { status: { state: 'TASK_STATE_COMPLETED' } })
  t.notOk(res.raw.includes('"final"'), 'no final in v1.0')
  for (const r of results) assertProtoJson(t, r)
})

t.test('§11.3 an error before the first event is one SSE event with the request id', async t => {
  const { url } = await listen(t)
  const res = await postStream(url, rpc('SendStreamingMessage', { message: { messageId: 'x', role: 'ROLE_USER', parts: [] } }, 'e1'), V1)
  t.equal(res.status, 200)
  t.equal(res.events.length, 1)
  t.match(res.events[0], { id: 'e1', error: { code: -32602, data: [{ reason: 'INVALID_PARAMS' }, { fieldViolations: [{ field: 'message.parts' }] }] } })
  const missing = await postStream(url, rpc('SubscribeToTask', { id: 'nope' }, 'e2'), V1)
  t.match(missing.events, [{ id: 'e2', error: { code: -32001, data: [{ reason: 'TASK_NOT_FOUND' }] } }])
})

t.test('§11.3 SubscribeToTask: live gets { task } then updates; a settled task is -32004; v0.3 and v1.0 streams follow one task', async t => {
  const { app, url } = await listen(t, { executor: holding })
  const sent = (await v1Call(app, 'SendMessage', { message: v1Message('x'), configuration: { returnImmediately: true } })).body.result.task
  await until(async () => (await v1Call(app, 'GetTask', { id: sent.id })).body.result.artifacts.length > 0)
  const v1 = postStream(url, rpc('SubscribeToTask', { id: sent.id }, 'sub'), V1)
  const v03 = postStream(url, rpc('tasks/resubscribe', { id: sent.id }, 'old'))
  await until(() => app.a2aTasks.bus.listenerCount(sent.id) >= 2)
  HOLD.release()
  const [a, b] = await Promise.all([v1, v03])
  t.match(a.events[0].result, { task: { id: sent.id, status: { state: 'TASK_STATE_WORKING' } } })
  t.match(a.events[a.events.length - 1].result, { statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } })
  t.match(b.events[0].result, { kind: 'task', id: sent.id, status: { state: 'in_progress' } })
  t.match(b.events[b.events.length - 1].result, { status: { state: 'completed' } })
  const settled = await postStream(url, rpc('SubscribeToTask', { id: sent.id }, 'late'), V1)
  t.match(settled.events, [{ id: 'late', error: { code: -32004, data: [{ reason: 'UNSUPPORTED_OPERATION' }] } }])
})

t.test('§11.3 CancelTask answers the bare Task; a v0.3 task is canceled through v1.0', async t => {
  const app = await build(t, { executor: holding })
  const task = (await v1Call(app, 'message/send', { message: userMessage('x'), configuration: { blocking: false } }, {})).body.result
  const canceled = await v1Call(app, 'CancelTask', { id: task.id })
  t.match(canceled.body.result, { id: task.id, status: { state: 'TASK_STATE_CANCELED' } })
  t.notOk('task' in canceled.body.result, 'the bare Task, not { task }')
})

t.test('§11.3 push configs: flat, client ids kept, "default" first, credentials never returned, paging, task_id', async t => {
  const app = await build(t)
  const task = (await v1Call(app, 'SendMessage', { message: v1Message('x') })).body.result.task
  const first = await v1Call(app, 'CreateTaskPushNotificationConfig', {
    taskId: task.id, url: 'https://hooks.example.com/a', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret-cred' }
  })
  t.same(first.body.result, { id: 'default', taskId: task.id, url: 'https://hooks.example.com/a', token: 'tok', authentication: { scheme: 'Bearer' } })
  const named = await v1Call(app, 'CreateTaskPushNotificationConfig', { task_id: task.id, id: 'mine', url: 'https://hooks.example.com/b' })
  t.same(named.body.result, { id: 'mine', taskId: task.id, url: 'https://hooks.example.com/b' })
  const got = await v1Call(app, 'GetTaskPushNotificationConfig', { task_id: task.id, id: 'default' })
  t.equal(got.body.result.url, 'https://hooks.example.com/a')
  const page = await v1Call(app, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: 1 })
  t.same(page.body.result.configs.map((c: any) => c.id), ['default'])
  t.equal(page.body.result.nextPageToken, '1')
  const rest = await v1Call(app, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageToken: '1' })
  t.same(rest.body.result, { configs: [{ id: 'mine', taskId: task.id, url: 'https://hooks.example.com/b' }], nextPageToken: '' })
  t.notMatch(JSON.stringify([first.body, got.body, page.body]), /secret-cred/)
  const badToken = await v1Call(app, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageToken: 'x' })
  t.match(badToken.body.error.data[1], { fieldViolations: [{ field: 'pageToken' }] })
  t.same((await v1Call(app, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'mine' })).body.result, null)
  const gone = await v1Call(app, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'mine' })
  t.match(gone.body.error, { code: -32001, data: [{ reason: 'TASK_NOT_FOUND' }] })
  const v03 = await v1Call(app, 'tasks/pushNotificationConfig/list', { id: task.id }, {})
  t.same(v03.body.result.map((c: any) => c.pushNotificationConfig.id), ['default'], 'one store for both versions')
  const unsafe = await v1Call(app, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'http://127.0.0.1/hook' })
  t.match(unsafe.body.error, { code: -32602, data: [{ reason: 'INVALID_PARAMS' }, { fieldViolations: [{ field: 'url' }] }] })
  const scheme = await v1Call(app, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://hooks.example.com/c', authentication: { scheme: 'Bad Scheme', credentials: 'x' } })
  t.match(scheme.body.error.data[1], { fieldViolations: [{ field: 'authentication.scheme' }] })
})

t.test('§11.3 with push off, the v1.0 push methods and an inline config are -32003', async t => {
  const app = await build(t, { config: { push_notifications: { enabled: false } } })
  const task = (await v1Call(app, 'SendMessage', { message: v1Message('x') })).body.result.task
  const create = await v1Call(app, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://hooks.example.com/a' })
  t.match(create.body.error, { code: -32003, data: [{ reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' }] })
  const inline = await v1Call(app, 'SendMessage', { message: v1Message('x'), configuration: { taskPushNotificationConfig: { url: 'https://hooks.example.com/a' } } })
  t.equal(inline.body.error.code, -32003)
})

t.test('§11.6 deliveries follow the config\'s version: v1.0 StreamResponse as application/a2a+json with Authorization', async t => {
  const hook = await receiver(t)
  const app = await build(t, {
    executor: holding,
    config: { push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } } }
  })
  const task = (await v1Call(app, 'SendMessage', {
    message: v1Message('x'),
    configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${hook.url}/v1`, token: 'tok-1', authentication: { scheme: 'Bearer', credentials: 'cred-v1' } } }
  })).body.result.task
  await v1Call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: `${hook.url}/v03`, token: 'tok-03', authentication: { schemes: ['Bearer'], credentials: 'cred-03' } } }, {})
  HOLD.release()
  await until(() => hook.received.some(r => r.path === '/v1' && r.body?.task?.status?.state === 'TASK_STATE_COMPLETED') &&
    hook.received.some(r => r.path === '/v03' && r.body?.status?.state === 'completed'))
  const v1 = hook.received.filter(r => r.path === '/v1')
  t.ok(v1.length >= 2, 'one delivery per stored state change')
  for (const r of v1) {
    t.equal(r.headers['content-type'], 'application/a2a+json')
    t.equal(r.headers.authorization, 'Bearer cred-v1')
    t.equal(r.headers['x-a2a-notification-token'], 'tok-1')
    t.same(Object.keys(r.body), ['task'])
    assertProtoJson(t, r.body)
  }
  const v03 = hook.received.filter(r => r.path === '/v03')
  for (const r of v03) {
    t.equal(r.headers['content-type'], 'application/json')
    t.equal(r.body.kind, 'task')
  }
})

t.test('§11.3 GetExtendedAgentCard: the pure v1.0 card for an authenticated caller, -32004 with security off; §11.4 refusals', async t => {
  const key = 'key-v10-0123456789'
  const app = await build(t, {
    config: {
      security: {
        enabled: true,
        auth: { api_key: { keys: [{ key, scopes: ['agent:read', 'files:read'], id: 'v10' }, { key: 'key-none-0123456789', scopes: [], id: 'none' }] } },
        method_scopes: { 'tasks/get': ['tasks:read'] }
      }
    }
  })
  const card = await v1Call(app, 'GetExtendedAgentCard', undefined, { ...V1, 'x-api-key': key })
  t.equal(card.status, 200)
  const body = card.body.result
  t.match(body, { name: String, supportedInterfaces: [{ protocolBinding: 'JSONRPC', protocolVersion: '1.0' }], capabilities: { extendedAgentCard: true } })
  for (const field of ['url', 'preferredTransport', 'protocolVersion', 'additionalInterfaces', 'supportsAuthenticatedExtendedCard', 'security']) {
    t.notOk(field in body, `no v0.3 ${field}`)
  }
  t.notOk('stateTransitionHistory' in body.capabilities)
  t.ok(body.skills.some((s: any) => s.id === 'tool-list_directory'), 'the skills its scopes allow')
  t.ok(Object.values(body.securitySchemes).every((s: any) => Object.keys(s).length === 1), 'schemes in their v1.0 form only')
  assertProtoJson(t, body)
  // A v1.0 method refused by the transport (403: its v0.3 twin's scope override applies) carries the v1.0 data.
  const denied = await v1Call(app, 'GetTask', { id: 'x' }, { ...V1, 'x-api-key': key })
  t.equal(denied.status, 403)
  t.match(denied.body.error, { code: -32011, data: [{ reason: 'PERMISSION_DENIED', domain: 'a2a-protocol.org' }] })
  const v03 = await v1Call(app, 'tasks/get', { id: 'x' }, { 'x-api-key': key })
  t.equal(typeof v03.body.error.data, 'string', 'the v0.3 twin keeps the §4 data')

  const open = await build(t)
  const off = await v1Call(open, 'GetExtendedAgentCard')
  t.match(off.body.error, { code: -32004, data: [{ reason: 'UNSUPPORTED_OPERATION' }] })
})

t.test('§11.4 a v1.0 method refused by authentication or the rate limit carries the v1.0 data; v0.3 keeps its own', async t => {
  const key = 'key-v10-refused-0123456789'
  const app = await build(t, {
    config: {
      security: {
        enabled: true,
        auth: { api_key: { keys: [{ key, scopes: [], id: 'limited' }] } },
        rate_limit: { requests_per_minute: 1, burst: 1 }
      }
    }
  })
  const none = await v1Call(app, 'GetTask', { id: 'x' })
  t.equal(none.status, 401)
  t.same(none.body, {
    jsonrpc: '2.0',
    id: null,
    error: { code: -32010, message: 'Unauthenticated', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-protocol.org', metadata: { detail: 'credentials required' } }] }
  })
  const v03 = await v1Call(app, 'tasks/get', { id: 'x' }, {})
  t.same(v03.body.error, { code: -32010, message: 'Unauthenticated', data: 'credentials required' })
  const garbage = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: '{"method":"GetTask",' })
  t.equal(garbage.statusCode, 401, 'an unreadable body of a refused request is still the refusal')
  const big = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(rpc('GetTask', { id: 'x'.repeat(70_000) })) })
  t.equal(big.statusCode, 401)
  t.equal(big.json().error.data, 'credentials required', 'a large body is refused unread, in the v0.3 form')
  const first = await v1Call(app, 'GetTask', { id: 'x' }, { 'x-api-key': key })
  t.equal(first.body.error.code, -32001)
  const limited = await v1Call(app, 'GetTask', { id: 'x' }, { 'x-api-key': key })
  t.equal(limited.status, 429)
  t.match(limited.body.error, { code: -32012, data: [{ reason: 'RATE_LIMITED' }] })
})
