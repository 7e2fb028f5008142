import { createRequire } from 'node:module'
import t from 'tap'
import { Ajv, type ValidateFunction } from 'ajv'
import { Type } from '@sinclair/typebox'
import type { A2AConfigInput } from '../../../index.js'
import { MethodRegistry } from '../../../services/json-rpc/registry.js'
import { buildOpenRpcDocument } from '../../../services/json-rpc/openrpc.js'
import { ERRORS, checkErrorCodes, createDiscoverMethod, renderOnce } from '../../../services/json-rpc/discover.js'
import { build, buildLogged, rpc } from '../../helper.js'

const require = createRequire(import.meta.url)
const addFormats = require('ajv-formats') as (ajv: Ajv) => Ajv
const draft07 = require('ajv/dist/refs/json-schema-draft-07.json') as Record<string, unknown>
// The package declares types only, not the schema value it exports.
const { openrpcDocument } = require('@open-rpc/meta-schema') as { openrpcDocument: Record<string, unknown> }

const API_KEY = 'openrpc-key-0123456789'
const NARROW_KEY = 'openrpc-narrow-key-0123'
const INFO = { title: 'Doc Agent', version: '2.0.0', description: 'documents itself', url: 'http://127.0.0.1:8000/' }

/**
 * The OpenRPC meta-schema is draft-07 JSON Schema. It names JSON Schema itself by `$ref` to
 * https://meta.json-schema.tools (draft-07's meta-schema with titles, whose `JSONSchemaObject` holds the object
 * form), which is not installed: draft-07's own meta-schema stands in for it, under that id.
 */
function metaSchemaValidator (): ValidateFunction {
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false })
  addFormats(ajv)
  const properties = draft07.properties as Record<string, unknown>
  const definitions = { ...(draft07.definitions as object), JSONSchemaObject: { properties: { $ref: properties.$ref } } }
  // The OpenRPC meta-schema refers to it both with and without the trailing slash.
  for (const $id of ['https://meta.json-schema.tools', 'https://meta.json-schema.tools/']) ajv.addSchema({ ...draft07, $id, definitions })
  return ajv.compile({ ...openrpcDocument, $schema: undefined })
}

function secured (extra: Record<string, unknown> = {}): A2AConfigInput {
  return {
    security: {
      enabled: true,
      auth: { api_key: { keys: [{ key: API_KEY, scopes: ['docs:read', 'agent:read'], id: 'docs' }, { key: NARROW_KEY, scopes: [], id: 'narrow' }] } },
      ...extra
    }
  }
}

t.test('the document served at GET /openrpc.json is valid per the OpenRPC meta-schema', async t => {
  const validate = metaSchemaValidator()
  t.notOk(validate({ openrpc: '1.3.2', info: { title: 'x', version: '1' }, methods: [{ name: 'm' }] }), 'the validator refuses a method without params')
  const badSchema = { name: 'm', params: [{ name: 'p', schema: { type: 5 } }] }
  t.notOk(validate({ openrpc: '1.3.2', info: { title: 'x', version: '1' }, methods: [badSchema] }), 'and a param schema that is not JSON Schema')
  for (const config of [{}, { push_notifications: { enabled: false } }, secured()]) {
    const app = await build(t, { config })
    const headers = config.security === undefined ? {} : { 'x-api-key': API_KEY }
    const res = await app.inject({ method: 'GET', url: '/openrpc.json', headers })
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /^application\/json/)
    const doc = res.json()
    t.ok(validate(doc), JSON.stringify(validate.errors))
    t.equal(doc.openrpc, '1.3.2')
  }
})

