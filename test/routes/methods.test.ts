import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { AgentExecutor } from '../../index.js'
import { build, call, userMessage } from '../helper.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.test('message/send answers with the completed task, its echo artifact and history', async t => {
  const app = await build(t)
  const message = userMessage('hello there')
  const { status, body } = await call(app, 'message/send', { message })
  t.equal(status, 200)
  const task = body.result
  t.match(task.id, UUID)
  t.match(task.contextId, UUID)
  t.equal(task.kind, 'task')
  t.equal(task.status.state, 'completed')
  t.ok(!Number.isNaN(Date.parse(task.status.timestamp)))
  t.equal(task.artifacts.length, 1)
  t.match(task.artifacts[0], { name: 'Agent-result', parts: [{ kind: 'text', text: 'hello there' }] })
  t.same(task.history, [{ ...message, taskId: task.id, contextId: task.contextId }])
  t.equal(task.metadata, null)
})

t.test('message/send keeps a given contextId and the metadata', async t => {
  const app = await build(t)
  const { body } = await call(app, 'message/send', { message: userMessage('x', { contextId: 'ctx-1' }), metadata: { a: 1 } })
  t.equal(body.result.contextId, 'ctx-1')
  t.same(body.result.metadata, { a: 1 })
})

t.test('message/send with blocking false returns at once and the task finishes later', async t => {
  const app = await build(t, { config: { agent: { name: 'Echo Agent', delay_ms: 50 } } })
  const { body } = await call(app, 'message/send', { message: userMessage('later'), configuration: { blocking: false } })
  t.match(body.result.status.state, /^(submitted|in_progress)$/)
  const done = await app.a2aTasks.waitSettled(await app.a2aTasks.store.get(body.result.id) as any, 5000)
  t.equal(done.task.status.state, 'completed')
  const got = await call(app, 'tasks/get', { id: body.result.id })
  t.equal(got.body.result.status.state, 'completed')
})

t.test('a blocking send past request_timeout returns the task as it stands, and it goes on', async t => {
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  const executor: AgentExecutor = async function * () {
    await gate
    yield 'finally'
  }
  const app = await build(t, { executor, config: { server: { request_timeout: 1 } } })
  const { body } = await call(app, 'message/send', { message: userMessage('slow') })
  t.equal(body.result.status.state, 'in_progress')
  release()
  const done = await app.a2aTasks.waitSettled(await app.a2aTasks.store.get(body.result.id) as any, 5000)
  t.equal(done.task.status.state, 'completed')
})

t.test('historyLength cuts the history in message/send and tasks/get', async t => {
  const app = await build(t)
  const sent = await call(app, 'message/send', { message: userMessage('a'), configuration: { historyLength: 0 } })
  t.same(sent.body.result.history, [])
  const got = await call(app, 'tasks/get', { id: sent.body.result.id, historyLength: 1 })
  t.equal(got.body.result.history.length, 1)
  const whole = await call(app, 'tasks/get', { id: sent.body.result.id })
  t.equal(whole.body.result.history.length, 1)
})

t.test('a message for an input_required task resumes it', async t => {
  const executor: AgentExecutor = async function * (ctx) {
    const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
    if (text === 'start') {
      yield { kind: 'status', state: 'input_required', message: 'your name?' }
      return
    }
    yield `hello ${text}`
  }
  const app = await build(t, { executor })
  const first = await call(app, 'message/send', { message: userMessage('start') })
  t.equal(first.body.result.status.state, 'input_required')
  t.match(first.body.result.status.message, { role: 'agent', parts: [{ kind: 'text', text: 'your name?' }] })
  const second = await call(app, 'message/send', {
    message: userMessage('Ada', { taskId: first.body.result.id, contextId: first.body.result.contextId })
  })
  t.equal(second.body.result.id, first.body.result.id)
  t.equal(second.body.result.status.state, 'completed')
  t.match(second.body.result.artifacts, [{ name: 'Agent-result', parts: [{ text: 'hello Ada' }] }])
  t.equal(second.body.result.history.length, 2)
})

