import { Type } from '@sinclair/typebox'
import pino from 'pino'
import t from 'tap'
import { createPrincipal } from '../../../services/auth/principal.js'
import { StorageUnavailable, TaskStoreFull, unauthenticated } from '../../../services/kernel/errors.js'
import { dispatch, toJsonRpcError } from '../../../services/json-rpc/dispatch.js'
import { MethodRegistry, formatParamsError } from '../../../services/json-rpc/registry.js'

const log = pino({ level: 'silent' })

t.test('storage failures become -32603 with HTTP 503 and Retry-After', async t => {
  const full = toJsonRpcError(new TaskStoreFull(3), log)
  t.match(full, { code: -32603, data: 'task store is full', httpStatus: 503, headers: { 'retry-after': '1' } })
  const down = toJsonRpcError(new StorageUnavailable('x'), log)
  t.match(down, { code: -32603, data: 'storage unavailable', httpStatus: 503 })
  t.match(toJsonRpcError(null, log), { code: -32603, data: undefined, httpStatus: 200 })
})

t.test('a caller without a method\'s scopes gets -32011 with HTTP 403 naming them', async t => {
  const registry = new MethodRegistry({ guarded: ['ops:write'] })
  registry.add({ name: 'guarded', summary: 's', scopes: ['x'], handler: () => 1 })
  const principal = createPrincipal('p', 'api_key', ['api:read'], {})
  const { response, error } = await dispatch(registry, { id: 1, method: 'guarded', params: undefined }, principal, log)
  t.same(response, { jsonrpc: '2.0', id: 1, error: { code: -32011, message: 'Insufficient scope', data: 'needs scope ops:write' } })
  t.equal(error?.httpStatus, 403)
  t.same(error?.headers, { 'www-authenticate': 'Bearer error="insufficient_scope", scope="ops:write"' })
  t.throws(() => registry.add({ name: 'guarded', summary: 's', handler: () => 1 }), /already registered/)
})

t.test('params errors name the field for every kind of schema failure', async t => {
  const registry = new MethodRegistry()
  registry.add({
    name: 'm',
    summary: 's',
    params: Type.Object({ fixed: Type.Optional(Type.Literal('a')), either: Type.Optional(Type.Union([Type.String(), Type.Integer()])) }),
    handler: () => null
  })
  const principal = createPrincipal('p', 'api_key', [], {})
  const fixed = await dispatch(registry, { id: 1, method: 'm', params: { fixed: 'b' } }, principal, log)
  t.match(fixed.response, { error: { code: -32602, data: 'params.fixed: must be "a"' } })
  const either = await dispatch(registry, { id: 1, method: 'm', params: { either: true } }, principal, log)
  t.match(either.response, { error: { code: -32602, data: /^params\.either: / } })
  t.equal(formatParamsError({ keyword: 'anyOf', instancePath: '/x', schemaPath: '', params: {} }), 'params.x: is not a valid value')
  t.equal(formatParamsError({ keyword: 'other', instancePath: '', schemaPath: '', params: {} }), 'params: is invalid')
})

t.test('an unauthenticated error challenges with invalid_token when a credential was sent', async t => {
  t.same(unauthenticated('bad', true).headers, { 'www-authenticate': 'Bearer realm="a2a", error="invalid_token"' })
  t.same(unauthenticated('none', false).headers, { 'www-authenticate': 'Bearer realm="a2a"' })
})

t.test('a method that returns nothing answers with result null', async t => {
  const registry = new MethodRegistry()
  registry.add({ name: 'void', summary: 's', handler: () => undefined })
  const { response } = await dispatch(registry, { id: 'v', method: 'void', params: undefined }, createPrincipal('p', 'api_key', [], {}), log)
  t.same(response, { jsonrpc: '2.0', id: 'v', result: null })
})
