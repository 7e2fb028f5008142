// The LLM executor's spans (docs/llm-executor.md, "Traces"), with the OpenTelemetry SDK's in-memory exporter
// registered for this file's process, as in test/routes/tracing.test.ts: a span per model call inside the turn's,
// the gen-AI attributes of the request and of the answer, the turn's summed tokens, failures, and no key anywhere.
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node'
import t from 'tap'
import { tracedStream } from '../../../services/kernel/tracing.js'
import { build, call, until, userMessage, type Teardown } from '../../helper.js'
import { calls, finish, openaiStub, says, text, type StubAnswer } from './openai-stub.js'

const exporter = new InMemorySpanExporter()
new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register()
t.beforeEach(() => { exporter.reset() })

const KEY = 'sk-traced-key-that-must-never-be-in-a-span'
const MODEL = 'test-model'

const named = (prefix: string): ReadableSpan[] => exporter.getFinishedSpans().filter(span => span.name.startsWith(prefix))

/** Every finished span as text: names, attributes, events and statuses. */
const everything = () => JSON.stringify(exporter.getFinishedSpans()
  .map(span => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })))

/** The last chunk of a stream that asked for usage: no choices, the counts, and the completion's id and model. */
const usage = (input: number, output: number, id: string) => ({
  id,
  object: 'chat.completion.chunk',
  model: `${MODEL}-2024-08-06`,
  choices: [],
  usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output }
})

/** An answer followed by its usage chunk. */
const counted = (answer: StubAnswer, input: number, output: number, id: string): StubAnswer =>
  ({ ...answer, chunks: [...answer.chunks ?? [], usage(input, output, id)] })

/** The task one message/send gives, with the executor on `baseUrl`. */
async function send (t: Teardown, baseUrl: string, llm: Record<string, unknown> = {}): Promise<any> {
  const app = await build(t, {
    config: { agent: { name: 'A', executor: 'openai', llm: { base_url: baseUrl, api_key: KEY, model: MODEL, retry_delay: 0.001, ...llm } } }
  })
  return (await call(app, 'message/send', { message: userMessage('hi') })).body.result
}

t.test('each model call is a span chat <model> inside the turn\'s, with the gen-AI attributes; the turn sums the tokens', async t => {
  const stub = await openaiStub(t)
  stub.script(counted(calls(['status', {}]), 11, 3, 'chatcmpl-1'), counted(says('all ', 'good'), 20, 5, 'chatcmpl-2'))
  const task = await send(t, stub.baseUrl)
  t.equal(task.status.state, 'completed')
  t.equal(task.artifacts[0].parts.map((p: any) => p.text).join(''), 'all good', 'the text is the same as untraced')
  const [turn] = named('invoke_agent')
  const chats = named('chat ')
  t.same(chats.map(span => span.name), [`chat ${MODEL}`, `chat ${MODEL}`], 'one span per request, the tool round included')
  const { port } = new URL(stub.baseUrl)
  for (const span of chats) {
    t.equal(span.parentSpanContext?.spanId, turn.spanContext().spanId, 'a child of the turn')
    t.equal(span.kind, SpanKind.CLIENT)
    t.equal(span.status.code, SpanStatusCode.UNSET, 'no error')
    t.match(span.attributes, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': MODEL,
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.max_tokens': 1024,
      'gen_ai.response.model': `${MODEL}-2024-08-06`,
      'server.address': '127.0.0.1',
      'server.port': Number(port)
    })
  }
  t.same(chats.map(span => span.attributes['gen_ai.response.id']), ['chatcmpl-1', 'chatcmpl-2'])
  t.same(chats.map(span => span.attributes['gen_ai.response.finish_reasons']), [['tool_calls'], ['stop']])
  t.same(chats.map(span => [span.attributes['gen_ai.usage.input_tokens'], span.attributes['gen_ai.usage.output_tokens']]), [[11, 3], [20, 5]])
  t.match(turn.attributes, {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': MODEL,
    'gen_ai.usage.input_tokens': 31,
    'gen_ai.usage.output_tokens': 8
  })
  t.same(stub.requests.map(r => r.body.stream_options), [{ include_usage: true }, { include_usage: true }], 'usage asked for while traced')
  t.equal(stub.requests[0].headers.authorization, `Bearer ${KEY}`)
  t.notOk(everything().includes(KEY), 'the API key is in no span')
  t.notOk(/authorization|bearer/i.test(everything()), 'no header is in a span')
})

t.test('a server that tells no usage, id, model or finish reason leaves those attributes unset', async t => {
  const stub = await openaiStub(t)
  stub.script({ chunks: [{ choices: [{ index: 0, delta: { content: 'plain' } }] }] })
  const task = await send(t, stub.baseUrl)
  t.equal(task.status.state, 'completed')
  const [chat] = named('chat ')
  for (const key of ['gen_ai.response.id', 'gen_ai.response.model', 'gen_ai.response.finish_reasons', 'gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens']) {
    t.notOk(key in chat.attributes, key)
  }
  const [turn] = named('invoke_agent')
  t.notOk('gen_ai.usage.input_tokens' in turn.attributes, 'no tokens on the turn either')
  t.equal(turn.attributes['gen_ai.request.model'], MODEL)
})

