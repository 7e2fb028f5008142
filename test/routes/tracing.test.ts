// The span of each A2A operation (docs/architecture.md, "Tracing: the design", step 1), with the OpenTelemetry SDK's
// in-memory exporter registered for this file's process: one span per operation in every binding and version, its
// attributes, its errors, and no credential in any of them.
import { SpanStatusCode, trace } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node'
import t from 'tap'
import { traceLogFields, traced } from '../../services/kernel/tracing.js'
import { createServer } from '../../server.js'
import { validateConfig } from '../../services/config/load.js'
import { V1_SERVICE } from '../../services/grpc/protos.js'
import type { AgentExecutor } from '../../index.js'
import { build, call, listen, listenGrpc, logCapture, postStream, until, userMessage } from '../helper.js'
import { grpcClients, unary } from './grpc-client.js'

const exporter = new InMemorySpanExporter()
new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register()
t.beforeEach(() => { exporter.reset() })

const ms = ([seconds, nanos]: [number, number]): number => seconds * 1000 + nanos / 1e6
const named = (prefix: string): ReadableSpan[] => exporter.getFinishedSpans().filter(span => span.name.startsWith(prefix))

t.test('each operation is one span, named after its method, with its version, binding, principal and task', async t => {
  const app = await build(t)
  const sent = await call(app, 'message/send', { message: userMessage('traced') })
  const task = sent.body.result
  const v1 = await app.inject({ method: 'POST', url: '/', headers: { 'a2a-version': '1.0' }, payload: { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: task.id } } })
  t.equal(v1.statusCode, 200)
  const rest = await app.inject({ method: 'POST', url: '/message:send', headers: { 'a2a-version': '1.0' }, payload: { message: { role: 'ROLE_USER', messageId: 'r1', parts: [{ text: 'over REST' }] } } })
  t.equal(rest.statusCode, 200)
  const [send] = named('a2a message/send')
  t.match(send.attributes, {
    'rpc.system': 'a2a',
    'rpc.method': 'message/send',
    'a2a.version': '0.3',
    'a2a.binding': 'jsonrpc',
    'enduser.id': 'anonymous',
    'a2a.task.id': task.id,
    'a2a.context.id': task.contextId
  })
  t.equal(send.status.code, SpanStatusCode.UNSET, 'no error')
  const [get] = named('a2a GetTask')
  t.match(get.attributes, { 'rpc.method': 'GetTask', 'a2a.version': '1.0', 'a2a.binding': 'jsonrpc', 'a2a.task.id': task.id })
  const [restSend] = named('a2a SendMessage')
  t.match(restSend.attributes, { 'a2a.version': '1.0', 'a2a.binding': 'http+json', 'a2a.task.id': rest.json().task.id })
  t.equal(named('a2a ').length, 3, 'one span each')
  // A method that takes no params names no task.
  await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 3, method: 'status' } })
  const [status] = named('a2a status')
  t.equal(status.attributes['a2a.task.id'], undefined)
})

t.test('a gRPC call is one span with the gRPC binding', async t => {
  const { target } = await listenGrpc(t)
  const { v1 } = grpcClients(t, target)
  const sent = await unary(v1, 'SendMessage', { message: { role: 'ROLE_USER', messageId: 'g1', parts: [{ text: 'over gRPC' }] } })
  t.equal(sent.error, undefined)
  const spans = named('a2a SendMessage')
  t.equal(spans.length, 1, V1_SERVICE)
  t.match(spans[0].attributes, { 'a2a.binding': 'grpc', 'a2a.version': '1.0', 'a2a.task.id': sent.value.task.id })
})

t.test('an operation that fails ends its span with ERROR and the A2A error code; a credential is never an attribute', async t => {
  const key = 'trace-test-secret-key-0123456789'
  const app = await build(t, { config: { security: { enabled: true, auth: { api_key: { keys: [{ key, id: 'tracer', scopes: ['*'] }] } } } } })
  const missing = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': key }, payload: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'no-such-task' } } })
  t.equal(missing.json().error.code, -32001)
  const [get] = named('a2a tasks/get')
  t.equal(get.status.code, SpanStatusCode.ERROR)
  t.match(get.attributes, { 'a2a.error.code': -32001, 'enduser.id': 'tracer', 'a2a.task.id': 'no-such-task' })
  const everything = JSON.stringify(exporter.getFinishedSpans().map(span => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })))
  t.notOk(everything.includes(key), 'the API key is in no span')
})