t.test('a message for an unknown task gets -32001, for a finished one -32602', async t => {
  const app = await build(t)
  const unknown = await call(app, 'message/send', { message: userMessage('x', { taskId: 'nope' }) })
  t.same(unknown.body.error, { code: -32001, message: 'Task not found', data: 'task "nope" was not found' })
  const done = await call(app, 'message/send', { message: userMessage('x') })
  const again = await call(app, 'message/send', { message: userMessage('y', { taskId: done.body.result.id }) })
  t.match(again.body.error, { code: -32602, data: /is completed/ })
  const got = await call(app, 'tasks/get', { id: done.body.result.id })
  t.equal(got.body.result.history.length, 1, 'the refused message was not added')
})

t.test('a message whose contextId is not its task\'s gets -32602', async t => {
  const app = await build(t, { config: { agent: { name: 'Echo Agent', delay_ms: 5000 } } })
  const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { blocking: false } })
  const res = await call(app, 'message/send', { message: userMessage('y', { taskId: sent.body.result.id, contextId: 'other' }) })
  t.match(res.body.error, { code: -32602, data: 'params.message.contextId: does not match the task\'s contextId' })
  await call(app, 'tasks/cancel', { id: sent.body.result.id })
})

t.test('a part whose media type the agent does not take gets -32005 and no task is made', async t => {
  const app = await build(t)
  const message = userMessage('x', { parts: [{ kind: 'text', text: 'hi' }, { kind: 'file', file: { uri: 'https://x/y.png', mimeType: 'image/png' } }] })
  const res = await call(app, 'message/send', { message })
  t.match(res.body.error, { code: -32005, data: /params\.message\.parts\.1: media type image\/png/ })
  const list = await call(app, 'tasks/list', {})
  t.same(list.body.result.tasks, [])
})

t.test('a push config while push notifications are off gets -32601 and no task is made', async t => {
  const app = await build(t, { config: { push_notifications: { enabled: false } } })
  const res = await call(app, 'message/send', {
    message: userMessage('x'), configuration: { pushNotificationConfig: { url: 'https://hooks.example.com/a' } }
  })
  t.same(res.body.error, { code: -32601, message: 'Method not found', data: 'push notifications are not supported' })
  const list = await call(app, 'tasks/list', {})
  t.same(list.body.result.tasks, [])
})

t.test('tasks/get of an unknown task gets -32001 naming the id', async t => {
  const app = await build(t)
  const res = await call(app, 'tasks/get', { id: 'missing-1' })
  t.same(res.body.error, { code: -32001, message: 'Task not found', data: 'task "missing-1" was not found' })
})

t.test('tasks/cancel cancels a running task and aborts its executor; a second cancel gets -32002', async t => {
  let aborted = false
  const executor: AgentExecutor = ctx => new Promise(resolve => {
    ctx.signal.addEventListener('abort', () => { aborted = true; resolve() })
  })
  const app = await build(t, { executor })
  const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { blocking: false } })
  const canceled = await call(app, 'tasks/cancel', { id: sent.body.result.id })
  t.equal(canceled.body.result.status.state, 'canceled')
  t.ok(aborted)
  const again = await call(app, 'tasks/cancel', { id: sent.body.result.id })
  t.same(again.body.error, { code: -32002, message: 'Task cannot be canceled', data: `task "${sent.body.result.id}" is canceled` })
  const unknown = await call(app, 'tasks/cancel', { id: 'nope' })
  t.equal(unknown.body.error.code, -32001)
})

t.test('a failing executor makes the task failed with a safe message', async t => {
  const executor: AgentExecutor = async () => { throw new Error('db password is hunter2') }
  const app = await build(t, { executor })
  const res = await call(app, 'message/send', { message: userMessage('x') })
  t.equal(res.body.result.status.state, 'failed')
  t.match(res.body.result.status.message.parts[0].text, /agent failed/)
  t.notMatch(JSON.stringify(res.body), /hunter2/)
})

