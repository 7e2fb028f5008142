import t from 'tap'
import { build, listen, parseSse, receiver, restCall, rpc, until, waitOrEcho } from '../helper.js'

// The HTTP+JSON binding of A2A v1.0 (CONTRACT.md §12), on the wire: routes, status codes, media types, error bodies.

function message (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messageId: `r-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', parts: [{ text }], ...extra }
}

const rest = restCall

const executor = waitOrEcho

t.test('§12 POST /message:send answers { task } as application/a2a+json; the task is the one JSON-RPC sees', async t => {
  const app = await build(t, { executor })
  const sent = await rest(app, 'POST', '/message:send', { message: message('hi') })
  t.equal(sent.status, 200)
  t.match(sent.headers['content-type'], /^application\/a2a\+json/)
  t.match(sent.body, { task: { id: String, status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ parts: [{ text: 'echo: hi' }] }] } })
  const id = sent.body.task.id
  const v03 = await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/get', { id }) })
  t.match(v03.json().result, { kind: 'task', id, status: { state: 'completed' } })
  const a2aJson = await rest(app, 'POST', '/message:send', { message: message('typed') }, { 'content-type': 'application/a2a+json' })
  t.equal(a2aJson.status, 200, 'application/a2a+json is accepted')
})

t.test('§12 GET /tasks/{id} with historyLength; GET /tasks with the ListTasks params as query parameters', async t => {
  const app = await build(t, { executor })
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await rest(app, 'POST', '/message:send', { message: message(`m${i}`, { contextId: 'ctx' }) })).body.task.id)
  const got = await rest(app, 'GET', `/tasks/${ids[0]}?historyLength=0`)
  t.equal(got.status, 200)
  t.match(got.body, { id: ids[0], history: [] })
  const page = await rest(app, 'GET', '/tasks?contextId=ctx&pageSize=2&status=TASK_STATE_COMPLETED&includeArtifacts=true')
  t.same(page.body.tasks.map((x: any) => x.id), [ids[2], ids[1]])
  t.match(page.body, { pageSize: 2, totalSize: 3 })
  t.ok(page.body.tasks[0].artifacts.length > 0)
  const next = await rest(app, 'GET', `/tasks?contextId=ctx&pageSize=2&pageToken=${encodeURIComponent(page.body.nextPageToken)}`)
  t.same(next.body.tasks.map((x: any) => x.id), [ids[0]])
  t.equal(next.body.nextPageToken, '')
  t.notOk('artifacts' in next.body.tasks[0], 'no artifacts unless includeArtifacts')
})

t.test('§12 bad query parameters and bodies are 400 INVALID_ARGUMENT naming the field', async t => {
  const app = await build(t, { executor })
  const id = (await rest(app, 'POST', '/message:send', { message: message('x') })).body.task.id
  const negative = await rest(app, 'GET', `/tasks/${id}?historyLength=-1`)
  t.equal(negative.status, 400)
  t.match(negative.body, {
    error: {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: /^Invalid params/,
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_PARAMS', domain: 'a2a-protocol.org' },
        { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'historyLength' }] }
      ]
    }
  })
  const notNumber = await rest(app, 'GET', '/tasks?pageSize=many')
  t.match(notNumber.body.error.details[1], { fieldViolations: [{ field: 'pageSize' }] })
  const time = await rest(app, 'GET', '/tasks?statusTimestampAfter=yesterday')
  t.match(time.body.error.details[1], { fieldViolations: [{ field: 'statusTimestampAfter' }] })
  for (const text of ['-1', '2026-13-01T00:00:00Z']) {
    const refused = await rest(app, 'GET', `/tasks?statusTimestampAfter=${encodeURIComponent(text)}`)
    t.equal(refused.status, 400, `row 13: ${text} is no RFC 3339 timestamp`)
    t.match(refused.body.error, { status: 'INVALID_ARGUMENT', details: [{}, { fieldViolations: [{ field: 'statusTimestampAfter' }] }] })
  }
  const offset = await rest(app, 'GET', `/tasks?statusTimestampAfter=${encodeURIComponent('2020-01-01T00:00:00-05:00')}`)
  t.equal(offset.status, 200, 'an offset is accepted')
  const noParts = await rest(app, 'POST', '/message:send', { message: { messageId: 'x', role: 'ROLE_USER' } })
  t.match(noParts.body.error, { status: 'INVALID_ARGUMENT', details: [{}, { fieldViolations: [{ field: 'message.parts' }] }] })
  const array = await rest(app, 'POST', '/message:send', [1])
  t.equal(array.status, 400)
  const broken = await app.inject({ method: 'POST', url: '/message:send', headers: { 'content-type': 'application/json' }, payload: '{"message":' })
  t.equal(broken.statusCode, 400)
  t.match(broken.json().error, { status: 'INVALID_ARGUMENT', details: [{ reason: 'PARSE_ERROR' }] })
  const text = await app.inject({ method: 'POST', url: '/message:send', headers: { 'content-type': 'text/plain' }, payload: 'hi' })
  t.equal(text.statusCode, 415)
  t.match(text.json().error, { code: 415, status: 'INVALID_ARGUMENT' })
})

t.test('§12 errors: 404 NOT_FOUND for a task, 400 FAILED_PRECONDITION for -32002 and -32009', async t => {
  const app = await build(t, { executor })
  const missing = await rest(app, 'GET', '/tasks/nope')
  t.equal(missing.status, 404)
  t.match(missing.headers['content-type'], /^application\/a2a\+json/)
  t.same(missing.body, {
    error: {
      code: 404,
      status: 'NOT_FOUND',
      message: 'Task not found: task "nope" was not found',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { detail: 'task "nope" was not found' } }]
    }
  })
  const id = (await rest(app, 'POST', '/message:send', { message: message('x') })).body.task.id
  const done = await rest(app, 'POST', `/tasks/${id}:cancel`)
  t.equal(done.status, 400)
  t.match(done.body.error, { status: 'FAILED_PRECONDITION', details: [{ reason: 'TASK_NOT_CANCELABLE' }] })
  const version = await rest(app, 'GET', `/tasks/${id}`, undefined, { 'a2a-version': '2.0' })
  t.equal(version.status, 400)
  t.match(version.body.error, { status: 'FAILED_PRECONDITION', details: [{ reason: 'VERSION_NOT_SUPPORTED' }] })
  const query = await rest(app, 'GET', `/tasks/${id}?A2A-Version=0.9`)
  t.equal(query.status, 400, 'the query form too')
  t.equal((await rest(app, 'GET', `/tasks/${id}`, undefined, { 'a2a-version': '1.0' })).status, 200)
})

t.test('§12 route matching: /tasks/{id}, {id}:cancel and {id}:subscribe are kept apart', async t => {
  const { app, url } = await listen(t, { executor })
  const waiting = (await rest(app, 'POST', '/message:send', { message: message('wait'), configuration: { returnImmediately: true } })).body.task
  await until(async () => (await rest(app, 'GET', `/tasks/${waiting.id}`)).body.status.state === 'TASK_STATE_WORKING')
  // GET /tasks/{id}:subscribe is a subscription, never GetTask of an id "{id}:subscribe".
  const subscription = fetch(`${url}/tasks/${waiting.id}:subscribe`, { headers: { accept: 'text/event-stream' } })
  await until(() => app.a2aStreams.size === 1)
  // POST /tasks/{id}:cancel cancels, with no body, {} or null.
  const canceled = await rest(app, 'POST', `/tasks/${waiting.id}:cancel`, null)
  t.equal(canceled.status, 200)
  t.match(canceled.body, { id: waiting.id, status: { state: 'TASK_STATE_CANCELED' } })
  const res = await subscription
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const events = parseSse(await res.text()).events
  t.match(events[0], { task: { id: waiting.id } })
  t.match(events[events.length - 1], { statusUpdate: { status: { state: 'TASK_STATE_CANCELED' } } })
  t.notOk('jsonrpc' in events[0], 'no JSON-RPC envelope on REST streams')
  t.equal((await rest(app, 'POST', `/tasks/${waiting.id}:archive`)).status, 404, 'an unknown verb')
  t.equal((await rest(app, 'POST', `/tasks/${waiting.id}`)).status, 404, 'POST /tasks/{id} is no route')
  t.equal((await rest(app, 'GET', `/tasks/${waiting.id}:cancel`)).status, 404, 'GET of :cancel is no route')
  const terminal = await rest(app, 'POST', `/tasks/${waiting.id}:subscribe`)
  t.equal(terminal.status, 400, 'a terminal task: a plain HTTP error before any event')
  t.match(terminal.body.error, { status: 'FAILED_PRECONDITION', details: [{ reason: 'UNSUPPORTED_OPERATION' }] })
  t.equal((await rest(app, 'POST', '/tasks/nope:subscribe')).status, 404)
})

t.test('§12 POST /message:stream: SSE data lines of StreamResponse, from { task } to the last update', async t => {
  const { url } = await listen(t, { executor })
  const res = await fetch(`${url}/message:stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: message('s') }) })
  t.equal(res.status, 200)
  const events = parseSse(await res.text()).events
  t.same(events.map(e => Object.keys(e)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
  t.match(events[3], { statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } })
  const bad = await fetch(`${url}/message:stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(bad.status, 400, 'an error before the first event is a plain HTTP error')
  t.match(await bad.json(), { error: { status: 'INVALID_ARGUMENT' } })
})

t.test('§12 push configs: create 201, get, list, delete 204, on the task of the path', async t => {
  const hook = await receiver(t)
  const app = await build(t, { executor, config: { push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } } } })
  const id = (await rest(app, 'POST', '/message:send', { message: message('wait'), configuration: { returnImmediately: true } })).body.task.id
  const created = await rest(app, 'POST', `/tasks/${id}/pushNotificationConfigs`, { url: `${hook.url}/r`, authentication: { scheme: 'Bearer', credentials: 'c' } })
  t.equal(created.status, 201)
  t.same(created.body, { id: 'default', taskId: id, url: `${hook.url}/r`, authentication: { scheme: 'Bearer' } })
  const named = await rest(app, 'POST', `/tasks/${id}/pushNotificationConfigs`, { id: 'mine', url: `${hook.url}/m`, taskId: 'ignored' })
  t.equal(named.body.taskId, id, 'the path names the task')
  t.equal((await rest(app, 'GET', `/tasks/${id}/pushNotificationConfigs/mine`)).body.url, `${hook.url}/m`)
  const listed = await rest(app, 'GET', `/tasks/${id}/pushNotificationConfigs?pageSize=1`)
  t.same(listed.body, { configs: [created.body], nextPageToken: '1' })
  const deleted = await rest(app, 'DELETE', `/tasks/${id}/pushNotificationConfigs/mine`)
  t.equal(deleted.status, 204)
  t.equal(deleted.body, undefined)
  t.equal((await rest(app, 'GET', `/tasks/${id}/pushNotificationConfigs/mine`)).status, 404)
  await rest(app, 'POST', `/tasks/${id}:cancel`, {})
  await until(() => hook.received.some(r => r.body?.task?.status?.state === 'TASK_STATE_CANCELED'))
  t.equal(hook.received[0].headers['content-type'], 'application/a2a+json', 'a config made over REST is a v1.0 config')
})

t.test('§12 with security on: 401 UNAUTHENTICATED, 403 PERMISSION_DENIED by the twin\'s scopes, the extended card', async t => {
  const key = 'key-rest-0123456789'
  const app = await build(t, {
    executor,
    config: {
      security: {
        enabled: true,
        auth: { api_key: { keys: [{ key, scopes: ['agent:read'], id: 'rest' }] } },
        method_scopes: { 'tasks/list': ['tasks:read'] }
      }
    }
  })
  const none = await rest(app, 'GET', '/tasks/x')
  t.equal(none.status, 401)
  t.equal(none.headers['www-authenticate'], 'Bearer realm="a2a"')
  t.match(none.body.error, { code: 401, status: 'UNAUTHENTICATED', details: [{ reason: 'UNAUTHENTICATED' }] })
  const denied = await rest(app, 'GET', '/tasks', undefined, { 'x-api-key': key })
  t.equal(denied.status, 403)
  t.match(denied.body.error, { status: 'PERMISSION_DENIED', details: [{ reason: 'PERMISSION_DENIED' }] })
  const card = await rest(app, 'GET', '/extendedAgentCard', undefined, { 'x-api-key': key })
  t.equal(card.status, 200)
  t.match(card.body, { capabilities: { extendedAgentCard: true }, supportedInterfaces: [{ protocolBinding: 'JSONRPC' }, { protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }] })
  t.notOk('url' in card.body)
})

t.test('§12 the card lists HTTP+JSON at 1.0 and 0.3; protocol.rest: false removes the routes and the entries', async t => {
  const app = await build(t)
  const card = (await app.inject('/.well-known/agent-card.json')).json()
  t.same(card.supportedInterfaces.map((i: any) => `${i.protocolBinding} ${i.protocolVersion}`),
    ['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3'])
  t.same(card.additionalInterfaces.map((i: any) => i.transport), ['JSONRPC', 'HTTP+JSON'], 'offered to v0.3 clients too')
  const off = await build(t, { config: { protocol: { rest: false } } })
  const offCard = (await off.inject('/.well-known/agent-card.json')).json()
  t.same(offCard.supportedInterfaces.map((i: any) => i.protocolBinding), ['JSONRPC', 'JSONRPC'])
  t.equal((await rest(off, 'POST', '/message:send', { message: message('x') })).status, 404)
  t.equal((await rest(off, 'GET', '/tasks')).status, 404)
  t.equal((await rest(off, 'POST', '/v1/message:send', { message: { messageId: 'm', role: 'ROLE_USER', content: [{ text: 'x' }] } })).status, 404)
  t.equal((await rest(off, 'GET', '/v1/card')).status, 404)
})

t.test('§12 the HTTP status and google.rpc.Status of each kind of A2A error', async t => {
  const { restStatus, statusBody } = await import('../../routes/rest.js')
  const { JsonRpcError } = await import('../../services/kernel/errors.js')
  t.same(statusBody(new JsonRpcError(-32603, 'Internal error')).error, {
    code: 500, status: 'INTERNAL', message: 'Internal error', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INTERNAL', domain: 'a2a-protocol.org', metadata: {} }]
  })
  t.equal(restStatus(new JsonRpcError(-32006, 'Invalid agent response')), 500)
  t.match(statusBody(new JsonRpcError(-32603, 'Internal error', 'storage unavailable', 503)).error, { code: 503, status: 'UNAVAILABLE', details: [{ reason: 'UNAVAILABLE' }] })
  t.match(statusBody(new JsonRpcError(-32600, 'Invalid Request', 'the body is larger than the limit', 413)).error, { code: 413, status: 'INVALID_ARGUMENT' })
  t.match(statusBody(new JsonRpcError(-32012, 'Rate limited', 'slow down', 429)).error, { code: 429, status: 'RESOURCE_EXHAUSTED' })
  t.match(statusBody(new JsonRpcError(-32005, 'Incompatible content types', 'x')).error, { code: 400, status: 'FAILED_PRECONDITION' })
  t.match(statusBody(new JsonRpcError(-32000, 'Odd', undefined, 418)).error, { code: 418, status: 'INTERNAL', message: 'Odd' })
})

t.test('§12 a body that is no object, and a repeated query parameter, are 400 naming what is wrong', async t => {
  const app = await build(t, { executor })
  const text = await rest(app, 'POST', '/message:send', 'just text')
  t.match(text.body.error, { status: 'INVALID_ARGUMENT', details: [{}, { fieldViolations: [{ field: '', description: 'the body must be a JSON object' }] }] })
  const twice = await rest(app, 'GET', '/tasks?pageSize=1&pageSize=2')
  t.match(twice.body.error, { status: 'INVALID_ARGUMENT', details: [{}, { fieldViolations: [{ field: 'pageSize' }] }] })
  const flag = await rest(app, 'GET', '/tasks?includeArtifacts=yes')
  t.match(flag.body.error.details[1], { fieldViolations: [{ field: 'includeArtifacts' }] })
})

t.test('§12 REST calls are counted in the metrics under their v1.0 method; the A2A-Version query parameter is no param', async t => {
  const app = await build(t, { executor, config: { metrics: { enabled: true } } })
  const id = (await rest(app, 'POST', '/message:send?A2A-Version=1.0', { message: message('x') })).body.task.id
  t.equal((await rest(app, 'GET', `/tasks/${id}?A2A-Version=1.0&historyLength=1`)).status, 200)
  t.equal((await rest(app, 'GET', '/tasks/nope')).status, 404)
  t.equal((await rest(app, 'GET', '/tasks/nope', undefined, { 'a2a-version': '3.0' })).status, 400)
  const canceledWith = await rest(app, 'POST', `/tasks/${id}:cancel`, { metadata: { why: 'done' } })
  t.match(canceledWith.body.error, { status: 'FAILED_PRECONDITION' }, 'a body with metadata is read (the task has ended)')
  const text = (await app.inject('/metrics')).body
  t.match(text, /a2a_rpc_requests_total\{method="SendMessage",code="0"\} 1/)
  t.match(text, /a2a_rpc_requests_total\{method="GetTask",code="0"\} 1/)
  t.match(text, /a2a_rpc_requests_total\{method="GetTask",code="-32001"\} 1/)
  t.match(text, /a2a_rpc_requests_total\{method="unknown",code="-32009"\} 1/, 'refused before a route named its method')
  t.match(text, /a2a_rpc_requests_total\{method="CancelTask",code="-32002"\} 1/)
})

t.test('§12 REST streams share server.max_streams and the per-principal cap: 429 before any event', async t => {
  const key = 'key-rest-streams-0123456789'
  const { app, url } = await listen(t, {
    executor,
    config: {
      server: { max_streams: 2 },
      security: { enabled: true, auth: { api_key: { keys: [{ key, scopes: [], id: 's' }] } }, rate_limit: { max_streams_per_principal: 1 } }
    }
  })
  const headers = { 'x-api-key': key, 'content-type': 'application/json' }
  const waiting = (await rest(app, 'POST', '/message:send', { message: message('wait'), configuration: { returnImmediately: true } }, { 'x-api-key': key })).body.task
  const open = await fetch(`${url}/tasks/${waiting.id}:subscribe`, { method: 'POST', headers })
  t.equal(open.status, 200)
  const second = await fetch(`${url}/tasks/${waiting.id}:subscribe`, { method: 'POST', headers })
  t.equal(second.status, 429)
  t.equal(second.headers.get('retry-after'), '1')
  t.match(await second.json(), { error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ reason: 'RATE_LIMITED', metadata: { detail: 'too many open streams for this principal' } }] } })
  await rest(app, 'POST', `/tasks/${waiting.id}:cancel`, undefined, { 'x-api-key': key })
  await open.text()
})

t.test('§12 a full server refuses a REST stream with 429 server.max_streams', async t => {
  const { app, url } = await listen(t, { executor, config: { server: { max_streams: 1 } } })
  const waiting = (await rest(app, 'POST', '/message:send', { message: message('wait'), configuration: { returnImmediately: true } })).body.task
  const open = await fetch(`${url}/tasks/${waiting.id}:subscribe`)
  t.equal(open.status, 200)
  await until(() => app.a2aStreams.size === 1)
  const refused = await fetch(`${url}/tasks/${waiting.id}:subscribe`)
  t.equal(refused.status, 429)
  t.match(await refused.json(), { error: { status: 'RESOURCE_EXHAUSTED', details: [{ metadata: { detail: 'server.max_streams reached' } }] } })
  await rest(app, 'POST', `/tasks/${waiting.id}:cancel`)
  await open.text()
})

t.test('§12 GET /openapi.json: a valid OpenAPI 3.1 document of every REST route, from the methods\' schemas', async t => {
  const { Validator } = await import('@seriousme/openapi-schema-validator')
  const { REST_OPERATIONS, REST03_OPERATIONS } = await import('../../services/rest/openapi.js')
  const app = await build(t, { executor, prefix: '/agent' })
  const res = await app.inject('/agent/openapi.json')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const doc = res.json()
  const result = await new Validator().validate(doc)
  t.same(result.errors, undefined, 'no schema errors')
  t.equal(result.valid, true, 'valid against the OpenAPI 3.1 schema')
  t.match(doc, { openapi: '3.1.0', servers: [{ url: 'http://127.0.0.1:8000/agent/' }] })
  t.same(Object.keys(doc.paths), ['/message:send', '/message:stream', '/tasks/{id}', '/tasks', '/tasks/{id}:cancel', '/tasks/{id}:subscribe',
    '/tasks/{taskId}/pushNotificationConfigs', '/tasks/{taskId}/pushNotificationConfigs/{id}', '/extendedAgentCard',
    '/v1/message:send', '/v1/message:stream', '/v1/tasks/{id}', '/v1/tasks', '/v1/tasks/{id}:cancel', '/v1/tasks/{id}:subscribe',
    '/v1/tasks/{taskId}/pushNotificationConfigs', '/v1/tasks/{taskId}/pushNotificationConfigs/{configId}', '/v1/card'])
  t.match(doc.paths['/v1/message:send'].post, {
    tags: ['A2A v0.3'],
    requestBody: { content: { 'application/json': { schema: { required: ['message'] } } } },
    responses: { default: { content: { 'application/a2a+json': { schema: { $ref: '#/components/schemas/Error03' } } } } }
  })
  t.match(doc.paths['/message:send'].post, {
    operationId: 'SendMessage',
    requestBody: { required: true, content: { 'application/a2a+json': { schema: { required: ['message'] } } } },
    responses: { 200: { content: { 'application/a2a+json': { schema: { properties: { task: { properties: { id: { type: 'string' } } } } } } } } }
  })
  const list = doc.paths['/tasks'].get.parameters.map((p: any) => `${p.in} ${p.name}`)
  t.same(list, ['query contextId', 'query status', 'query pageSize', 'query pageToken', 'query historyLength', 'query statusTimestampAfter', 'query includeArtifacts'])
  t.same(doc.paths['/tasks/{taskId}/pushNotificationConfigs'].post.responses['201'] !== undefined, true, 'create answers 201')
  t.ok(doc.paths['/tasks/{taskId}/pushNotificationConfigs/{id}'].delete.responses['204'], 'delete answers 204')
  t.notOk('taskId' in doc.paths['/tasks/{taskId}/pushNotificationConfigs'].post.requestBody.content['application/json'].schema.properties, 'the path names the task')
  // Every documented operation is served: nothing answers with the framework's own 404.
  for (const op of REST_OPERATIONS) {
    const url = '/agent' + op.path.replace('{taskId}', 'missing').replace('{id}', 'missing')
    const answer = await app.inject({ method: op.method.toUpperCase() as 'GET', url, ...(op.params === 'body' ? { payload: {} } : {}) })
    t.match(answer.headers['content-type'], /^application\/a2a\+json/, `${op.method} ${op.path} is routed`)
  }
  // Each on a missing task (but the list, which has none to miss): the v0.3 error object.
  for (const op of REST03_OPERATIONS.filter(o => o.path !== '/v1/card' && o.path !== '/v1/tasks')) {
    const url = '/agent' + op.path.replace('{taskId}', 'missing').replace('{id}', 'missing').replace('{configId}', 'missing')
    const answer = await app.inject({ method: op.method.toUpperCase() as 'GET', url, ...(op.body !== undefined ? { payload: {} } : {}) })
    t.match(answer.headers['content-type'], /^application\/a2a\+json/, `${op.method} ${op.path} is routed`)
    t.type(answer.json().code, 'number', `${op.method} ${op.path}: the v0.3 error object`)
  }
})

t.test('§12 the /v1 answers are what the OpenAPI document says they are (their TypeBox schemas)', async t => {
  const { Value } = await import('@sinclair/typebox/value')
  const { REST03_OPERATIONS } = await import('../../services/rest/openapi.js')
  const { Error03Schema } = await import('../../schemas/v03-rest.js')
  const hook = await receiver(t)
  const { app, url } = await listen(t, { executor, config: { push_notifications: { config: { allowed_networks: ['127.0.0.0/8'] } } } })
  const schema = (path: string, method: string) => REST03_OPERATIONS.find(o => o.path === path && o.method === method)?.result as any
  const check = (what: string, s: any, body: unknown) => t.ok(Value.Check(s, body), `${what}: ${JSON.stringify([...Value.Errors(s, body)].slice(0, 2).map(e => `${e.path} ${e.message}`))}`)
  const sent = await rest(app, 'POST', '/v1/message:send', { message: { messageId: 'o1', role: 'ROLE_USER', content: [{ text: 'x' }], metadata: { a: 1 } } })
  check('send', schema('/v1/message:send', 'post'), sent.body)
  const id = sent.body.task.id
  check('get', schema('/v1/tasks/{id}', 'get'), (await rest(app, 'GET', `/v1/tasks/${id}`)).body)
  check('list', schema('/v1/tasks', 'get'), (await rest(app, 'GET', '/v1/tasks')).body)
  const config = await rest(app, 'POST', `/v1/tasks/${id}/pushNotificationConfigs`, { pushNotificationConfig: { id: 'c', url: `${hook.url}/c`, authentication: { schemes: ['Bearer'] } } })
  check('create', schema('/v1/tasks/{taskId}/pushNotificationConfigs', 'post'), config.body)
  check('get config', schema('/v1/tasks/{taskId}/pushNotificationConfigs/{configId}', 'get'), (await rest(app, 'GET', `/v1/tasks/${id}/pushNotificationConfigs/c`)).body)
  check('list configs', schema('/v1/tasks/{taskId}/pushNotificationConfigs', 'get'), (await rest(app, 'GET', `/v1/tasks/${id}/pushNotificationConfigs`)).body)
  const streamed = await fetch(`${url}/v1/message:stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: { messageId: 'o2', role: 'ROLE_USER', content: [{ text: 's' }] } }) })
  for (const event of parseSse(await streamed.text()).events) check('stream event', schema('/v1/message:stream', 'post'), event)
  check('an error', Error03Schema, (await rest(app, 'POST', `/v1/tasks/${id}:cancel`)).body)
})