t.test('traced: the span is active for what it runs, and ends with a value, a promise or a throw', async t => {
  const outer = traced('outer', () => ({ kind: 'sync' }), () => trace.getActiveSpan()?.spanContext().spanId)
  const [syncSpan] = named('outer')
  t.equal(outer, syncSpan.spanContext().spanId, 'active inside')
  t.equal(await traced('later', () => ({}), async () => 7, (span, value) => { span.setAttribute('value', value) }), 7)
  t.match(named('later')[0].attributes, { value: 7 })
  await t.rejects(traced('rejected', () => ({}), async () => { throw Object.assign(new Error('no'), { code: 'A2A_ERR_X' }) }), /no/)
  t.match(named('rejected')[0], { status: { code: SpanStatusCode.ERROR, message: 'no' }, attributes: { 'a2a.error.code': 'A2A_ERR_X' } })
  // What an executor may throw is anything, not only an Error: the span still ends, with no message.
  // eslint-disable-next-line no-throw-literal -- on purpose
  t.throws(() => traced('thrown', () => ({}), () => { throw 'not an error' }))
  t.match(named('thrown')[0], { status: { code: SpanStatusCode.ERROR, message: undefined } })
})

t.test('the standalone server\'s log lines inside a span carry its trace and span ids; those outside carry none', async t => {
  const logs = logCapture()
  const app = await createServer(validateConfig({ server: { log_level: 'info' } }), { logStream: logs.stream })
  t.teardown(() => app.close())
  app.log.info('outside')
  const inside = traced('logged', () => ({}), () => {
    app.log.info('inside')
    return trace.getActiveSpan()?.spanContext()
  })
  const lines = logs.lines()
  const outside = lines.find(line => line.msg === 'outside')
  t.equal(outside.trace_id, undefined)
  t.equal(outside.span_id, undefined)
  t.match(lines.find(line => line.msg === 'inside'), { trace_id: inside?.traceId, span_id: inside?.spanId })
  t.same(traceLogFields(), {}, 'nothing outside a span')
})

t.test('an executor turn is a span inside its operation\'s, active for the executor; each change of state is a span event', async t => {
  let inTurn: string | undefined
  const executor: AgentExecutor = async function * () {
    inTurn = trace.getActiveSpan()?.spanContext().spanId
    await new Promise(resolve => setTimeout(resolve, 5))
    yield 'traced answer'
  }
  const app = await build(t, { executor })
  const sent = await call(app, 'message/send', { message: userMessage('turn') })
  t.equal(sent.body.result.status.state, 'completed')
  const [operation] = named('a2a message/send')
  const [turn] = named('invoke_agent')
  t.equal(turn.parentSpanContext?.spanId, operation.spanContext().spanId, 'the turn is a child of the operation')
  t.equal(turn.spanContext().traceId, operation.spanContext().traceId)
  t.equal(inTurn, turn.spanContext().spanId, 'the executor runs inside the turn\'s span')
  t.match(turn.attributes, { 'gen_ai.operation.name': 'invoke_agent', 'a2a.task.id': sent.body.result.id, 'a2a.task.state': 'in_progress' })
  const states = exporter.getFinishedSpans().flatMap(span => span.events).filter(event => event.name === 'a2a.task.state')
    .sort((a, b) => a.time[0] - b.time[0] || a.time[1] - b.time[1]).map(event => event.attributes?.['a2a.task.state'])
  t.same(states, ['in_progress', 'completed'], 'each change of state, in order')
})

t.test('a stream is a span of its own under its operation\'s, until it stops following the task: settled, or left by its consumer', async t => {
  const executor: AgentExecutor = async function * (ctx) {
    const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
    if (text === 'hang') await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
    yield 'one'
    yield 'two'
  }
  const { app, url } = await listen(t, { executor })
  const streamed = await postStream(url, { jsonrpc: '2.0', id: 1, method: 'message/stream', params: { message: userMessage('streamed') } })
  const [operation] = named('a2a message/stream')
  const [stream] = named('a2a stream')
  t.equal(stream.parentSpanContext?.spanId, operation.spanContext().spanId, 'a child of the operation')
  t.match(stream.attributes, { 'a2a.task.id': operation.attributes['a2a.task.id'], 'a2a.stream.mode': 'message', 'a2a.stream.end': 'settled', 'a2a.stream.results': streamed.events.length })
  t.ok(ms(stream.endTime) >= ms(operation.endTime), 'it outlasts the operation')

  // A consumer that leaves: the span ends then, as `closed`.
  exporter.reset()
  const controller = new AbortController()
  const res = await fetch(url, { method: 'POST', signal: controller.signal, headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'message/stream', params: { message: userMessage('hang') } }) })
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  await reader.read()
  controller.abort()
  await until(() => named('a2a stream').length === 1)
  t.match(named('a2a stream')[0].attributes, { 'a2a.stream.end': 'closed' })
  await until(() => app.a2aStreams.size === 0)
})

