// Traces that outlive the request (docs/architecture.md, "Tracing: the design", step 3): each webhook delivery attempt
// is a span in the trace of the change that queued it, whichever instance makes it and however much later, and the
// webhook request carries that span's traceparent; a cancel made on one instance of a run on another shows in the
// canceller's trace. In memory, on Redis and on PostgreSQL, two instances in one process sharing the SDK's in-memory
// exporter; and no span holds a configured secret.
import { randomBytes } from 'node:crypto'
import { SpanStatusCode } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { A2AConfigInput } from '../index.js'
import { build, postgresSchema, privateRedis, receiver, testDatabase, until, userMessage, type Receiver } from './helper.js'
import { executor } from './scale-out-scenarios.js'
import { storedTask } from './crash-scenarios.js'
import type { PushConfigStore } from '../services/push/store.js'
import type { StoredTask, TaskStore } from '../services/tasks/store.js'

const exporter = new InMemorySpanExporter()
new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register()
t.beforeEach(() => { exporter.reset() })

const API_KEY = 'tracing-api-key-4f1c9d2e7a'
const SIGNING_SECRET = 'whsec_' + Buffer.from('tracing-signing-secret-0123456789').toString('base64')
const TOKEN = 'tracing-config-token-8b3e'
const CREDENTIALS = 'tracing-webhook-credentials-5d7a'

const spans = (): ReadableSpan[] => exporter.getFinishedSpans()
const named = (name: string): ReadableSpan[] => spans().filter(span => span.name === name)