t.test('every registered method is in the document, with its params, result, errors and scopes', async t => {
  const app = await build(t, { config: { agent: { name: 'Doc Agent', version: '2.0.0', description: 'documents itself' } } })
  const doc = (await app.inject({ method: 'GET', url: '/openrpc.json' })).json()
  t.same(doc.info, { title: 'Doc Agent', version: '2.0.0', description: 'documents itself' })
  t.same(doc.servers, [{ name: 'Doc Agent', url: 'http://127.0.0.1:8000/' }])
  const registered = app.a2aMethods.list()
  t.same(doc.methods.map((m: any) => m.name), registered.map(m => m.name))
  t.ok(doc.methods.some((m: any) => m.name === 'rpc.discover'), 'rpc.discover describes itself')
  for (const method of doc.methods) {
    t.equal(method.paramStructure, 'by-name', method.name)
    t.equal(method.result.name, 'result')
    t.ok(Object.keys(method.result.schema).length > 0, `${method.name} has a result schema`)
    for (const error of method.errors) t.same(error, Object.values(ERRORS).find(e => e.code === error.code))
  }
  const byName = Object.fromEntries(doc.methods.map((m: any) => [m.name, m]))
  t.same(byName['tasks/get'].params.map((p: any) => [p.name, p.required]), [['id', true], ['historyLength', false], ['metadata', false]])
  t.same(byName['tasks/get'].params[0].schema, { type: 'string', minLength: 1, maxLength: 256 }, 'plain JSON Schema, no TypeBox symbols')
  t.same(byName['tasks/get'].result.schema, { $ref: '#/components/schemas/Task' })
  t.same(byName['message/send'].params[0], { name: 'message', schema: { $ref: '#/components/schemas/Message' }, required: true })
  t.equal(doc.components.schemas.Task.properties.kind.const, 'task')
  t.same(doc.components.schemas.Task.properties.history, { type: 'array', items: { $ref: '#/components/schemas/Message' } })
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? []
  t.ok(refs.length > 10)
  for (const ref of new Set(refs)) {
    const name = /^"\$ref":"#\/components\/schemas\/(\w+)"$/.exec(ref)?.[1]
    t.ok(name !== undefined && name in doc.components.schemas, `${ref} resolves`)
  }
  t.same(byName['tasks/cancel'].errors.map((e: any) => e.code), [-32001, -32002, -32602])
  t.same(byName['message/send'].errors.map((e: any) => e.code), [-32001, -32005, -32602], 'push on: no -32601 for a push config')
  t.same(byName.capabilities['x-scopes'], ['agent:read'])
  t.same(byName.capabilities.errors, [{ code: -32011, message: 'Insufficient scope' }])
  t.same(byName.status.params, [])
  t.same(byName['message/stream']['x-streaming'], true)
  t.match(byName['message/stream'].description, /Server-Sent Events/)
  t.notOk('x-streaming' in byName['message/send'])
  t.same(byName['tasks/pushNotificationConfig/delete'].result.schema, { type: 'null' })
  t.same(doc.components.errors.TaskNotFound, { code: -32001, message: 'Task not found' })
})

t.test('the generated schemas accept what the server really takes and answers', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/openrpc.json' })).json()
  const byName = Object.fromEntries(doc.methods.map((m: any) => [m.name, m]))
  const ajv = new Ajv({ strict: false, discriminator: true })
  // A schema compiled with the components beside it: its `#/components/schemas/...` refs resolve there.
  const compile = (schema: object) => ajv.compile({ ...schema, components: doc.components })
  const params = { message: { kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'hi' }] } }
  const paramsValid = compile({
    type: 'object',
    properties: Object.fromEntries(byName['message/send'].params.map((p: any) => [p.name, p.schema])),
    required: byName['message/send'].params.filter((p: any) => p.required).map((p: any) => p.name)
  })
  t.ok(paramsValid(params))
  t.notOk(paramsValid({ message: { ...params.message, parts: [] } }), 'a message needs a part')
  const task = (await app.inject({ method: 'POST', url: '/', payload: rpc('message/send', params) })).json().result
  const resultValid = compile(byName['message/send'].result.schema)
  t.ok(resultValid(task), JSON.stringify(resultValid.errors))
  t.notOk(resultValid({ ...task, kind: 'message' }))
  const list = (await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/list', {}) })).json().result
  t.ok(compile(byName['tasks/list'].result.schema)(list))
})

t.test('with push off the push methods are absent and a message lists -32601', async t => {
  const app = await build(t, { config: { push_notifications: { enabled: false } } })
  const doc = (await app.inject({ method: 'GET', url: '/openrpc.json' })).json()
  t.notOk(doc.methods.some((m: any) => m.name.startsWith('tasks/pushNotificationConfig/')))
  const send = doc.methods.find((m: any) => m.name === 'message/send')
  t.same(send.errors.map((e: any) => e.code), [-32001, -32005, -32601, -32602])
})

t.test('rpc.discover through POST / answers the same document as GET /openrpc.json', async t => {
  const app = await build(t)
  const get = await app.inject({ method: 'GET', url: '/openrpc.json' })
  const post = await app.inject({ method: 'POST', url: '/', payload: rpc('rpc.discover', undefined, 'd1') })
  t.equal(post.statusCode, 200)
  t.same(post.json(), { jsonrpc: '2.0', id: 'd1', result: get.json() })
  const again = await app.inject({ method: 'GET', url: '/openrpc.json' })
  t.equal(again.body, get.body, 'the same cached text every time')
})