t.test('retries of a busy endpoint stay inside the call\'s one span, each an event', async t => {
  const stub = await openaiStub(t)
  stub.script({ status: 503 }, { status: 429, headers: { 'retry-after': '0' } }, counted(says('at last'), 4, 2, 'chatcmpl-3'))
  const task = await send(t, stub.baseUrl, { max_retries: 2 })
  t.equal(task.status.state, 'completed')
  t.equal(stub.requests.length, 3)
  const chats = named('chat ')
  t.equal(chats.length, 1)
  t.equal(chats[0].status.code, SpanStatusCode.UNSET)
  t.match(chats[0].attributes, { 'gen_ai.usage.input_tokens': 4, 'gen_ai.response.finish_reasons': ['stop'] })
  t.same(chats[0].events.map(event => event.name), ['a2a.llm.retry', 'a2a.llm.retry'])
  t.match(chats[0].events.map(event => event.attributes), [
    { 'http.response.status_code': 503, 'a2a.llm.attempt': 1, 'a2a.llm.wait_ms': 1 },
    { 'http.response.status_code': 429, 'a2a.llm.attempt': 2, 'a2a.llm.wait_ms': 0 }
  ])
})

t.test('a failed call ends its span with ERROR and error.type; the task fails as untraced, with no key in a span', async t => {
  const stub = await openaiStub(t)
  stub.script({ status: 500, body: `upstream detail ${KEY}` })
  t.equal((await send(t, stub.baseUrl, { max_retries: 0 })).status.state, 'failed')
  stub.script({ chunks: ['data: {"choices": [\n\n'] })
  t.equal((await send(t, stub.baseUrl)).status.state, 'failed')
  // An https endpoint on its default port: nothing there answers TLS for 127.0.0.1.
  t.equal((await send(t, 'https://127.0.0.1/v1')).status.state, 'failed')
  const chats = named('chat ')
  t.same(chats.map(span => span.status.code), [SpanStatusCode.ERROR, SpanStatusCode.ERROR, SpanStatusCode.ERROR])
  t.same(chats.map(span => span.attributes['error.type']), ['500', 'stream data is not JSON', 'connection failed'])
  t.same(chats.map(span => span.attributes['server.port']), [Number(new URL(stub.baseUrl).port), Number(new URL(stub.baseUrl).port), 443])
  t.match(chats[0].status, { message: 'language model request failed: HTTP 500' })
  for (const turn of named('invoke_agent')) t.equal(turn.attributes['a2a.task.state'], 'failed', 'the turn failed its task')
  t.notOk(everything().includes(KEY), 'the API key is in no span')
  t.notOk(everything().includes('upstream detail'), 'the answer body is in no span')
})

t.test('a canceled call ends its span with ERROR', async t => {
  const stub = await openaiStub(t)
  stub.script({ chunks: [text('so far'), finish()], hang: true })
  const app = await build(t, { config: { agent: { name: 'A', executor: 'openai', llm: { base_url: stub.baseUrl, api_key: KEY } } } })
  const sent = await call(app, 'message/send', { message: userMessage('hi'), configuration: { blocking: false } })
  const id = sent.body.result.id
  await until(() => stub.requests.length > 0)
  await call(app, 'tasks/cancel', { id })
  await until(() => named('chat ').length > 0)
  const [chat] = named('chat ')
  t.equal(chat.status.code, SpanStatusCode.ERROR)
})

t.test('tracedStream: each read runs in the span; a stream its reader leaves is ended, and so is its span', async t => {
  let cleaned = false
  const ids: Array<string | undefined> = []
  const stream = tracedStream('left', () => ({ kind: 'stream' }), async function * () {
    try {
      ids.push(trace.getActiveSpan()?.spanContext().spanId)
      yield 1
      ids.push(trace.getActiveSpan()?.spanContext().spanId)
      yield 2
    } finally {
      cleaned = true
    }
  })
  t.same(await stream.next(), { value: 1, done: false })
  t.same(named('left'), [], 'open while it is read')
  t.same(await stream.next(), { value: 2, done: false })
  t.same(await stream.return(undefined as never), { value: undefined, done: true })
  t.ok(cleaned, 'the stream it wraps was left too')
  const [span] = named('left')
  t.same(ids, [span.spanContext().spanId, span.spanContext().spanId])
  t.match(span, { kind: SpanKind.CLIENT, attributes: { kind: 'stream' }, status: { code: SpanStatusCode.UNSET } })
  // An error thrown in by its reader leaves it the same way.
  cleaned = false
  const thrown = tracedStream('thrown in', () => ({}), async function * () {
    try {
      yield 1
    } finally {
      cleaned = true
    }
  })
  await thrown.next()
  await t.rejects(thrown.throw(new Error('reader gave up')), { message: 'reader gave up' })
  t.ok(cleaned)
  t.equal(named('thrown in').length, 1)
})
