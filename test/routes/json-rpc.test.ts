import { connect } from 'node:http2'
import Fastify from 'fastify'
import t from 'tap'
import a2a from '../../index.js'
import { JsonRpcError } from '../../services/kernel/errors.js'
import { build, buildLogged, call, h2Post, listen, processWarnings, rpc, until, userMessage } from '../helper.js'

t.test('unparseable JSON answers HTTP 400 with -32700 and id null', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: '{"jsonrpc":"2.0",' })
  t.equal(res.statusCode, 400)
  t.same(res.json(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error', data: 'the body is not valid JSON' } })
})

t.test('an empty JSON body is a parse error', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: '' })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { id: null, error: { code: -32700 } })
})

t.test('a batch is refused with a single -32600', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/', payload: [rpc('status', undefined, 1), rpc('status', undefined, 2)] })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request', data: 'batch requests are not supported' } })
})

t.test('valid JSON that is not a request object gets -32600', async t => {
  const app = await build(t)
  for (const payload of ['"status"', '42', 'null', 'true']) {
    const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload })
    t.equal(res.statusCode, 200, payload)
    t.match(res.json(), { jsonrpc: '2.0', id: null, error: { code: -32600 } }, payload)
  }
})

t.test('a wrong jsonrpc version gets -32600 with the id echoed', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '1.0', id: 'v1', method: 'status' } })
  t.same(res.json(), { jsonrpc: '2.0', id: 'v1', error: { code: -32600, message: 'Invalid Request', data: 'jsonrpc: must be "2.0"' } })
  const missing = await app.inject({ method: 'POST', url: '/', payload: { id: 3, method: 'status' } })
  t.match(missing.json(), { id: 3, error: { code: -32600 } })
})

t.test('a missing or non-string method gets -32600', async t => {
  const app = await build(t)
  for (const method of [undefined, 7, null, ['status']]) {
    const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 9, method } })
    t.same(res.json(), { jsonrpc: '2.0', id: 9, error: { code: -32600, message: 'Invalid Request', data: 'method: must be a string' } })
  }
})

t.test('an object, float or boolean id gets -32600 with id null', async t => {
  const app = await build(t)
  for (const id of [{ a: 1 }, 1.5, true, [1]]) {
    const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id, method: 'status' } })
    t.same(res.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request', data: 'id: must be a string, an integer or null' } })
  }
})

t.test('non-object params get -32600 and array params -32602', async t => {
  const app = await build(t)
  const str = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: 'x' } })
  t.same(str.json(), { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'Invalid Request', data: 'params: must be an object' } })
  const arr = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: ['x'] } })
  t.match(arr.json(), { id: 2, error: { code: -32602, data: 'params: must be object' } })
  const none = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 3, method: 'status', params: [] } })
  t.match(none.json(), { id: 3, error: { code: -32602, data: 'params: must be an object' } })
})

t.test('nesting deeper than 64 is an invalid request, 64 is fine', async t => {
  const app = await build(t)
  const nest = (n: number) => '['.repeat(n) + ']'.repeat(n)
  const deep = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json' },
    payload: `{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":${nest(64)}}}`
  })
  t.same(deep.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request', data: 'nesting is deeper than 64 levels' } })
  const ok = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json' },
    payload: `{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":${nest(62)}}}`
  })
  t.match(ok.json(), { id: 1, result: { status: 'ok' } })
  const huge = await app.inject({
    method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: nest(10_000)
  })
  t.match(huge.json(), { id: null, error: { code: -32600 } })
})

t.test('the id is echoed with its type, and a request without id is answered with id null', async t => {
  const app = await build(t)
  for (const id of ['abc', 0, 42, -7, null]) {
    const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id, method: 'status' } })
    t.equal(res.json().id, id)
  }
  const noId = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', method: 'status' } })
  t.equal(noId.statusCode, 200)
  t.equal(noId.json().id, null)
  t.equal(noId.json().result.status, 'ok')
})

t.test('a body over max_request_size gets HTTP 413 with -32600', async t => {
  const app = await build(t, { config: { server: { max_request_size: 2048 } } })
  const res = await app.inject({ method: 'POST', url: '/', payload: rpc('status', { pad: 'x'.repeat(4096) }) })
  t.equal(res.statusCode, 413)
  t.match(res.json(), { jsonrpc: '2.0', id: null, error: { code: -32600 } })
  const after = await call(app, 'status')
  t.equal(after.body.result.status, 'ok')
})

t.test('a body that is not JSON gets HTTP 415 with -32600', async t => {
  const app = await build(t)
  const text = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'text/plain' }, payload: 'status' })
  t.equal(text.statusCode, 415)
  t.same(text.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request', data: 'Content-Type must be application/json' } })
  const none = await app.inject({ method: 'POST', url: '/' })
  t.equal(none.statusCode, 415)
  t.match(none.json(), { id: null, error: { code: -32600 } })
})

