// With OpenTelemetry's HTTP instrumentation registered by the app (as a user does, beside the SDK), a webhook
// delivery's request is its own CLIENT span inside the attempt's span, and the receiver is told that span as its parent
// (docs/operations.md, "Traces"). The instrumentation is registered before the notifier first loads got.
import { SpanKind } from '@opentelemetry/api'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import t from 'tap'
import { build, call, receiver, until, userMessage } from '../../helper.js'

const exporter = new InMemorySpanExporter()
new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register()
registerInstrumentations({ instrumentations: [new HttpInstrumentation()] })

t.test('the webhook request is an HTTP client span inside its attempt\'s, and carries that span\'s traceparent', async t => {
  const hook = await receiver(t)
  const app = await build(t, { config: { push_notifications: { config: { allowed_networks: ['127.0.0.0/8'] } } } })
  const sent = await call(app, 'message/send', {
    message: userMessage('instrumented'),
    configuration: { pushNotificationConfig: { url: `${hook.url}/hook` } }
  })
  t.equal(sent.body.result.status.state, 'completed')
  await until(() => hook.received.length === 2)
  await until(async () => (await app.a2aNotifier.backlog()) === 0)
  const spans = exporter.getFinishedSpans()
  const attempts = spans.filter(span => span.name === 'a2a push delivery')
  t.equal(attempts.length, 2, 'an attempt per state')
  for (const attempt of attempts) {
    const inside = spans.filter(span => span.parentSpanContext?.spanId === attempt.spanContext().spanId)
    t.equal(inside.length, 1, 'one request inside the attempt')
    t.match(inside[0], { kind: SpanKind.CLIENT, name: 'POST', attributes: { 'http.response.status_code': 200 } })
    const request = hook.received.find(r => r.body.status.state === attempt.attributes['a2a.task.state'])
    t.equal(request?.headers.traceparent, `00-${attempt.spanContext().traceId}-${inside[0].spanContext().spanId}-01`, 'the receiver\'s parent is the request\'s span')
  }
})