t.test('tasks/list lists the caller\'s tasks newest first, by context and state, a page at a time', async t => {
  const app = await build(t)
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const { body } = await call(app, 'message/send', { message: userMessage(`m${i}`, { contextId: i % 2 === 0 ? 'even' : 'odd' }) })
    ids.push(body.result.id)
  }
  const all = await call(app, 'tasks/list', {})
  t.same(all.body.result.tasks.map((x: any) => x.id), [...ids].reverse())
  t.equal(all.body.result.nextPageToken, '')
  const even = await call(app, 'tasks/list', { contextId: 'even' })
  t.same(even.body.result.tasks.map((x: any) => x.id), [ids[4], ids[2], ids[0]])
  const page1 = await call(app, 'tasks/list', { pageSize: 2, historyLength: 0 })
  t.same(page1.body.result.tasks.map((x: any) => x.id), [ids[4], ids[3]])
  t.same(page1.body.result.tasks[0].history, [])
  const page2 = await call(app, 'tasks/list', { pageSize: 2, pageToken: page1.body.result.nextPageToken })
  t.same(page2.body.result.tasks.map((x: any) => x.id), [ids[2], ids[1]])
  const completed = await call(app, 'tasks/list', { state: 'completed' })
  t.equal(completed.body.result.tasks.length, 5)
  const working = await call(app, 'tasks/list', { state: 'working' })
  t.same(working.body.result.tasks, [])
})

t.test('the a2a dialect writes A2A state names and accepts both spellings', async t => {
  const executor: AgentExecutor = async function * () {
    yield { kind: 'status', state: 'input_required', message: 'more?' }
  }
  const app = await build(t, { executor, config: { protocol: { dialect: 'a2a' } } })
  const res = await call(app, 'message/send', { message: userMessage('x') })
  t.equal(res.body.result.status.state, 'input-required')
  const byA2a = await call(app, 'tasks/list', { state: 'input-required' })
  t.equal(byA2a.body.result.tasks.length, 1)
  const byDefault = await call(app, 'tasks/list', { state: 'input_required' })
  t.equal(byDefault.body.result.tasks[0].status.state, 'input-required')
})

t.test('status answers with the agent, its version and uptime', async t => {
  const app = await build(t, { config: { agent: { name: 'Probe', version: '2.3.4' } } })
  const res = await call(app, 'status')
  t.match(res.body.result, { status: 'ok', agent: 'Probe', version: '2.3.4', uptime_seconds: Number })
  t.ok(res.body.result.uptime_seconds >= 0)
  t.ok(!Number.isNaN(Date.parse(res.body.result.timestamp)))
})

t.test('capabilities lists every method with its scopes', async t => {
  const app = await build(t, { config: { security: { method_scopes: { status: ['ops'] } } } })
  const res = await call(app, 'capabilities')
  const r = res.body.result
  t.match(r, { agent: 'Echo Agent', protocolVersion: '0.3.0', capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: true } })
  const byName = Object.fromEntries(r.methods.map((m: any) => [m.name, m]))
  t.same(byName.capabilities, { name: 'capabilities', scopes: ['agent:read'], allowed: true })
  t.same(byName.list_directory, { name: 'list_directory', scopes: ['files:read'], allowed: true })
  t.same(byName.status, { name: 'status', scopes: ['ops'], allowed: true })
  t.same(byName['message/send'].scopes, [])
  t.match(r.skills, [{ id: 'echo' }])
})

t.test('list_directory lists inside the root only', async t => {
  const root = t.testdir({ 'b.txt': 'bb', 'a.txt': 'a', sub: { 'c.txt': 'ccc' } })
  const app = await build(t, { config: { tools: { list_directory: { root } } } })
  const res = await call(app, 'list_directory', { path: '.' })
  t.same(res.body.result.entries.map((e: any) => [e.name, e.type]), [['a.txt', 'file'], ['b.txt', 'file'], ['sub', 'directory']])
  const sub = await call(app, 'list_directory', { path: 'sub' })
  t.match(sub.body.result, { path: 'sub', entries: [{ name: 'c.txt', type: 'file', size: 3 }] })
  const escape = await call(app, 'list_directory', { path: '../..' })
  t.match(escape.body.error, { code: -32602, data: /^params\.path: / })
  const absolute = await call(app, 'list_directory', { path: '/etc' })
  t.match(absolute.body.error, { code: -32602, data: /^params\.path: / })
})

