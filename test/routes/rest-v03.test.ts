import t from 'tap'
import { build, listen, parseSse, receiver, restCall, rpc, until, waitOrEcho } from '../helper.js'

// The v0.3 routes of the HTTP+JSON binding (CONTRACT.md §12): `/v1/...` with the v0.3 proto's ProtoJSON bodies, the
// JSON-RPC error object as the error body, and the tenant form of the v1.0 routes.

function message (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messageId: `v-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', content: [{ text }], ...extra }
}

const rest = restCall

function sseEvents (text: string): any[] {
  return parseSse(text).events
}

const executor = waitOrEcho

t.test('§12 POST /v1/message:send answers the SendMessageResponse { task } in the v0.3 proto form', async t => {
  const app = await build(t, { executor })
  const sent = await rest(app, 'POST', '/v1/message:send', { message: message('hi', { metadata: { m: 1 } }) })
  t.equal(sent.status, 200)
  t.match(sent.headers['content-type'], /^application\/a2a\+json/)
  const task = sent.body.task
  t.match(task, {
    id: String,
    contextId: String,
    status: { state: 'TASK_STATE_COMPLETED', timestamp: String },
    artifacts: [{ artifactId: String, parts: [{ text: 'echo: hi' }] }],
    history: [{ role: 'ROLE_USER', content: [{ text: 'hi' }], metadata: { m: 1 } }]
  })
  t.notOk('kind' in task, 'no kind in the proto form')
  t.notOk('parts' in task.history[0], 'a message has content, not parts')
  t.notOk('kind' in task.artifacts[0].parts[0])
  const v03 = await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/get', { id: task.id }) })
  t.match(v03.json().result, { kind: 'task', id: task.id, status: { state: 'completed' } }, 'the task JSON-RPC sees')
  const snake = await rest(app, 'POST', '/v1/message:send', { request: { message_id: 's1', role: 1, content: [{ text: 'snake' }] } },
    { 'content-type': 'application/a2a+json' })
  t.equal(snake.status, 200, 'snake_case, the field\'s proto name `request`, an enum number, application/a2a+json')
  t.match(snake.body.task.history[0], { messageId: 's1', role: 'ROLE_USER' })
})

t.test('§12 /v1 parts: text, file (fileWithUri, fileWithBytes) and data travel in and out of the proto form', async t => {
  const app = await build(t, {
    config: { agent: { name: 'Parts', input_modes: ['*/*'] } },
    async * executor (ctx) {
      yield { kind: 'artifact', artifactId: 'all', parts: ctx.message.parts }
    }
  })
  const content = [
    { text: 't' },
    { file: { fileWithUri: 'https://example.com/a.png', mimeType: 'image/png' } },
    { file: { fileWithBytes: 'aGk=', mimeType: 'text/plain' } },
    { data: { data: { k: [1, 2] } } }
  ]
  const sent = await rest(app, 'POST', '/v1/message:send', { message: message('', { content }) })
  t.equal(sent.status, 200)
  t.same(sent.body.task.history[0].content, content)
  t.same(sent.body.task.artifacts[0].parts, content)
  const stored = (await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/get', { id: sent.body.task.id }) })).json().result
  t.same(stored.history[0].parts.map((p: any) => p.kind), ['text', 'file', 'file', 'data'], 'stored in the internal form')
  t.same(stored.history[0].parts[1].file, { uri: 'https://example.com/a.png', mimeType: 'image/png' })
})

t.test('§12 /v1 configuration: ProtoJSON defaults (no blocking: true means no wait); none at all waits', async t => {
  const app = await build(t, { executor })
  const waits = await rest(app, 'POST', '/v1/message:send', { message: message('quick') })
  t.equal(waits.body.task.status.state, 'TASK_STATE_COMPLETED')
  const immediate = await rest(app, 'POST', '/v1/message:send', { message: message('wait'), configuration: { acceptedOutputModes: ['text/plain'] } })
  t.equal(immediate.status, 200)
  t.match(immediate.body.task.status.state, /^TASK_STATE_(SUBMITTED|WORKING)$/, 'a configuration without blocking: true does not wait')
  const blocking = await rest(app, 'POST', '/v1/message:send', { message: message('two'), configuration: { blocking: true, historyLength: 1 } })
  t.equal(blocking.body.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal(blocking.body.task.history.length, 1)
  const canceled = await rest(app, 'POST', `/v1/tasks/${immediate.body.task.id}:cancel`)
  t.equal(canceled.status, 200)
  t.match(canceled.body, { id: immediate.body.task.id, status: { state: 'TASK_STATE_CANCELLED' } })
})

t.test('§12 GET /v1/tasks/{id} with historyLength; GET /v1/tasks by state name of either form', async t => {
  const app = await build(t, { executor })
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await rest(app, 'POST', '/v1/message:send', { message: message(`m${i}`, { contextId: 'c03' }) })).body.task.id)
  const got = await rest(app, 'GET', `/v1/tasks/${ids[0]}?historyLength=0`)
  t.equal(got.status, 200)
  t.match(got.body, { id: ids[0], status: { state: 'TASK_STATE_COMPLETED' }, history: [] })
  const page = await rest(app, 'GET', '/v1/tasks?contextId=c03&pageSize=2&state=TASK_STATE_COMPLETED')
  t.equal(page.status, 200)
  t.same(page.body.tasks.map((x: any) => x.id), [ids[2], ids[1]])
  t.equal(page.body.tasks[0].status.state, 'TASK_STATE_COMPLETED')
  const next = await rest(app, 'GET', `/v1/tasks?contextId=c03&pageSize=2&pageToken=${encodeURIComponent(page.body.nextPageToken)}`)
  t.same(next.body.tasks.map((x: any) => x.id), [ids[0]])
  const byName = await rest(app, 'GET', '/v1/tasks?contextId=c03&state=completed')
  t.equal(byName.body.tasks.length, 3, 'the v0.3 JSON-RPC state name too')
  const working = await rest(app, 'GET', '/v1/tasks?contextId=c03&state=TASK_STATE_WORKING')
  t.same(working.body.tasks, [])
})

t.test('§12 /v1 errors are the JSON-RPC error object at the §12 HTTP status', async t => {
  const app = await build(t, { executor })
  const missing = await rest(app, 'GET', '/v1/tasks/nope')
  t.equal(missing.status, 404)
  t.match(missing.headers['content-type'], /^application\/a2a\+json/)
  t.same(missing.body, { code: -32001, message: 'Task not found', data: 'task "nope" was not found' })
  const id = (await rest(app, 'POST', '/v1/message:send', { message: message('x') })).body.task.id
  const done = await rest(app, 'POST', `/v1/tasks/${id}:cancel`, {})
  t.equal(done.status, 400)
  t.match(done.body, { code: -32002, message: 'Task cannot be canceled' })
  const oneof = await rest(app, 'POST', '/v1/message:send', { message: message('x', { content: [{ text: 'a', data: { data: {} } }] }) })
  t.equal(oneof.status, 400)
  t.same(oneof.body, { code: -32602, message: 'Invalid params', data: 'params.message.content.0: must have exactly one of text, file, data' })
  const noContent = await rest(app, 'POST', '/v1/message:send', { message: { messageId: 'x', role: 'ROLE_USER' } })
  t.match(noContent.body, { code: -32602, data: /^params\.message\.content: / })
  const role = await rest(app, 'POST', '/v1/message:send', { message: message('x', { role: 'ROLE_NONE' }) })
  t.match(role.body, { code: -32602, data: /^params\.message\.role: / })
  const noMessage = await rest(app, 'POST', '/v1/message:send', {})
  t.match(noMessage.body, { code: -32602, data: 'params.message: is required' })
  const file = await rest(app, 'POST', '/v1/message:send', { message: message('x', { content: [{ file: { mimeType: 'text/plain' } }] }) })
  t.match(file.body, { code: -32602, data: /^params\.message\.content\.0\.file: must have exactly one of fileWithUri, fileWithBytes/ })
  const data = await rest(app, 'POST', '/v1/message:send', { message: message('x', { content: [{ data: { data: 3 } }] }) })
  t.match(data.body, { code: -32602, data: /^params\.message\.content\.0\.data\.data: / })
  const config = await rest(app, 'POST', '/v1/message:send', { message: message('x'), configuration: 'yes' })
  t.match(config.body, { code: -32602, data: /^params\.configuration: must be an object/ })
  const badId = await rest(app, 'POST', '/v1/message:send', { message: message('x', { messageId: 7 }) })
  t.match(badId.body, { code: -32602, data: /messageId/ }, 'the method\'s own schema checks what the codec passes on')
  const array = await rest(app, 'POST', '/v1/message:send', [1])
  t.match(array, { status: 400, body: { code: -32602 } })
  const history = await rest(app, 'GET', `/v1/tasks/${id}?historyLength=-1`)
  t.match(history, { status: 400, body: { code: -32602, data: /historyLength/ } })
  const broken = await app.inject({ method: 'POST', url: '/v1/message:send', headers: { 'content-type': 'application/json' }, payload: '{"message":' })
  t.equal(broken.statusCode, 400)
  t.match(broken.json(), { code: -32700 })
  const text = await app.inject({ method: 'POST', url: '/v1/message:send', headers: { 'content-type': 'text/plain' }, payload: 'hi' })
  t.equal(text.statusCode, 415)
  t.match(text.json(), { code: -32600 })
  const v1 = await rest(app, 'GET', `/v1/tasks/${id}`, undefined, { 'a2a-version': '1.0' })
  t.equal(v1.status, 400, 'a v1.0 client on a v0.3 route is told where to go')
  t.match(v1.body, { code: -32009, data: /A2A 1\.0 routes are at the root/ })
  t.match(await rest(app, 'GET', `/v1/tasks/${id}`, undefined, { 'a2a-version': '7.1' }), { status: 400, body: { code: -32009 } })
  t.equal((await rest(app, 'GET', `/v1/tasks/${id}`, undefined, { 'a2a-version': '0.3' })).status, 200)
})

t.test('§12 /v1 route matching: {id}, {id}:cancel and {id}:subscribe kept apart; others are 404 in the v0.3 form', async t => {
  const { app, url } = await listen(t, { executor })
  const waiting = (await rest(app, 'POST', '/v1/message:send', { message: message('wait'), configuration: {} })).body.task
  await until(async () => (await rest(app, 'GET', `/v1/tasks/${waiting.id}`)).body.status.state === 'TASK_STATE_WORKING')
  const subscription = fetch(`${url}/v1/tasks/${waiting.id}:subscribe`, { headers: { accept: 'text/event-stream' } })
  await until(() => app.a2aStreams.size === 1)
  const canceled = await rest(app, 'POST', `/v1/tasks/${waiting.id}:cancel`)
  t.match(canceled.body, { id: waiting.id, status: { state: 'TASK_STATE_CANCELLED' } })
  const res = await subscription
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const events = sseEvents(await res.text())
  t.match(events[0], { task: { id: waiting.id, status: { state: 'TASK_STATE_WORKING' } } })
  t.match(events[events.length - 1], { statusUpdate: { taskId: waiting.id, status: { state: 'TASK_STATE_CANCELLED' }, final: true } })
  for (const [method, path] of [['POST', `/v1/tasks/${waiting.id}:archive`], ['POST', `/v1/tasks/${waiting.id}`], ['GET', `/v1/tasks/${waiting.id}:cancel`]] as const) {
    const answer = await rest(app, method, path)
    t.equal(answer.status, 404, `${method} ${path}`)
    t.match(answer.body, { code: -32601 })
  }
  // v0.3 keeps its own rule for an ended task: its snapshot, then the end.
  const ended = await fetch(`${url}/v1/tasks/${waiting.id}:subscribe`, { method: 'POST' })
  t.equal(ended.status, 200)
  t.same(sseEvents(await ended.text()).map(e => Object.keys(e)[0]), ['task'])
  const unknown = await fetch(`${url}/v1/tasks/nope:subscribe`, { method: 'POST' })
  t.equal(unknown.status, 404, 'an error before the first event is a plain HTTP error')
  t.match(await unknown.json(), { code: -32001 })
})

t.test('§12 POST /v1/message:stream: StreamResponse events in the v0.3 proto form, `final` on the last', async t => {
  const { url } = await listen(t, { executor })
  const res = await fetch(`${url}/v1/message:stream`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: message('s') })
  })
  t.equal(res.status, 200)
  const events = sseEvents(await res.text())
  t.same(events.map(e => Object.keys(e)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
  t.match(events[0], { task: { status: { state: 'TASK_STATE_SUBMITTED' }, history: [{ content: [{ text: 's' }] }] } })
  t.match(events[1], { statusUpdate: { status: { state: 'TASK_STATE_WORKING' }, final: false } })
  t.match(events[2], { artifactUpdate: { artifact: { parts: [{ text: 'echo: s' }] }, lastChunk: true } })
  t.match(events[3], { statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' }, final: true } })
  const bad = await fetch(`${url}/v1/message:stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(bad.status, 400)
  t.match(await bad.json(), { code: -32602 })
})