t.test('under a prefix the route and the server url carry it', async t => {
  const app = await build(t, { prefix: '/agent' })
  const res = await app.inject({ method: 'GET', url: '/agent/openrpc.json' })
  t.equal(res.statusCode, 200)
  t.same(res.json().servers, [{ name: 'Echo Agent', url: 'http://127.0.0.1:8000/agent/' }])
  t.equal((await app.inject({ method: 'GET', url: '/openrpc.json' })).statusCode, 404)
})

t.test('security on: 401 without a credential, 200 with one, both audited', async t => {
  const { app, logs } = await buildLogged(t, { config: secured() })
  const anonymous = await app.inject({ method: 'GET', url: '/openrpc.json' })
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer realm="a2a"')
  t.match(anonymous.json(), { jsonrpc: '2.0', id: null, error: { code: -32010, message: 'Unauthenticated' } })
  const wrong = await app.inject({ method: 'GET', url: '/openrpc.json', headers: { 'x-api-key': 'nope' } })
  t.equal(wrong.statusCode, 401)
  const ok = await app.inject({ method: 'GET', url: '/openrpc.json', headers: { 'x-api-key': API_KEY } })
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().methods.find((m: any) => m.name === 'rpc.discover')['x-scopes'].length, 0)
  t.match(logs.lines().find(l => l.msg === 'auth success'), { audit: true, principal: 'docs', method: 'GET /openrpc.json', outcome: 'success' })
  const discover = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': NARROW_KEY }, payload: rpc('rpc.discover') })
  t.equal(discover.statusCode, 200, 'rpc.discover needs authentication only')
  t.notMatch(logs.text(), new RegExp(API_KEY))
})

t.test('security.method_scopes can guard the document: GET and rpc.discover need the same scopes', async t => {
  const { app, logs } = await buildLogged(t, { config: secured({ method_scopes: { 'rpc.discover': ['docs:read'] } }) })
  const narrow = await app.inject({ method: 'GET', url: '/openrpc.json', headers: { 'x-api-key': NARROW_KEY } })
  t.equal(narrow.statusCode, 403)
  t.equal(narrow.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="docs:read"')
  t.match(narrow.json(), { id: null, error: { code: -32011, data: 'needs scope docs:read' } })
  t.match(logs.lines().find(l => l.msg === 'scope denied'), { principal: 'narrow', method: 'GET /openrpc.json', outcome: 'denied' })
  const post = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': NARROW_KEY }, payload: rpc('rpc.discover') })
  t.equal(post.statusCode, 403)
  const wide = await app.inject({ method: 'GET', url: '/openrpc.json', headers: { 'x-api-key': API_KEY } })
  t.equal(wide.statusCode, 200)
  t.same(wide.json().methods.find((m: any) => m.name === 'rpc.discover')['x-scopes'], ['docs:read'])
})

t.test('the generator: non-object params, methods without a result, and unknown error codes', async t => {
  const registry = new MethodRegistry()
  registry.add({ name: 'pick', summary: 'takes one of two shapes', params: Type.Union([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })]), handler: () => 1 })
  registry.add({ name: 'bare', summary: 'no result schema', handler: () => null })
  const doc = buildOpenRpcDocument(registry.list(), INFO)
  t.same(doc.methods[0].params, [{ name: 'params', schema: { anyOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] }] }, required: true }])
  t.same(doc.methods[1].result, { name: 'result', schema: {} })
  t.ok(metaSchemaValidator()(doc))

  checkErrorCodes(registry.list())
  registry.add({ name: 'odd', summary: 'lists a code with no message', errors: [-32099], handler: () => null })
  t.throws(() => buildOpenRpcDocument(registry.list(), INFO), { code: 'A2A_ERR_INVALID_OPTIONS', message: /odd: error code -32099 has no known message/ })
  t.throws(() => checkErrorCodes(registry.list()), { code: 'A2A_ERR_INVALID_OPTIONS', message: /odd: error code -32099 has no known message/ }, 'the check at start says the same')
})

t.test('the rendered document is built once, on first use; a build that failed is tried again', async t => {
  const registry = new MethodRegistry()
  let calls = 0
  let fail = true
  const render = renderOnce(async () => {
    calls++
    if (fail) throw new Error('not yet')
    return buildOpenRpcDocument(registry.list(), INFO)
  })
  registry.add(createDiscoverMethod(render))
  t.equal(calls, 0, 'nothing is built before the first use')
  // Two calls during one failing build: both get its error, and it is built once.
  await Promise.all([t.rejects(render(), /not yet/), t.rejects(render(), /not yet/)])
  t.equal(calls, 1)
  fail = false
  const first = await render()
  t.equal(await render(), first)
  t.equal(calls, 2)
  t.equal(first.json, JSON.stringify(first.document))
  t.equal(await registry.get('rpc.discover')?.handler(undefined as never, {} as never), first.document)
})
