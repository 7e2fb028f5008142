// services/serving/telemetry.ts in this file's own process: the choices it makes from the config and the env, the
// packages it needs, and the SDK it starts (registered for the whole process, so started once, last), with the
// standalone app built on it and a stub OTLP/HTTP receiver. test/telemetry.test.ts runs the same through the CLI.
import t from 'tap'
import { createServer } from '../../../server.js'
import { validateConfig } from '../../../services/config/load.js'
import { VERSION } from '../../../services/kernel/version.js'
import {
  DEFAULT_SERVICE_NAME,
  TelemetryUnavailable,
  importOptional,
  otherSignals,
  serviceNameOf,
  startTelemetry
} from '../../../services/serving/telemetry.js'
import { receiver, rpc, until, userMessage } from '../../helper.js'
import { ACCEPTED, spansOf } from '../../otlp.js'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const traceparent = (traceId: string, spanId = '00f067aa0ba902b7') => `00-${traceId}-${spanId}-01`

t.test('the service name: telemetry.service_name, else OTEL_SERVICE_NAME, else the resource decides', async t => {
  t.equal(serviceNameOf({ enabled: true, service_name: 'configured' }, { OTEL_SERVICE_NAME: 'from-env' }), 'configured')
  t.equal(serviceNameOf({ enabled: true }, { OTEL_SERVICE_NAME: 'from-env' }), 'from-env')
  t.equal(serviceNameOf({ enabled: true }, { OTEL_SERVICE_NAME: ' ' }), undefined, 'empty counts as unset')
  t.equal(serviceNameOf({ enabled: true }, {}), undefined)
  t.equal(DEFAULT_SERVICE_NAME, 'fastify-a2a')
})

t.test('metrics and logs are exported only when the env names an exporter for them', async t => {
  t.same(otherSignals({}), { metricReaders: [], logRecordProcessors: [] })
  t.same(otherSignals({ OTEL_METRICS_EXPORTER: '', OTEL_LOGS_EXPORTER: '' }), { metricReaders: [], logRecordProcessors: [] })
  t.same(otherSignals({ OTEL_METRICS_EXPORTER: 'otlp' }), { logRecordProcessors: [] })
  t.same(otherSignals({ OTEL_LOGS_EXPORTER: 'console' }), { metricReaders: [] })
})

t.test('a package that is not installed is named with the command that installs it; other failures pass through', async t => {
  const err = await importOptional('@opentelemetry/no-such-package').then(() => undefined, (e: unknown) => e)
  t.ok(err instanceof TelemetryUnavailable)
  t.match(err, {
    code: 'A2A_ERR_TELEMETRY',
    message: 'telemetry.enabled needs @opentelemetry/no-such-package, which is not installed (npm install @opentelemetry/sdk-node @fastify/otel)'
  })
  await t.rejects(importOptional('data:text/javascript,throw new Error("broken module")'), { message: 'broken module' })
})

t.test('the SDK exports the request, operation and turn spans of the app, in the caller\'s trace', async t => {
  const otlp = await receiver(t)
  otlp.script(ACCEPTED)
  // Read by the SDK as it starts. A batch would wait ten minutes: only the shutdown exports it.
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '600000'
  })
  const telemetry = await startTelemetry({ enabled: true, service_name: 'in-process' })
  const app = await createServer(validateConfig({ server: { log_level: 'silent' } }), { telemetry })
  t.teardown(() => app.close())
  const res = await app.inject({
    method: 'POST', url: '/', headers: { traceparent: traceparent(TRACE_ID) }, payload: rpc('message/send', { message: userMessage('in process') })
  })
  t.equal(res.json().result.status.state, 'completed')
  await app.close()
  t.equal(await telemetry.shutdown(60_000), true)
  await until(() => otlp.received.length > 0)
  const spans = spansOf(otlp.received)
  const [request] = spans.filter(span => span.name === 'request')
  const [operation] = spans.filter(span => span.name === 'a2a message/send')
  t.match(request, { scope: '@fastify/otel', traceId: TRACE_ID, parentSpanId: '00f067aa0ba902b7' })
  t.match(operation, { traceId: TRACE_ID, parentSpanId: request.spanId })
  t.ok(spans.every(span => span.service === 'in-process' && span.serviceVersion === VERSION), 'the resource names the service and version')
})