t.test('§12 /v1 push configs: create 201 in either body form, get, list, delete 204; deliveries are v0.3 ones', async t => {
  const hook = await receiver(t)
  const app = await build(t, { executor, config: { push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } } } })
  const id = (await rest(app, 'POST', '/v1/message:send', { message: message('wait'), configuration: {} })).body.task.id
  const created = await rest(app, 'POST', `/v1/tasks/${id}/pushNotificationConfigs`, {
    name: `tasks/${id}/pushNotificationConfigs/a`,
    pushNotificationConfig: { id: 'a', url: `${hook.url}/a`, token: 'tok', authentication: { schemes: ['Bearer'], credentials: 'cred' } }
  })
  t.equal(created.status, 201)
  t.match(created.body, { name: `tasks/${id}/pushNotificationConfigs/a`, pushNotificationConfig: { id: 'a', url: `${hook.url}/a`, token: 'tok' } })
  const request = await rest(app, 'POST', `/v1/tasks/${id}/pushNotificationConfigs`, {
    parent: `tasks/${id}`, configId: 'b', config: { pushNotificationConfig: { url: `${hook.url}/b` } }
  })
  t.equal(request.status, 201, 'the whole CreateTaskPushNotificationConfigRequest')
  t.equal(request.body.name, `tasks/${id}/pushNotificationConfigs/b`, 'its configId names the config')
  const got = await rest(app, 'GET', `/v1/tasks/${id}/pushNotificationConfigs/b`)
  t.match(got, { status: 200, body: { pushNotificationConfig: { id: 'b', url: `${hook.url}/b` } } })
  const listed = await rest(app, 'GET', `/v1/tasks/${id}/pushNotificationConfigs`)
  t.same(listed.body.configs.map((c: any) => c.name), [`tasks/${id}/pushNotificationConfigs/a`, `tasks/${id}/pushNotificationConfigs/b`])
  t.equal(listed.body.nextPageToken, '')
  const deleted = await rest(app, 'DELETE', `/v1/tasks/${id}/pushNotificationConfigs/b`)
  t.equal(deleted.status, 204)
  t.equal(deleted.body, undefined)
  t.match(await rest(app, 'GET', `/v1/tasks/${id}/pushNotificationConfigs/b`), { status: 404, body: { code: -32001 } })
  t.match(await rest(app, 'POST', `/v1/tasks/${id}/pushNotificationConfigs`, { url: 'x' }),
    { status: 400, body: { code: -32602, data: 'params.pushNotificationConfig: is required' } })
  t.match(await rest(app, 'POST', '/v1/tasks/nope/pushNotificationConfigs', { pushNotificationConfig: { url: `${hook.url}/n` } }),
    { status: 404, body: { code: -32001 } })
  await rest(app, 'POST', `/v1/tasks/${id}:cancel`)
  await until(() => hook.received.some(r => r.body?.status?.state === 'canceled'))
  const delivery = hook.received.find(r => r.path === '/a') as (typeof hook.received)[number]
  t.match(delivery.headers['content-type'], /^application\/json/, 'a config made on a /v1 route is a v0.3 config')
  t.equal(delivery.body.kind, 'task')
  t.equal(delivery.headers['x-a2a-notification-token'], 'tok')
})