t.test('application/*+json and charset parameters are accepted', async t => {
  const app = await build(t)
  for (const type of ['application/json; charset=utf-8', 'application/vnd.a2a+json', 'Application/JSON']) {
    const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': type }, payload: JSON.stringify(rpc('status', undefined, 5)) })
    t.equal(res.statusCode, 200, type)
    t.equal(res.json().result.status, 'ok', type)
  }
})

t.test('an unknown method gets -32601 naming it', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/', payload: rpc('no/such', undefined, 7) })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found', data: 'method "no/such" is not supported' } })
})

t.test('missing params get -32602 naming the field', async t => {
  const app = await build(t)
  const cases: Array<[string, unknown, string]> = [
    ['tasks/get', undefined, 'params: required'],
    ['tasks/get', {}, 'params.id: required'],
    ['tasks/get', { id: 5 }, 'params.id: must be string'],
    ['tasks/get', { id: 'x', historyLength: -1 }, 'params.historyLength: must be >= 0'],
    ['message/send', {}, 'params.message: required'],
    ['message/send', { message: { role: 'user', messageId: 'a' } }, 'params.message.parts: required'],
    ['message/send', { message: { role: 'user', messageId: 'a', parts: [] } }, 'params.message.parts: must NOT have fewer than 1 items'],
    ['message/send', { message: { role: 'user', parts: [{ kind: 'text', text: 'x' }] } }, 'params.message.messageId: required'],
    ['message/send', { message: { role: 'robot', messageId: 'a', parts: [{ kind: 'text', text: 'x' }] } }, 'params.message.role: must be equal to one of the allowed values'],
    ['message/send', { message: { role: 'user', messageId: 'a', parts: [{ kind: 'text' }] } }, 'params.message.parts.0.text: required'],
    ['message/send', { message: { role: 'user', messageId: 'a', parts: [{ kind: 'file', file: { uri: 7 } }] } }, 'params.message.parts.0.file.uri: must be string'],
    ['message/send', { message: { role: 'user', messageId: 'a', parts: [{ kind: 'video' }] } }, 'params.message.parts.0.kind: must be one of the known kinds'],
    ['message/send', { message: userMessage('x'), configuration: { blocking: 'yes' } }, 'params.configuration.blocking: must be boolean'],
    ['tasks/list', { pageSize: 0 }, 'params.pageSize: must be >= 1'],
    ['tasks/list', { pageSize: 101 }, 'params.pageSize: must be <= 100'],
    ['tasks/list', { state: 'sleeping' }, 'params.state: must be equal to one of the allowed values'],
    ['tasks/list', { pageToken: 'bm9wZQ' }, 'params.pageToken: is not a token this server issued'],
    ['list_directory', {}, 'params.path: required']
  ]
  for (const [method, params, data] of cases) {
    const res = await app.inject({ method: 'POST', url: '/', payload: rpc(method, params, 'bad') })
    t.equal(res.statusCode, 200, `${method} ${data}`)
    t.same(res.json(), { jsonrpc: '2.0', id: 'bad', error: { code: -32602, message: 'Invalid params', data } }, data)
  }
  const after = await call(app, 'status')
  t.equal(after.body.result.status, 'ok')
})

t.test('an unexpected failure is a generic -32603 and its detail is not sent', async t => {
  const app = await build(t)
  app.a2aMethods.add({ name: 'test/explode', summary: 'throws', handler () { throw new Error('secret detail') } })
  const res = await app.inject({ method: 'POST', url: '/', payload: rpc('test/explode', undefined, 'x') })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { jsonrpc: '2.0', id: 'x', error: { code: -32603, message: 'Internal error' } })
  t.notMatch(res.body, /secret/)
})

t.test('requests made together are each answered with their own result, in their own turn or a later one', async t => {
  const app = await build(t)
  app.a2aMethods.add({ name: 'test/later', summary: 'answers through a promise', handler: async (params) => params })
  const ids = Array.from({ length: 20 }, (_, i) => `r${i}`)
  const answers = await Promise.all(ids.map((id, i) => app.inject({
    method: 'POST',
    url: '/',
    payload: i % 2 === 0 ? rpc('test/later', { n: i }, id) : rpc('message/send', { message: userMessage(`m${i}`) }, id)
  })))
  answers.forEach((res, i) => {
    t.equal(res.statusCode, 200, ids[i])
    const body = res.json()
    t.equal(body.id, ids[i])
    if (i % 2 === 0) t.same(body.result, { n: i })
    else t.match(body.result, { kind: 'task', status: { state: 'completed' }, history: [{ parts: [{ text: `m${i}` }] }] })
  })
})

