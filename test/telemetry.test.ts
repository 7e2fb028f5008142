// `telemetry.enabled` on the standalone server (CONTRACT.md §14, docs/operations.md, "Traces"): the built CLI starts
// OpenTelemetry's Node SDK, configured by the OTEL_* variables, and exports to a stub OTLP/HTTP receiver on 127.0.0.1
// (spans in JSON: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json). Every wait is for an event (a span received, a line
// printed, the process gone), bounded by `until` or the exit.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { snippet } from './doc-snippets.js'
import { CLI, receiver, rpc, serve, until, userMessage, type Receiver } from './helper.js'
import { ACCEPTED, spansOf, type ExportedSpan } from './otlp.js'
import { runChild, spawnChild } from './processes.js'

const PACKAGE = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const CALLER_SPAN_ID = 'b7ad6b7169203331'
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN_ID}-01`
/** Polls of `until` (10 ms apart) for a span to arrive: 30 s at least, for a loaded machine. */
const ATTEMPTS = 3000

/** The OTEL_* variables that send spans to `otlp` as JSON; a batch goes out 50 ms after its first span. */
function otlpEnv (otlp: Receiver, more: Record<string, string> = {}): Record<string, string> {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50', ...more }
}

/** Starts `fastify-a2a serve` with `yaml` as its config file. */
async function serveWith (t: Test, yaml: string, env: Record<string, string>) {
  const dir = t.testdir({ 'agent.yml': yaml })
  return await serve(t, ['--config', join(dir, 'agent.yml')], env)
}

/** One `message/send` over HTTP, with a `traceparent` naming TRACE_ID; its task is completed. */
async function send (t: Test, url: string): Promise<void> {
  const res = await fetch(url + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
    body: JSON.stringify(rpc('message/send', { message: userMessage('traced over the wire') }))
  })
  t.equal(((await res.json()) as any).result.status.state, 'completed')
}

/** The span named `name` among those received; fails the test when there is not exactly one. */
function one (t: Test, spans: ExportedSpan[], name: string): ExportedSpan {
  const found = spans.filter(span => span.name === name)
  t.equal(found.length, 1, `one ${name} span`)
  return found[0]
}

const named = (otlp: Receiver, ...names: string[]) => () => names.every(name => spansOf(otlp.received).some(span => span.name === name))

t.test('each request is a span of @fastify/otel in the caller\'s trace, the parent of its operation\'s span', async t => {
  const otlp = await receiver(t)
  otlp.script(ACCEPTED)
  const server = await serveWith(t, 'telemetry:\n  enabled: true\n  service_name: test-agent\n', otlpEnv(otlp, { OTEL_SERVICE_NAME: 'not-this-one' }))
  await send(t, server.url)
  await until(named(otlp, 'request', 'a2a message/send', 'invoke_agent'), ATTEMPTS)
  const spans = spansOf(otlp.received)
  const request = one(t, spans, 'request')
  t.match(request, { scope: '@fastify/otel', kind: 2, traceId: TRACE_ID, parentSpanId: CALLER_SPAN_ID })
  t.match(request.attributes, { 'http.request.method': 'POST', 'http.route': '/' })
  const operation = one(t, spans, 'a2a message/send')
  t.match(operation, { scope: 'fastify-a2a', traceId: TRACE_ID, parentSpanId: request.spanId })
  const turn = one(t, spans, 'invoke_agent')
  t.match(turn, { scope: 'fastify-a2a', traceId: TRACE_ID, parentSpanId: operation.spanId })
  for (const span of spans) {
    t.match(span, { service: 'test-agent', serviceVersion: PACKAGE.version }, `${span.name}: telemetry.service_name, the package version`)
  }
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  t.same([...new Set(otlp.received.map(r => r.path))], ['/v1/traces'], 'no metrics or logs are exported, at shutdown either')
})

t.test('at SIGTERM the last spans are exported before the process exits 0; OTEL_SERVICE_NAME names the service', async t => {
  const otlp = await receiver(t)
  otlp.script(ACCEPTED)
  // A batch would wait ten minutes: only the shutdown exports it.
  const env = otlpEnv(otlp, { OTEL_BSP_SCHEDULE_DELAY: '600000', OTEL_SERVICE_NAME: 'env-agent' })
  const server = await serveWith(t, 'telemetry:\n  enabled: true\n', env)
  await send(t, server.url)
  t.same(otlp.received, [], 'nothing exported yet')
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  const spans = spansOf(otlp.received)
  t.same(spans.map(span => span.name).sort(), ['a2a message/send', 'invoke_agent', 'request'])
  t.ok(spans.every(span => span.service === 'env-agent'), 'service.name is OTEL_SERVICE_NAME')
  t.ok(server.logs.some(line => line.includes('"msg":"shutting down"')))
  t.notOk(server.logs.some(line => line.includes('telemetry:')), 'the export went through')
})

t.test('docs/operations.md\'s recipe prints the spans on stdout (OTEL_TRACES_EXPORTER=console)', async t => {
  // As written, with the built CLI for `npx fastify-a2a` and any free port for the default one.
  const code = snippet('telemetry-console').replace('npx fastify-a2a serve', `"${process.execPath}" "${CLI}" serve --port 0`)
  t.not(code, snippet('telemetry-console'), 'the recipe starts the server with npx fastify-a2a serve')
  const child = spawnChild(t, 'bash', ['-e', '-c', code], { cwd: t.testdir({}), env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'inherit'] })
  let stdout = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  await until(() => stdout.includes('"msg":"agent serving"'), ATTEMPTS)
  const serving = stdout.split('\n').find(line => line.includes('"msg":"agent serving"')) as string
  await send(t, JSON.parse(serving).address)
  await until(() => stdout.includes("name: 'a2a message/send'"), ATTEMPTS)
  t.ok(stdout.includes(`traceId: '${TRACE_ID}'`), 'in the caller\'s trace')
  t.ok(stdout.includes("name: 'request'"), 'with the request\'s span')
})

t.test('with telemetry.enabled false no SDK starts: nothing reaches the receiver, even at shutdown', async t => {
  const otlp = await receiver(t)
  const server = await serveWith(t, 'telemetry:\n  enabled: false\n', otlpEnv(otlp))
  await send(t, server.url)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  t.same(otlp.received, [])
})

t.test('a collector that refuses the last spans is logged, and the process still exits 0', async t => {
  const otlp = await receiver(t)
  otlp.script(400)
  const server = await serveWith(t, 'telemetry:\n  enabled: true\n', otlpEnv(otlp, { OTEL_BSP_SCHEDULE_DELAY: '600000' }))
  await send(t, server.url)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  t.equal(otlp.received.length, 1, 'the export was tried once (400 is not retried)')
  t.ok(server.logs.some(line => line.includes('telemetry: the last spans could not be exported')))
})

t.test('a collector that does not answer holds the exit 3 s at most: logged, exit 0', async t => {
  const otlp = await receiver(t)
  let answer = (): void => {}
  const answered = new Promise<void>(resolve => { answer = resolve })
  otlp.script(async () => {
    await answered
    return { status: 200 }
  })
  // The exporter's own timeout (10 s by default) must not end the wait first.
  const env = otlpEnv(otlp, { OTEL_BSP_SCHEDULE_DELAY: '600000', OTEL_EXPORTER_OTLP_TIMEOUT: '600000' })
  const server = await serveWith(t, 'telemetry:\n  enabled: true\n', env)
  await send(t, server.url)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  answer()
  t.equal(otlp.received.length, 1, 'the export was sent')
  t.ok(server.logs.some(line => line.includes('telemetry: the last spans were not exported in time')))
})

/** A module hook for `node --import` under which `@opentelemetry/sdk-node` cannot be found, as when it is not installed. */
const WITHOUT_SDK = (() => {
  const hooks = 'export async function resolve (specifier, context, next) {' +
    ' if (specifier === "@opentelemetry/sdk-node") throw Object.assign(new Error("Cannot find package " + specifier), { code: "ERR_MODULE_NOT_FOUND" });' +
    ' return next(specifier, context) }'
  const register = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(hooks))})`
  return 'data:text/javascript,' + encodeURIComponent(register)
})()

t.test('telemetry.enabled without its optional packages installed: one line saying what to install, exit 1', async t => {
  const dir = t.testdir({ 'agent.yml': 'telemetry:\n  enabled: true\n' })
  const res = await runChild(t, process.execPath, ['--import', WITHOUT_SDK, CLI, 'serve', '--port', '0', '--config', join(dir, 'agent.yml')], {
    cwd: dir, env: { PATH: process.env.PATH }, timeoutMs: 60_000
  })
  t.equal(res.status, 1)
  t.equal(res.stderr, 'fastify-a2a: telemetry.enabled needs @opentelemetry/sdk-node, which is not installed (npm install @opentelemetry/sdk-node @fastify/otel)\n')
  t.notMatch(res.stdout, /agent serving/)
})