t.test('§12 GET /v1/card: the public card without credentials; the caller\'s extended card with them', async t => {
  const key = 'key-card-0123456789'
  const app = await build(t, {
    executor,
    config: { security: { enabled: true, auth: { api_key: { keys: [{ key, scopes: ['files:read'], id: 'c' }] } } } }
  })
  const wellKnown = await app.inject('/.well-known/agent-card.json')
  const open = await app.inject('/v1/card')
  t.equal(open.statusCode, 200)
  t.equal(open.body, wellKnown.body, 'the well-known card, byte for byte')
  t.equal(open.headers.etag, wellKnown.headers.etag)
  t.equal((await app.inject({ url: '/v1/card', headers: { 'if-none-match': String(open.headers.etag) } })).statusCode, 304)
  const extended = await rest(app, 'GET', '/v1/card', undefined, { 'x-api-key': key })
  t.equal(extended.status, 200)
  t.ok(extended.body.skills.some((s: any) => s.name === 'list_directory'), 'the tools the caller may use')
  t.match(extended.body, { url: String, protocolVersion: '0.3.0', supportsAuthenticatedExtendedCard: true })
  const bearer = await rest(app, 'GET', '/v1/card', undefined, { authorization: `Bearer ${key}` })
  t.equal(bearer.body.skills.length, extended.body.skills.length, 'the key as a bearer token too')
  const wrong = await rest(app, 'GET', '/v1/card', undefined, { 'x-api-key': 'nope-nope-nope' })
  t.equal(wrong.status, 401, 'credentials given are checked')
  t.match(wrong.body, { code: -32010 })
  const none = await rest(app, 'GET', '/v1/tasks/x')
  t.equal(none.status, 401)
  t.match(none.body, { code: -32010 })
  t.equal(none.headers['www-authenticate'], 'Bearer realm="a2a"')
  const denied = await build(t, {
    executor,
    config: { security: { enabled: true, auth: { api_key: { keys: [{ key, scopes: [] }] } }, method_scopes: { 'tasks/list': ['tasks:read'] } } }
  })
  const refused = await rest(denied, 'GET', '/v1/tasks', undefined, { 'x-api-key': key })
  t.equal(refused.status, 403, 'the v0.3 method\'s scopes')
  t.match(refused.body, { code: -32011 })
})