/** A caller's trace: its id, the span the server's work hangs under, and the header that says so. */
function callerTrace (): { traceId: string, spanId: string, traceparent: string } {
  const traceId = randomBytes(16).toString('hex')
  const spanId = randomBytes(8).toString('hex')
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` }
}

async function rpcCall (app: FastifyInstance, method: string, params: unknown, traceparent: string): Promise<any> {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'x-api-key': API_KEY, traceparent },
    payload: { jsonrpc: '2.0', id: 1, method, params }
  })
  return res.json().result
}

interface Backend {
  name: string
  /** This backend's config, with `extra`'s sections in place of its own; null: one instance only (memory). */
  config: (t: Test) => Promise<(extra?: A2AConfigInput) => A2AConfigInput>
  shared: boolean
}

function secured (base: A2AConfigInput): A2AConfigInput {
  return {
    ...base,
    security: { enabled: true, auth: { api_key: { keys: [{ key: API_KEY, id: 'tracer', scopes: ['*'] }] } } },
    push_notifications: {
      ...base.push_notifications,
      config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.05, signing_secret: SIGNING_SECRET }
    }
  }
}

const database = testDatabase(t)

const backends: Backend[] = [
  { name: 'memory', shared: false, config: async () => extra => secured({ ...extra }) },
  {
    name: 'Redis',
    shared: true,
    config: async t => {
      const redis = await privateRedis(t)
      return extra => secured({
        services: { cache: { type: 'cache', url: redis.url } },
        tasks: { backend: 'kvcache' },
        push_notifications: { backend: 'kvcache' },
        server: { shutdown_timeout: 0.5 },
        ...extra
      })
    }
  },
  {
    name: 'PostgreSQL',
    shared: true,
    config: async t => {
      const url = await postgresSchema(t, await database)
      return extra => secured({
        services: { postgres: { url } },
        tasks: { backend: 'postgres' },
        push_notifications: { backend: 'postgres' },
        server: { shutdown_timeout: 0.5 },
        ...extra
      })
    }
  }
]

/** The requests `hook` received for task `id` in state `state`. */
const deliveriesOf = (hook: Receiver, id: string, state: string) => hook.received.filter(r => r.body?.id === id && r.body.status.state === state)

for (const backend of backends) {
  t.test(`${backend.name}: each delivery attempt is a span in the trace of the change, and its request carries it`, async t => {
    const config = await backend.config(t)
    const hook = await receiver(t)
    // The first attempt fails: its span says so, and the retry is a span of its own.
    hook.script(503, 200)
    const a = await build(t, { executor, config: config() })
    const b = backend.shared ? await build(t, { executor, config: config() }) : a
    const caller = callerTrace()
    const task = await rpcCall(a, 'message/send', {
      message: userMessage('traced delivery'),
      configuration: { pushNotificationConfig: { url: `${hook.url}/hook`, token: TOKEN, authentication: { schemes: ['Bearer'], credentials: CREDENTIALS } } }
    }, caller.traceparent)
    t.equal(task.status.state, 'completed')
    await until(() => deliveriesOf(hook, task.id, 'completed').length === 1)
    await until(async () => (await a.a2aNotifier.backlog()) + (await b.a2aNotifier.backlog()) === 0)

    const [send] = named('a2a message/send')
    t.equal(send.spanContext().traceId, caller.traceId, 'the send is in the caller\'s trace')
    const inTrace = new Map(spans().filter(span => span.spanContext().traceId === caller.traceId).map(span => [span.spanContext().spanId, span]))
    const attempts = named('a2a push delivery')
    t.ok(attempts.length >= 3, `an attempt per delivery and the retry (${attempts.length})`)
    for (const attempt of attempts) {
      t.equal(attempt.spanContext().traceId, caller.traceId, 'each attempt is in the trace of the send')
      t.ok(inTrace.has(attempt.parentSpanContext?.spanId as string), 'under the span that wrote the change')
      t.match(attempt.attributes, {
        'a2a.task.id': task.id,
        'a2a.push.config.id': String,
        'a2a.push.webhook_id': /^msg_/,
        'server.address': '127.0.0.1',
        'server.port': hook.port
      })
    }
    const failed = attempts.filter(span => span.attributes['a2a.push.outcome'] === 'retry')
    t.equal(failed.length, 1, 'the first attempt failed')
    t.match(failed[0], { status: { code: SpanStatusCode.ERROR }, attributes: { 'http.response.status_code': 503, 'error.type': '503', 'a2a.push.attempt': 1 } })
    const retried = attempts.find(span => span.attributes['a2a.push.webhook_id'] === failed[0].attributes['a2a.push.webhook_id'] && span !== failed[0])
    t.match(retried, { attributes: { 'a2a.push.attempt': 2, 'a2a.push.outcome': 'delivered', 'http.response.status_code': 200 }, status: { code: SpanStatusCode.UNSET } })

    // Every request the receiver got names the span of its attempt.
    const bySpan = new Map(attempts.map(span => [span.spanContext().spanId, span]))
    t.equal(hook.received.length, attempts.length)
    for (const request of hook.received) {
      const [version, traceId, spanId, flags] = String(request.headers.traceparent).split('-')
      t.same([version, traceId, flags], ['00', caller.traceId, '01'])
      t.equal(bySpan.get(spanId)?.attributes['a2a.push.webhook_id'], request.headers['webhook-id'], 'the traceparent is its attempt\'s span')
    }

    const everything = JSON.stringify(spans().map(span => ({
      name: span.name, attributes: span.attributes, events: span.events, links: span.links, status: span.status
    })))
    for (const secret of [API_KEY, SIGNING_SECRET, TOKEN, CREDENTIALS, 'tracing-signing-secret']) {
      t.notOk(everything.includes(secret), `no span holds ${secret.slice(0, 16)}…`)
    }
  })

  if (!backend.shared) continue

  t.test(`${backend.name}: a cancel on B of a run on A shows A's side in B's trace`, async t => {
    const config = await backend.config(t)
    const a = await build(t, { executor, config: config() })
    const b = await build(t, { executor, config: config() })
    const task = await rpcCall(a, 'message/send', { message: userMessage('hang'), configuration: { blocking: false } }, callerTrace().traceparent)
    await until(() => a.a2aTasks.running === 1)
    const canceller = callerTrace()
    t.equal((await rpcCall(b, 'tasks/cancel', { id: task.id }, canceller.traceparent)).status.state, 'canceled')
    await until(() => a.a2aTasks.running === 0)
    const [cancel] = named('a2a tasks/cancel')
    t.equal(cancel.spanContext().traceId, canceller.traceId)
    const aborts = named('a2a task abort')
    t.equal(aborts.length, 1, 'one instance stopped the run: A')
    t.equal(aborts[0].spanContext().traceId, canceller.traceId, 'in the canceller\'s trace')
    t.equal(aborts[0].parentSpanContext?.spanId, cancel.spanContext().spanId, 'a child of the cancel on B')
    t.match(aborts[0].attributes, { 'a2a.task.id': task.id })
  })
}

t.test('an attempt that cannot connect: ERROR with the error\'s code, and the port the scheme implies', async t => {
  const config = await backends[0].config(t)
  const base = config()
  const app = await build(t, {
    executor,
    config: { ...base, push_notifications: { ...base.push_notifications, config: { ...base.push_notifications?.config, max_retries: 0 } } }
  })
  const task = await rpcCall(app, 'message/send', {
    message: userMessage('nobody listens'),
    // Nothing listens on 127.0.0.1:443 on the test machines.
    configuration: { pushNotificationConfig: { url: 'https://127.0.0.1/hook' } }
  }, callerTrace().traceparent)
  await until(() => named('a2a push delivery').length === 2)
  await until(async () => (await app.a2aNotifier.backlog()) === 0)
  for (const attempt of named('a2a push delivery')) {
    t.match(attempt, {
      status: { code: SpanStatusCode.ERROR },
      attributes: { 'a2a.task.id': task.id, 'a2a.push.outcome': 'final', 'server.port': 443, 'error.type': 'ECONNREFUSED' }
    })
    t.equal(attempt.attributes['http.response.status_code'], undefined, 'no answer, no status')
  }
})

/**
 * A writer that dies once its change is in the outbox: the stores an instance of `backend` would use, on the backend
 * `config` names, and nothing to queue the deliveries.
 */
async function deadWriter (t: Test, backend: string, config: A2AConfigInput): Promise<{ tasks: TaskStore, push: PushConfigStore }> {
  if (backend === 'Redis') {
    const { Redis } = await import('ioredis')
    const { RedisTaskStore } = await import('../services/tasks/redis-store.js')
    const { RedisPushConfigStore } = await import('../services/push/redis-store.js')
    const client = new Redis(String(config.services?.cache?.url))
    t.teardown(() => client.disconnect())
    return {
      tasks: new RedisTaskStore(client, { keyPrefix: 'a2a:task:', ttlSeconds: 3600, leaseTtlMs: 500, pushKeyPrefix: 'a2a:push:' }),
      push: new RedisPushConfigStore(client, { keyPrefix: 'a2a:push:' })
    }
  }
  const { default: pg } = await import('pg')
  const { PostgresTaskStore } = await import('../services/tasks/postgres-store.js')
  const { PostgresPushConfigStore } = await import('../services/push/postgres-store.js')
  const pool = new pg.Pool({ connectionString: String(config.services?.postgres?.url), max: 2 })
  t.teardown(() => pool.end())
  return { tasks: new PostgresTaskStore(pool, { ttlSeconds: 3600, leaseTtlMs: 500, pushOutbox: true }), push: new PostgresPushConfigStore(pool) }
}

for (const backend of backends.filter(b => b.shared)) {
  t.test(`${backend.name}: a change relayed from the push outbox after its writer died is delivered in the writer's trace`, async t => {
    const config = await backend.config(t)
    const hook = await receiver(t)
    // The app migrates the schema and takes the leases that lapse; started first, it relays what the writer leaves.
    const shared = config({ tasks: { ...config().tasks, lease_ttl: 0.5 } })
    const app = await build(t, { executor, config: shared })
    const dead = await deadWriter(t, backend.name, shared)
    const writer = callerTrace()
    await dead.push.put('t-1', { url: `${hook.url}/hook` }, { maxPerTask: 10 })
    await dead.tasks.insert(storedTask('t-1', 'submitted', 1))
    const change: StoredTask = { ...storedTask('t-1', 'in_progress', 2), trace: { traceparent: writer.traceparent } }
    t.equal(await dead.tasks.replace(change), 'outbox', 'the change is in the outbox, with its trace')
    await until(() => hook.received.some(r => r.body?.status?.state === 'in_progress'), 1000)
    await until(() => named('a2a push delivery').some(span => span.attributes['a2a.task.state'] === 'in_progress'))
    const attempt = named('a2a push delivery').find(span => span.attributes['a2a.task.state'] === 'in_progress') as ReadableSpan
    t.equal(attempt.spanContext().traceId, writer.traceId, 'in the dead writer\'s trace')
    t.equal(attempt.parentSpanContext?.spanId, writer.spanId, 'under the span that wrote the change')
    // The reaper fails the task its writer left: a change of its own, delivered too.
    await until(() => hook.received.some(r => r.body?.status?.state === 'failed'), 1000)
    await until(async () => (await app.a2aNotifier.backlog()) === 0)
  })
}