t.test('the built-in agent runs tool commands and echoes the rest', async t => {
  const root = join(t.testdirName, 'ws')
  mkdirSync(root, { recursive: true })
  writeFileSync(join(root, 'file.txt'), 'x')
  const app = await build(t, { config: { tools: { list_directory: { root } } } })
  const status = await call(app, 'message/send', { message: userMessage('status') })
  t.match(status.body.result.artifacts[0], { name: 'Agent-result', parts: [{ kind: 'data', data: { status: 'ok', agent: 'Echo Agent' } }] })
  const list = await call(app, 'message/send', { message: userMessage('list_directory .') })
  t.match(list.body.result.artifacts[0].parts[0].data.entries, [{ name: 'file.txt' }])
  const bad = await call(app, 'message/send', { message: userMessage('list_directory ../..') })
  t.equal(bad.body.result.status.state, 'failed')
})

t.test('agent/getAuthenticatedExtendedCard needs an authenticated caller', async t => {
  const app = await build(t)
  const res = await call(app, 'agent/getAuthenticatedExtendedCard')
  t.equal(res.status, 401)
  t.match(res.body, { id: Number, error: { code: -32010 } })
})

t.test('file parts without a media type and data parts are accepted by the default input modes', async t => {
  const app = await build(t)
  const message = userMessage('x', { parts: [{ kind: 'file', file: { uri: 'https://x/blob' } }, { kind: 'data', data: { a: 1 } }] })
  const res = await call(app, 'message/send', { message })
  t.equal(res.body.result.status.state, 'completed')
  t.same(res.body.result.artifacts[0].parts, message.parts)
})

t.test('the */* input mode accepts a part of any media type', async t => {
  const app = await build(t, { config: { agent: { name: 'Echo Agent', input_modes: ['*/*'] } } })
  const parts = [{ kind: 'file', file: { uri: 'https://x/a.bin', mimeType: 'application/x-anything' } }, { kind: 'data', data: {} }]
  const res = await call(app, 'message/send', { message: userMessage('x', { parts }) })
  t.equal(res.body.result.status.state, 'completed')
  t.same(res.body.result.artifacts[0].parts, parts)
})

t.test('a media type without a slash is its own family: text/* takes it, image/* does not take audio', async t => {
  const app = await build(t, { config: { agent: { name: 'Echo Agent', input_modes: ['text/*', 'image/*'] } } })
  const file = (mimeType: string) => userMessage('x', { parts: [{ kind: 'file', file: { uri: 'https://x/a', mimeType } }] })
  t.equal((await call(app, 'message/send', { message: file('Text') })).body.result.status.state, 'completed')
  const refused = await call(app, 'message/send', { message: file('audio') })
  t.equal(refused.body.error.code, -32005)
  t.equal(refused.body.error.data, 'params.message.parts.0: media type audio is not accepted (text/*, image/*)')
})

t.test('wildcard input modes accept any media type of their family', async t => {
  const app = await build(t, { config: { agent: { name: 'Echo Agent', input_modes: ['text/*', 'image/*'] } } })
  const ok = await call(app, 'message/send', { message: userMessage('x', { parts: [{ kind: 'file', file: { uri: 'https://x/a.png', mimeType: 'IMAGE/PNG' } }] }) })
  t.equal(ok.body.result.status.state, 'completed')
  const refused = await call(app, 'message/send', { message: userMessage('x', { parts: [{ kind: 'data', data: {} }] }) })
  t.equal(refused.body.error.code, -32005)
})