t.test('§12 protocol.tenant: the v1.0 routes under /<tenant>/ too, the tenant on every interface, other tenants refused', async t => {
  const app = await build(t, { executor, config: { protocol: { tenant: 'acme' } } })
  const card = (await app.inject('/.well-known/agent-card.json')).json()
  t.ok(card.supportedInterfaces.every((i: any) => i.tenant === 'acme'))
  const v1Message = { messageId: 'tm', role: 'ROLE_USER', parts: [{ text: 'ten' }] }
  const sent = await rest(app, 'POST', '/acme/message:send', { message: v1Message })
  t.equal(sent.status, 200)
  const id = sent.body.task.id
  t.equal((await rest(app, 'GET', `/acme/tasks/${id}`)).body.id, id)
  t.equal((await rest(app, 'GET', `/tasks/${id}`)).body.id, id, 'the root routes stay')
  t.equal((await rest(app, 'GET', '/acme/tasks')).body.tasks.length, 1)
  t.equal((await rest(app, 'POST', `/acme/tasks/${id}:cancel`)).status, 400)
  t.equal((await rest(app, 'GET', '/other/tasks')).status, 404, 'another tenant has no routes')
  const named = await rest(app, 'POST', '/message:send', { message: v1Message, tenant: 'zzz' })
  t.equal(named.status, 400)
  t.match(named.body.error, { status: 'INVALID_ARGUMENT', details: [{}, { fieldViolations: [{ field: 'tenant' }] }] })
  const rpcOther = await app.inject({ method: 'POST', url: '/', headers: { 'a2a-version': '1.0' }, payload: rpc('GetTask', { id, tenant: 'zzz' }) })
  t.match(rpcOther.json().error, { code: -32602, message: 'Invalid params' })
  const rpcSame = await app.inject({ method: 'POST', url: '/', headers: { 'a2a-version': '1.0' }, payload: rpc('GetTask', { id, tenant: 'acme' }) })
  t.equal(rpcSame.json().result.id, id)
  const rpcNone = await app.inject({ method: 'POST', url: '/', headers: { 'a2a-version': '1.0' }, payload: rpc('GetTask', { id, tenant: '' }) })
  t.equal(rpcNone.json().result.id, id, '"" is no tenant')
  const plain = await build(t, { executor })
  const untenanted = await plain.inject({ method: 'POST', url: '/', headers: { 'a2a-version': '1.0' }, payload: rpc('ListTasks', { tenant: 'acme' }) })
  t.match(untenanted.json().error, { code: -32602, data: [{ metadata: { detail: /served without a tenant/ } }, { fieldViolations: [{ field: 'tenant' }] }] })
  t.equal((await rest(plain, 'GET', '/acme/tasks')).status, 404)
  await t.rejects(build(t, { config: { protocol: { tenant: 'v1' } } }), /tenant/, 'v1 is the v0.3 routes\' prefix')
  await t.rejects(build(t, { config: { protocol: { tenant: 'a/b' } } }), /tenant/)
})