t.test('a cancel is a span of its own, with the canceled state as its event; the turn it stopped ends with that state', async t => {
  const executor: AgentExecutor = async function * (ctx) {
    await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
    yield 'too late'
  }
  const app = await build(t, { executor })
  const sent = await call(app, 'message/send', { message: userMessage('hang'), configuration: { blocking: false } })
  const id = sent.body.result.id
  await until(() => app.a2aTasks.running === 1)
  t.equal((await call(app, 'tasks/cancel', { id })).body.result.status.state, 'canceled')
  await until(() => named('invoke_agent').length === 1)
  const [cancel] = named('a2a tasks/cancel')
  t.match(cancel.attributes, { 'rpc.method': 'tasks/cancel', 'a2a.task.id': id })
  t.match(cancel.events.map(event => event.attributes), [{ 'a2a.task.id': id, 'a2a.task.state': 'canceled' }], 'the change it wrote')
  const [turn] = named('invoke_agent')
  t.equal(turn.parentSpanContext?.spanId, named('a2a message/send')[0].spanContext().spanId, 'the turn hangs under the send that started it')
  t.equal(turn.attributes['a2a.task.state'], 'canceled')
  t.equal(named('a2a task abort').length, 0, 'one instance: the run is stopped where the cancel is made, with no request')
})

t.test('a traceparent the caller sends is the parent of the operation\'s span: JSON-RPC, a stream, HTTP+JSON and gRPC', async t => {
  const traceId = '0af7651916cd43dd8448eb211c80319c'
  const parentId = 'b7ad6b7169203331'
  const traceparent = `00-${traceId}-${parentId}-01`
  const { app, target } = await listenGrpc(t)
  await app.inject({ method: 'POST', url: '/', headers: { traceparent }, payload: { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: userMessage('child') } } })
  await app.inject({ method: 'POST', url: '/', headers: { traceparent, accept: 'text/event-stream' }, payload: { jsonrpc: '2.0', id: 2, method: 'message/stream', params: { message: userMessage('streamed child') } } })
  await app.inject({ method: 'POST', url: '/message:send', headers: { traceparent, 'a2a-version': '1.0' }, payload: { message: { role: 'ROLE_USER', messageId: 'r2', parts: [{ text: 'rest child' }] } } })
  const { v1 } = grpcClients(t, target)
  await unary(v1, 'SendMessage', { message: { role: 'ROLE_USER', messageId: 'g2', parts: [{ text: 'grpc child' }] } }, { traceparent })
  const operations = named('a2a ').filter(span => span.attributes['rpc.system'] === 'a2a')
  t.same(operations.map(span => span.name).sort(), ['a2a SendMessage', 'a2a SendMessage', 'a2a message/send', 'a2a message/stream'])
  for (const span of operations) {
    t.equal(span.spanContext().traceId, traceId, `${span.name} (${String(span.attributes['a2a.binding'])}): the caller's trace`)
    t.equal(span.parentSpanContext?.spanId, parentId, 'under the caller\'s span')
  }
  // Without one, an operation starts a trace of its own; so it does with one that is not a traceparent, and answers.
  await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 3, method: 'status' } })
  const [status] = named('a2a status')
  t.not(status.spanContext().traceId, traceId)
  t.equal(status.parentSpanContext, undefined)
  exporter.reset()
  for (const garbled of ['00-not-a-trace-01', `00-${'0'.repeat(32)}-${parentId}-01`, 'x'.repeat(10_000)]) {
    const res = await app.inject({ method: 'POST', url: '/', headers: { traceparent: garbled }, payload: { jsonrpc: '2.0', id: 4, method: 'status' } })
    t.equal(res.statusCode, 200, `answered with traceparent ${garbled.slice(0, 24)}`)
  }
  const garbledSpans = named('a2a status')
  t.equal(garbledSpans.length, 3)
  t.ok(garbledSpans.every(span => span.parentSpanContext === undefined && span.spanContext().traceId !== traceId), 'each a trace of its own')
})
