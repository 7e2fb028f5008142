import { status as Status } from '@grpc/grpc-js'
import t from 'tap'
import { build, listenGrpc, restCall, rpc, userMessage } from '../helper.js'
import { grpcClients, rawUnary, unary } from './grpc-client.js'
import { V1_SERVICE, protoCodec } from '../../services/grpc/protos.js'

// Issue 39, row 4: what one message may carry (tasks.max_parts, tasks.max_keys), refused alike on every binding
// by the same check (services/a2a/operations.ts), and a body far past it refused before it is parsed (routes/body.ts).

const limits = { tasks: { max_parts: 5, max_keys: 100 } }

const text = (n: number) => Array.from({ length: n }, (_, i) => ({ kind: 'text', text: `p${i}` }))
const data = (keys: number) => ({ kind: 'data', data: Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, i])) })

async function send (app: Awaited<ReturnType<typeof build>>, message: Record<string, unknown>, params: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/', payload: rpc('message/send', { message, ...params }, 7) })
  return { status: res.statusCode, body: res.json() }
}

async function taskCount (app: Awaited<ReturnType<typeof build>>): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/list', {}) })
  return res.json().result.tasks.length
}

t.test('a message with more parts than tasks.max_parts gets -32602 naming the limit, and no task is made', async t => {
  const app = await build(t, { config: limits })
  const refused = await send(app, userMessage('x', { parts: text(6) }))
  t.equal(refused.status, 200)
  t.match(refused.body, { id: 7, error: { code: -32602, data: 'params.message.parts: 6 parts, more than tasks.max_parts (5)' } })
  t.equal(await taskCount(app), 0)
  t.match(await send(app, userMessage('x', { parts: text(5) })), { status: 200, body: { result: { kind: 'task' } } }, 'at the limit it is served')
})

t.test('a message whose objects together carry more keys than tasks.max_keys gets -32602 naming the limit', async t => {
  const app = await build(t, { config: limits })
  const over = await send(app, userMessage('x', { parts: [data(60), data(40)] }))
  t.match(over.body, { id: 7, error: { code: -32602, data: /^params\.message: more object keys and array items than tasks\.max_keys \(100\)/ } })
  const metadata = await send(app, userMessage('x', { parts: [data(40)] }), { metadata: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`m${i}`, i])) })
  t.match(metadata.body, { error: { code: -32602 } }, 'the request\'s metadata, stored with the task, counts with the message')
  t.equal(await taskCount(app), 0)
  t.match(await send(app, userMessage('x', { parts: [data(40)] })), { body: { result: { kind: 'task' } } }, 'below the limit it is served')
})

t.test('a message over the key or part limit gets HTTP 400 on REST, as -32602 on JSON-RPC', async t => {
  const app = await build(t, { config: limits })
  const message = (parts: unknown[]) => ({ messageId: 'r-1', role: 'ROLE_USER', parts })
  const parts = await restCall(app, 'POST', '/message:send', { message: message(Array.from({ length: 6 }, (_, i) => ({ text: `p${i}` }))) })
  t.equal(parts.status, 400)
  t.match(parts.body, { error: { code: 400, status: 'INVALID_ARGUMENT', message: /tasks\.max_parts \(5\)/ } })
  const keys = await restCall(app, 'POST', '/message:send', { message: message([{ data: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) }]) })
  t.equal(keys.status, 400)
  t.match(keys.body, { error: { code: 400, status: 'INVALID_ARGUMENT', message: /tasks\.max_keys \(100\)/ } })
  const v10 = await app.inject({ method: 'POST', url: '/', headers: { 'a2a-version': '1.0' }, payload: rpc('SendMessage', { message: message(Array.from({ length: 6 }, (_, i) => ({ text: `p${i}` }))) }, 8) })
  t.match(v10.json(), { id: 8, error: { code: -32602 } }, 'v1.0 JSON-RPC alike')
})

t.test('a message over the part limit gets INVALID_ARGUMENT on gRPC, from the same check', async t => {
  const { target } = await listenGrpc(t, { config: limits })
  const { v1 } = grpcClients(t, target)
  const over = await unary(v1, 'SendMessage', { message: { messageId: 'g-1', role: 'ROLE_USER', parts: Array.from({ length: 6 }, (_, i) => ({ text: `p${i}` })) } })
  t.equal(over.error?.code, Status.INVALID_ARGUMENT)
  t.match(over.error?.details, /tasks\.max_parts \(5\)/)
})

t.test('a body with far more keys than a message may carry is refused with -32602 before it is parsed', async t => {
  const app = await build(t, { config: limits })
  // More than three times max_keys plus the envelope's allowance (routes/body.ts): refused unparsed, with no id to echo.
  const huge = data(3 * 100 + 1025)
  const res = await app.inject({ method: 'POST', url: '/', payload: rpc('message/send', { message: userMessage('x', { parts: [huge] }) }, 9) })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { id: null, error: { code: -32602, data: /tasks\.max_keys: 100/ } })
  const rest = await restCall(app, 'POST', '/message:send', { message: { messageId: 'r-2', role: 'ROLE_USER', parts: [{ data: huge.data }] } })
  t.equal(rest.status, 400)
  t.match(rest.body, { error: { code: 400, status: 'INVALID_ARGUMENT' } })
  const keysInText = await send(app, userMessage(JSON.stringify(data(5000))))
  t.match(keysInText.body, { result: { kind: 'task' } }, 'what looks like keys inside a string counts nothing')
})

t.test('a gRPC request with far more keys than a message may carry is refused INVALID_ARGUMENT before it is decoded', async t => {
  const { target } = await listenGrpc(t, { config: limits })
  const { raw } = grpcClients(t, target)
  const codec = protoCodec()
  const type = codec.type('lf.a2a.v1.SendMessageRequest')
  const send = (keys: number) => rawUnary(raw, `/${V1_SERVICE}/SendMessage`,
    codec.write(type, { message: { messageId: 'g-2', role: 'ROLE_USER', parts: [{ data: data(keys).data }] } }))
  // A Struct key counts two on the wire (services/grpc/wire-scan.ts): past twice max_keys plus 1024, refused undecoded.
  const over = await send(700)
  t.equal(over.error?.code, Status.INVALID_ARGUMENT)
  t.match(over.error?.details, /the request carries more object keys and array items than a message may \(tasks\.max_keys: 100\)/)
  const decoded = await send(101)
  t.equal(decoded.error?.code, Status.INVALID_ARGUMENT)
  t.match(decoded.error?.details, /params\.message: more object keys and array items than tasks\.max_keys/, 'between the bounds, decoded and refused by the exact count')
  t.equal((await send(90)).error, undefined, 'below the limit it is served')
})