t.test('an answer Fastify cannot send is that request\'s -32603, whether its method answered at once or later', async t => {
  const { app, logs } = await buildLogged(t)
  // HTTP 99 is refused by reply.code(): the answer fails on its way out, after the method has run.
  const odd = () => new JsonRpcError(-32050, 'Odd', undefined, 99)
  app.a2aMethods.add({ name: 'test/odd-now', summary: 'odd status at once', handler () { throw odd() } })
  app.a2aMethods.add({ name: 'test/odd-later', summary: 'odd status later', handler: async () => { throw odd() } })
  for (const method of ['test/odd-now', 'test/odd-later']) {
    const [res, neighbour] = await Promise.all([
      app.inject({ method: 'POST', url: '/', payload: rpc(method, undefined, method) }),
      app.inject({ method: 'POST', url: '/', payload: rpc('status', undefined, 'neighbour') })
    ])
    t.equal(res.statusCode, 200, method)
    t.same(res.json(), { jsonrpc: '2.0', id: method, error: { code: -32603, message: 'Internal error' } }, method)
    t.match(neighbour.json(), { id: 'neighbour', result: { status: 'ok' } }, `${method}: the answer queued beside it`)
  }
  t.equal(logs.lines().filter(line => line.msg === 'json-rpc route failed').length, 2)
})

t.test('an answer sent while the server closes closes its connection, so the close does not wait on it', async t => {
  const { app, url } = await listen(t, { config: { agent: { name: 'Slow', delay_ms: 300 } } })
  const post = (body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const pending = post(rpc('message/send', { message: userMessage('finish me') }))
  // The task is running once tasks/list shows it.
  await until(async () => ((await (await post(rpc('tasks/list', {}))).json()) as any).result.tasks.length > 0, 100)
  const closed = app.close()
  const res = await pending
  t.equal(res.headers.get('connection'), 'close')
  t.match(await res.json(), { result: { status: { state: 'completed' } } })
  await closed
})

t.test('over HTTP/2 an answer sent while the server closes goes out without a connection header', async t => {
  // HTTP/2 has no connection header: node drops one that is set, with a warning.
  const warnings = processWarnings(t)
  const app = Fastify({ http2: true, logger: false })
  await app.register(a2a, { config: { agent: { name: 'Slow', delay_ms: 300 } } })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const session = connect(url)
  t.teardown(() => session.destroy())
  const post = async (body: unknown) => {
    const { headers, text } = await h2Post(session, '/', { 'content-type': 'application/json' }, JSON.stringify(body))
    return { headers, body: JSON.parse(text) }
  }
  const pending = post(rpc('message/send', { message: userMessage('finish me') }))
  await until(async () => (await post(rpc('tasks/list', {}))).body.result.tasks.length > 0, 100)
  const closed = app.close()
  const res = await pending
  t.equal(res.headers[':status'], 200)
  t.equal(res.headers.connection, undefined)
  t.match(res.body, { result: { status: { state: 'completed' } } })
  session.close()
  await closed
  await new Promise(resolve => setImmediate(resolve))
  t.same(warnings, [])
})

t.test('the route answers only POST (GET / is the agent\'s own page, routes/root.ts); the host\'s 404 handles the rest', async t => {
  const app = await build(t)
  for (const method of ['PUT', 'DELETE', 'PATCH'] as const) {
    t.equal((await app.inject({ method, url: '/' })).statusCode, 404, method)
  }
})

t.test('a host hook failing inside the agent route gets a JSON-RPC body: 4xx as -32600, 5xx as -32603', async t => {
  const { default: Fastify } = await import('fastify')
  const { default: a2a } = await import('../../index.js')
  const host = Fastify({ logger: false })
  host.addHook('preHandler', async request => {
    const fail = request.headers['x-fail']
    if (fail !== undefined) throw Object.assign(new Error('host says no'), { statusCode: Number(fail) })
  })
  await host.register(a2a)
  t.teardown(() => host.close())
  const client = await host.inject({ method: 'POST', url: '/', headers: { 'x-fail': '400' }, payload: rpc('status', undefined, 1) })
  t.equal(client.statusCode, 400)
  t.same(client.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request', data: 'the request could not be read' } })
  const server = await host.inject({ method: 'POST', url: '/', headers: { 'x-fail': '500' }, payload: rpc('status', undefined, 1) })
  t.equal(server.statusCode, 200)
  t.same(server.json(), { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } })
  t.notMatch(server.body, /host says no/)
})

t.test('a request without an id (a notification) is served and answered with id null, errors too', async t => {
  const app = await build(t)
  const served = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', method: 'message/send', params: { message: userMessage('no id') } } })
  t.equal(served.statusCode, 200)
  t.match(served.json(), { jsonrpc: '2.0', id: null, result: { kind: 'task', status: { state: 'completed' } } })
  const failed = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', method: 'tasks/get', params: {} } })
  t.same(failed.json(), { jsonrpc: '2.0', id: null, error: { code: -32602, message: 'Invalid params', data: 'params.id: required' } })
})