t.test('§12 with security on, GET /openapi.json needs credentials and lists the security schemes in OpenAPI form', async t => {
  const key = 'key-openapi-0123456789'
  const app = await build(t, { executor, config: { security: { enabled: true, auth: { api_key: { keys: [{ key, scopes: [], id: 'o' }] } } } } })
  t.equal((await app.inject('/openapi.json')).statusCode, 401)
  const doc = (await app.inject({ url: '/openapi.json', headers: { 'x-api-key': key } })).json()
  t.same(doc.components.securitySchemes, {
    apiKey: { type: 'apiKey', description: 'An API key', name: 'X-API-Key', in: 'header' },
    bearer: { type: 'http', description: 'A static bearer token or an API key', scheme: 'bearer' }
  }, 'the card\'s schemes without their A2A v1.0 form')
  t.same(doc.security, [{ apiKey: [] }, { bearer: [] }])
  const { Validator } = await import('@seriousme/openapi-schema-validator')
  t.equal((await new Validator().validate(doc)).valid, true)
})

t.test('§12 one task over REST, JSON-RPC v1.0 and JSON-RPC v0.3 in turn', async t => {
  const { app, url } = await listen(t, { executor })
  const made = (await rest(app, 'POST', '/message:send', { message: message('wait'), configuration: { returnImmediately: true } })).body.task
  await until(async () => (await rest(app, 'GET', `/tasks/${made.id}`)).body.status.state === 'TASK_STATE_WORKING')
  const v1 = (await app.inject({ method: 'POST', url: '/', payload: rpc('GetTask', { id: made.id }) })).json().result
  t.match(v1, { id: made.id, status: { state: 'TASK_STATE_WORKING' } }, 'read over JSON-RPC v1.0')
  const stream = fetch(`${url}/tasks/${made.id}:subscribe`)
  await until(() => app.a2aStreams.size === 1)
  const canceled = (await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/cancel', { id: made.id }) })).json().result
  t.match(canceled, { kind: 'task', id: made.id, status: { state: 'canceled' } }, 'canceled over JSON-RPC v0.3')
  const events = parseSse(await (await stream).text()).events
  t.match(events[events.length - 1], { statusUpdate: { status: { state: 'TASK_STATE_CANCELED' } } }, 'the REST stream saw it')
  t.match((await rest(app, 'GET', `/tasks/${made.id}?historyLength=1`)).body, { status: { state: 'TASK_STATE_CANCELED' }, history: [{ role: 'ROLE_USER' }] })
})