t.test('§12 /v1 refusals: 429 with Retry-After by the request bucket and the stream cap, 413 over the size limit', async t => {
  const key = 'key-limits-0123456789'
  const { app, url } = await listen(t, {
    executor,
    config: {
      server: { max_request_size: 4096 },
      security: {
        enabled: true,
        auth: { api_key: { keys: [{ key, scopes: [], id: 'l' }] } },
        rate_limit: { enabled: true, requests_per_minute: 60, burst: 4, max_streams_per_principal: 1 }
      }
    }
  })
  const headers = { 'x-api-key': key, 'content-type': 'application/json' }
  const waiting = await (await fetch(`${url}/v1/message:send`, { method: 'POST', headers, body: JSON.stringify({ message: message('wait'), configuration: {} }) })).json() as any
  const open = fetch(`${url}/v1/tasks/${waiting.task.id}:subscribe`, { headers: { 'x-api-key': key } })
  await until(() => app.a2aStreams.size === 1)
  const second = await fetch(`${url}/v1/tasks/${waiting.task.id}:subscribe`, { method: 'POST', headers: { 'x-api-key': key } })
  t.equal(second.status, 429, 'the per-principal stream cap, before any event')
  t.match(await second.json(), { code: -32012, data: 'too many open streams for this principal' })
  const big = await fetch(`${url}/v1/message:send`, { method: 'POST', headers, body: JSON.stringify({ message: message('x'.repeat(5000)) }) })
  t.equal(big.status, 413)
  t.match(await big.json(), { code: -32600 })
  let limited: Response | undefined
  for (let i = 0; i < 10 && limited === undefined; i++) {
    const res = await fetch(`${url}/v1/tasks/${waiting.task.id}`, { headers: { 'x-api-key': key } })
    if (res.status === 429) limited = res
    else await res.arrayBuffer()
  }
  t.ok(limited, 'the bucket runs out')
  t.match(await (limited as Response).json(), { code: -32012 })
  t.match((limited as Response).headers.get('retry-after'), /^\d+$/)
  // The key's owner ends its task (the bucket is empty for HTTP now), which ends the open stream.
  await app.a2aTasks.cancel(waiting.task.id, { id: 'l', scheme: 'api_key', scopes: new Set(), all: false })
  t.match(await (await open).text(), /TASK_STATE_CANCELLED/)
})

t.test('row 19: GET /v1/card gives the extended card to a valid key under a custom API-key header', async t => {
  const key = 'key-card-custom-0123456789'
  const app = await build(t, {
    executor,
    config: { security: { enabled: true, auth: { api_key: { header: 'X-Agent-Key', keys: [{ key, scopes: ['files:read'], id: 'c' }] } } } }
  })
  const open = await rest(app, 'GET', '/v1/card')
  const extended = await rest(app, 'GET', '/v1/card', undefined, { 'x-agent-key': key })
  t.equal(extended.status, 200)
  t.ok(extended.body.skills.some((s: any) => s.name === 'list_directory'), 'the tools the caller may use')
  t.ok(extended.body.skills.length > open.body.skills.length, 'more than the public card')
  const wrong = await rest(app, 'GET', '/v1/card', undefined, { 'x-agent-key': 'nope-nope-nope' })
  t.equal(wrong.status, 401, 'a key under the custom header is checked')
})
