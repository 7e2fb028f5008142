import fc from 'fast-check'
import t from 'tap'
import { build, parseSseBlock, userMessage } from './helper.js'

// Seeded and replayable: FC_SEED=<n> npm run test:only -- test/fuzz.test.ts replays a failure (fast-check prints
// the seed and the counterexample path when a property fails).
const SEED = Number(process.env.FC_SEED ?? 20261122)
const RUNS = Number(process.env.FC_RUNS ?? 150)

const METHODS = ['message/send', 'message/stream', 'tasks/get', 'tasks/cancel', 'tasks/list', 'tasks/resubscribe',
  'tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete', 'status', 'capabilities', 'list_directory', 'agent/getAuthenticatedExtendedCard']

// 401: agent/getAuthenticatedExtendedCard for the anonymous caller (CONTRACT.md §5).
const TRANSPORT = new Set([200, 400, 401, 413, 415])

// With security on, also: 403 (scope), 429 (failed authentications from one address).
const SECURED = new Set([...TRANSPORT, 403, 429])

/** An answer must come within this: a request that takes longer counts as a hang. */
const HANG_MS = 10_000

// The requests set webhooks on hooks.example.com, which no one answers here: each server below closes without
// waiting `server.shutdown_timeout` for those deliveries (at the default 10 s, a test spent 9 s of its 10 closing).

/** Checks one answer: a documented status and, for JSON, a JSON-RPC 2.0 envelope. */
function checkAnswer (status: number, type: string | undefined, body: string, allowed = TRANSPORT): void {
  if (!allowed.has(status)) throw new Error(`status ${status}: ${body.slice(0, 200)}`)
  if (type?.startsWith('text/event-stream')) {
    // Each event is one `data:` line, after an `id:` line when the stream has ids.
    for (const block of body.split('\n\n').filter(Boolean)) {
      const frame = parseSseBlock(block)
      if (frame === null) throw new Error(`not an SSE event: ${block.slice(0, 100)}`)
      envelope(frame.data)
    }
    return
  }
  envelope(JSON.parse(body))
}

function envelope (value: any): void {
  if (value?.jsonrpc !== '2.0' || !('id' in value)) throw new Error(`not a JSON-RPC envelope: ${JSON.stringify(value).slice(0, 200)}`)
  if (('result' in value) === ('error' in value)) throw new Error('needs exactly one of result and error')
  if ('error' in value && (typeof value.error.code !== 'number' || typeof value.error.message !== 'string')) {
    throw new Error(`bad error object: ${JSON.stringify(value.error)}`)
  }
}

/** Every type a field can be given, valid or not. */
const anyValue = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.double(), fc.string(), fc.constant(''),
  fc.array(fc.jsonValue(), { maxLength: 3 }), fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
  fc.constant(-0), fc.constant(Number.MAX_SAFE_INTEGER + 2)
)

/** The request, as JSON, with the field at `path` (as far as it leads through objects) set to `value`. */
function mutated (request: any, path: Array<string | number>, value: unknown): string {
  let target = request
  for (let i = 0; i < path.length - 1; i++) {
    const next = target?.[path[i]]
    if (typeof next !== 'object' || next === null) break
    target = next
  }
  if (typeof target === 'object' && target !== null) target[path[path.length - 1]] = value
  return JSON.stringify(request)
}

/**
 * A valid request of one of `methods` with `params`, then one field somewhere in it (a path through `keys`) replaced
 * by a value of another type.
 */
function mutatedRequests (methods: string[], keys: Array<string | number>, params: () => Record<string, unknown>) {
  return fc.record({
    method: fc.constantFrom(...methods),
    path: fc.array(fc.constantFrom(...keys), { minLength: 1, maxLength: 4 }),
    value: anyValue
  }).map(({ method, path, value }) => mutated({ jsonrpc: '2.0', id: 1, method, params: params() }, path, value))
}

/** A valid request, then one field somewhere in it replaced by a value of another type. */
const mutatedRequest = mutatedRequests(METHODS, ['params', 'message', 'parts', 0, 'text', 'kind', 'role', 'messageId', 'configuration',
  'pushNotificationConfig', 'url', 'id', 'historyLength', 'pageSize', 'taskId', 'metadata', 'jsonrpc', 'file'], () => ({
  id: 'x',
  taskId: 'x',
  path: '.',
  message: userMessage('hello', { parts: [{ kind: 'text', text: 'hello' }, { kind: 'file', file: { uri: 'https://x/y', mimeType: 'text/plain' } }] }),
  configuration: { blocking: true, historyLength: 1, pushNotificationConfig: { url: 'https://hooks.example.com/a' } },
  pushNotificationConfig: { url: 'https://hooks.example.com/b' }
}))

/** Raw texts JSON.stringify cannot write: huge numbers, prototype keys, duplicate keys, deep nesting, odd unicode. */
const rawText = fc.oneof(
  fc.constant('{"jsonrpc":"2.0","id":1e309,"method":"status"}'),
  fc.constant('{"jsonrpc":"2.0","id":-0,"method":"status"}'),
  fc.constant('{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"a","__proto__":{"polluted":true}}}'),
  fc.constant('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"constructor":{"prototype":{"polluted":true}},"message":{"role":"user","messageId":"m","parts":[{"kind":"text","text":"x"}]}}}'),
  fc.constant('{"__proto__":{"polluted":true},"jsonrpc":"2.0","id":2,"method":"status"}'),
  fc.constant('{"jsonrpc":"2.0","id":1,"id":"dup","method":"status","method":"tasks/list"}'),
  fc.constant('['.repeat(10_000) + ']'.repeat(10_000)),
  fc.constant('{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)),
  fc.constant('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m","parts":[{"kind":"text","text":"\\ud800 lone \\udfff surrogates"}]}}}'),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constant('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m","parts":[{"kind":"text","text":"' + 'x'.repeat(1_000_000) + '"}]}}}')
)

/** Fails a request that does not answer within HANG_MS, instead of letting the test time out. */
async function bounded<T> (work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const hang = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms: ${what.slice(0, 200)}`)), HANG_MS)
  })
  try {
    return await Promise.race([work, hang])
  } finally {
    clearTimeout(timer)
  }
}

/** Text with every kind of character: astral planes, combining marks, controls, lone surrogates. */
const oddText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('\ud800', '\udfff', 'a\u0000b', '\u202e\u200f', 'e\u0301', '𝕏'.repeat(20))
)

t.test('no input knocks the server over: documented statuses, JSON-RPC envelopes, no pollution, still serving', async t => {
  const app = await build(t, { config: { server: { request_timeout: 2, shutdown_timeout: 0 }, agent: { name: 'Fuzz', delay_ms: 0 } } })
  const send = async (payload: string, type = 'application/json') => {
    const res = await bounded(app.inject({ method: 'POST', url: '/', headers: { 'content-type': type }, payload }), payload)
    checkAnswer(res.statusCode, res.headers['content-type'] as string | undefined, res.body)
  }
  await fc.assert(fc.asyncProperty(fc.jsonValue().map(v => JSON.stringify(v)), p => send(p)), { seed: SEED, numRuns: RUNS })
  await fc.assert(fc.asyncProperty(mutatedRequest, p => send(p)), { seed: SEED, numRuns: RUNS * 2 })
  await fc.assert(fc.asyncProperty(rawText, p => send(p)), { seed: SEED, numRuns: 40 })
  await fc.assert(fc.asyncProperty(fc.string({ maxLength: 50 }), fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/json'), (body, type) => send(body, type)), { seed: SEED, numRuns: RUNS })
  await fc.assert(fc.asyncProperty(oddText, fc.constantFrom(...METHODS), (text, method) => send(JSON.stringify({
    jsonrpc: '2.0', id: text, method, params: { id: text, path: text, message: userMessage(text, { messageId: text }) }
  }))), { seed: SEED, numRuns: RUNS })
  t.equal(({} as any).polluted, undefined, 'Object.prototype is untouched')
  t.equal((Object.prototype as any).polluted, undefined)
  const after = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 'after', method: 'status' } })
  t.equal(after.json().result.status, 'ok', 'the server still serves')
})

t.test('with security on, random credentials and requests get 401, 403 or 429 envelopes and never get through', async t => {
  const key = 'fuzz-key-0123456789abcdef'
  const app = await build(t, {
    config: {
      security: { enabled: true, auth: { api_key: { keys: [{ key, scopes: ['api:read'], id: 'fuzzer' }] } } },
      server: { shutdown_timeout: 0 },
      agent: { name: 'Fuzz', delay_ms: 0 }
    }
  })
  const credential = fc.oneof(
    fc.record({ 'x-api-key': fc.string({ minLength: 1, maxLength: 60 }).filter(v => /^[\x21-\x7e]+$/.test(v)) }),
    fc.record({ authorization: fc.oneof(fc.string({ maxLength: 60 }), fc.string({ maxLength: 40 }).map(v => `Bearer ${v}`)).filter(v => /^[\x20-\x7e]*$/.test(v)) }),
    fc.constant({}),
    fc.constant({ 'x-api-key': key })
  )
  let through = 0
  await fc.assert(fc.asyncProperty(credential, mutatedRequest, async (headers, payload) => {
    const res = await bounded(app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json', ...headers }, payload }), payload)
    checkAnswer(res.statusCode, res.headers['content-type'] as string | undefined, res.body, SECURED)
    const good = (headers as Record<string, string>)['x-api-key'] === key
    if (!good && res.statusCode !== 401 && res.statusCode !== 429) throw new Error(`a bad credential got ${res.statusCode}`)
    if (good && res.statusCode === 200) through++
  }), { seed: SEED, numRuns: RUNS })
  t.ok(through > 0, `the right key still gets through (${through} times)`)
  t.equal((Object.prototype as any).polluted, undefined)
})

/** Every value that is not an object, for the slots that must hold one. */
const NOT_OBJECTS = [0, 1.5, 'x', '', null, true, []]

/** The paths of every array slot in `value`, e.g. ['message', 'parts', 1]. */
function arraySlots (value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value !== 'object' || value === null) return []
  const slots: Array<Array<string | number>> = []
  for (const [key, child] of Object.entries(value)) {
    const at = [...path, Array.isArray(value) ? Number(key) : key]
    if (Array.isArray(value)) slots.push(at)
    slots.push(...arraySlots(child, at))
  }
  return slots
}

t.test('a value that is no object in any array slot of any method\'s params is -32602 naming the slot, never -32603', async t => {
  const app = await build(t, { config: { server: { shutdown_timeout: 0 } } })
  const params = {
    id: 'x',
    taskId: 'x',
    path: '.',
    message: userMessage('hello', {
      parts: [{ kind: 'text', text: 'hello' }, { kind: 'file', file: { uri: 'https://x/y', mimeType: 'text/plain' } }, { kind: 'data', data: { a: [1] } }],
      referenceTaskIds: ['r1', 'r2'],
      extensions: ['e1']
    }),
    configuration: {
      blocking: true,
      acceptedOutputModes: ['text/plain', 'application/json'],
      pushNotificationConfig: { url: 'https://hooks.example.com/a', authentication: { schemes: ['Bearer', 'ApiKey'] } }
    },
    pushNotificationConfig: { url: 'https://hooks.example.com/b', authentication: { schemes: ['Bearer'] } },
    metadata: { list: [1, 2] }
  }
  const slots = arraySlots(params)
  t.ok(slots.length >= 12, `${slots.length} array slots`)
  let checked = 0
  for (const method of METHODS) {
    for (const slot of slots) {
      for (const value of NOT_OBJECTS) {
        const mutated = structuredClone(params) as any
        let target = mutated
        for (const key of slot.slice(0, -1)) target = target[key]
        target[slot[slot.length - 1]] = value
        const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 1, method, params: mutated } })
        const type = String(res.headers['content-type'])
        checkAnswer(res.statusCode, type, res.body)
        const body = type.startsWith('text/event-stream') ? (parseSseBlock(res.body.split('\n\n')[0]) as { data: any }).data : res.json()
        if (body.error?.code === -32603) t.fail(`${method} ${slot.join('.')} = ${JSON.stringify(value)}: -32603`)
        checked++
      }
    }
  }
  t.equal(checked, METHODS.length * slots.length * NOT_OBJECTS.length)
  // The case that crashed: a part that is no object.
  for (const value of NOT_OBJECTS) {
    const message = userMessage('x', { parts: [{ kind: 'text', text: 'x' }, value] })
    const res = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 2, method: 'message/send', params: { message } } })
    t.match(res.json(), { error: { code: -32602, data: /^params\.message\.parts\.1/ } }, `a part ${JSON.stringify(value)}`)
  }
})

const V10_METHODS = ['SendMessage', 'SendStreamingMessage', 'GetTask', 'ListTasks', 'CancelTask', 'SubscribeToTask',
  'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig', 'GetExtendedAgentCard']

/** A valid v1.0 request (CONTRACT.md §11.3), then one field somewhere in it, camelCase or snake_case, replaced. */
const mutatedV10Request = mutatedRequests(V10_METHODS, ['params', 'message', 'parts', 0, 1, 'text', 'raw', 'url', 'data', 'role', 'messageId',
  'message_id', 'configuration', 'taskPushNotificationConfig', 'returnImmediately', 'historyLength', 'history_length',
  'id', 'taskId', 'task_id', 'pageSize', 'pageToken', 'status', 'statusTimestampAfter', 'includeArtifacts',
  'authentication', 'scheme', 'metadata', 'mediaType', 'tenant'], () => ({
  id: 'x',
  taskId: 'x',
  url: 'https://hooks.example.com/a',
  authentication: { scheme: 'Bearer', credentials: 'c' },
  message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hello' }, { url: 'https://x/y', mediaType: 'text/plain' }] },
  configuration: { historyLength: 1, taskPushNotificationConfig: { url: 'https://hooks.example.com/b' } },
  status: 'TASK_STATE_COMPLETED',
  pageSize: 2,
  statusTimestampAfter: '2026-01-01T00:00:00Z'
}))

t.test('v1.0 methods: any mutated request gets a documented status and envelope, never -32603, and v1.0 error data', async t => {
  const app = await build(t, { config: { server: { request_timeout: 2, shutdown_timeout: 0 }, agent: { name: 'Fuzz', delay_ms: 0 } } })
  let errors = 0
  await fc.assert(fc.asyncProperty(mutatedV10Request, fc.constantFrom({}, { 'a2a-version': '1.0' }), async (payload, headers) => {
    const res = await bounded(app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json', ...headers }, payload }), payload)
    const type = res.headers['content-type'] as string | undefined
    checkAnswer(res.statusCode, type, res.body)
    const body = type?.startsWith('text/event-stream') === true ? (parseSseBlock(res.body.split('\n\n')[0]) as { data: any }).data : res.json()
    if (body.error === undefined) return
    if (body.error.code === -32603) throw new Error(`-32603 for ${payload}`)
    // A v1.0 method name, even mutated away from its params: the error's data is the ErrorInfo array.
    if (V10_METHODS.includes(JSON.parse(payload).method) && body.error.data?.[0]?.['@type'] !== 'type.googleapis.com/google.rpc.ErrorInfo') {
      throw new Error(`no ErrorInfo: ${JSON.stringify(body.error)}`)
    }
    errors++
  }), { seed: SEED, numRuns: RUNS * 2 })
  t.ok(errors > 0, `${errors} mutated requests were refused, each with its ErrorInfo`)
  const after = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 'after', method: 'ListTasks', params: {} } })
  t.type(after.json().result.totalSize, 'number', 'the server still serves')
})

/** A REST request (CONTRACT.md §12): a route, a path segment, a query string and a body, each possibly mangled. */
const restRequest = fc.record({
  route: fc.constantFrom<[string, string]>(
    ['POST', '/message:send'], ['POST', '/message:stream'], ['GET', '/tasks'], ['GET', '/tasks/{id}'], ['POST', '/tasks/{id}:cancel'],
    ['GET', '/tasks/{id}:subscribe'], ['POST', '/tasks/{id}:subscribe'], ['POST', '/tasks/{id}:other'], ['DELETE', '/tasks/{id}'],
    ['POST', '/tasks/{id}/pushNotificationConfigs'], ['GET', '/tasks/{id}/pushNotificationConfigs'],
    ['GET', '/tasks/{id}/pushNotificationConfigs/{id}'], ['DELETE', '/tasks/{id}/pushNotificationConfigs/{id}'], ['GET', '/extendedAgentCard']
  ),
  id: fc.oneof(fc.constant('known'), fc.string({ maxLength: 20 }), fc.constantFrom('a:b', '..', '%3A', '%', 'x'.repeat(300))),
  query: fc.dictionary(fc.constantFrom('historyLength', 'pageSize', 'pageToken', 'status', 'contextId', 'statusTimestampAfter', 'includeArtifacts', 'A2A-Version', 'x'),
    fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String), fc.constantFrom('true', 'false', '-1', '1e3', 'TASK_STATE_WORKING', '2026-01-01T00:00:00Z')), { maxKeys: 3 }),
  body: fc.oneof(fc.constant(undefined), fc.constant('null'), fc.constant(''), fc.jsonValue().map(v => JSON.stringify(v)), mutatedV10Request.map(r => JSON.stringify(JSON.parse(r).params)))
})

/** What a REST answer may be: a documented status, and for an error a google.rpc.Status body. */
const REST_STATUSES = new Set([200, 201, 204, 400, 404, 413, 415])

t.test('REST routes: any path, query and body get a documented status and, for an error, a google.rpc.Status', async t => {
  const app = await build(t, { config: { server: { request_timeout: 2, shutdown_timeout: 0 }, agent: { name: 'Fuzz', delay_ms: 0 } } })
  const known = (await app.inject({ method: 'POST', url: '/message:send', payload: { message: { messageId: 'k', role: 'ROLE_USER', parts: [{ text: 'k' }] } } })).json().task.id
  let errors = 0
  await fc.assert(fc.asyncProperty(restRequest, async ({ route: [method, path], id, query, body }) => {
    const segment = id === 'known' ? known : encodeURIComponent(id).replace(/%3A/gi, ':')
    const url = path.replaceAll('{id}', segment) + (Object.keys(query).length === 0 ? '' : '?' + new URLSearchParams(query).toString())
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' }
    const res = await bounded(app.inject({ method: method as 'GET', url, headers, payload: body }), `${method} ${url} ${body ?? ''}`)
    // No route (Fastify's own 404), or a path parameter past the host's maxParamLength (Fastify's 414, 100 chars by default).
    if ((res.statusCode === 404 || res.statusCode === 414) && !String(res.headers['content-type']).startsWith('application/a2a+json')) return
    // A method no route has (DELETE /tasks/{id}) is the host's to answer: Fastify reads its body there, not ours.
    if (method === 'DELETE' && path === '/tasks/{id}') return
    if (!REST_STATUSES.has(res.statusCode)) throw new Error(`${method} ${url}: status ${res.statusCode}: ${res.body.slice(0, 200)}`)
    if (res.statusCode >= 400) {
      const error = res.json().error
      if (error?.code !== res.statusCode || typeof error.status !== 'string' || error.details?.[0]?.['@type'] !== 'type.googleapis.com/google.rpc.ErrorInfo') {
        throw new Error(`${method} ${url}: not a google.rpc.Status: ${res.body.slice(0, 200)}`)
      }
      errors++
    }
  }), { seed: SEED, numRuns: RUNS * 2 })
  t.ok(errors > 0, `${errors} requests refused, each with a google.rpc.Status`)
  t.equal((await app.inject({ method: 'GET', url: `/tasks/${known}` })).statusCode, 200, 'the server still serves')
})

/** A valid v0.3 proto SendMessageRequest or push config body (CONTRACT.md §12, `/v1`), then one field replaced. */
const mutatedV03Body = mutatedRequests(['x'], ['params', 'message', 'request', 'content', 0, 1, 'text', 'file', 'fileWithUri',
  'fileWithBytes', 'mimeType', 'data', 'role', 'messageId', 'message_id', 'configuration', 'blocking', 'pushNotification',
  'historyLength', 'acceptedOutputModes', 'pushNotificationConfig', 'config', 'configId', 'url', 'authentication', 'schemes',
  'metadata', 'extensions'], () => ({
  message: { messageId: 'm', role: 'ROLE_USER', content: [{ text: 'hello' }, { file: { fileWithUri: 'https://x/y', mimeType: 'text/plain' } }] },
  configuration: { blocking: true, historyLength: 1, pushNotification: { url: 'https://hooks.example.com/a', authentication: { schemes: ['Bearer'] } } },
  pushNotificationConfig: { url: 'https://hooks.example.com/b' },
  config: { pushNotificationConfig: { url: 'https://hooks.example.com/c' } }
})).map(request => JSON.stringify(JSON.parse(request).params))

const restV03Request = fc.record({
  route: fc.constantFrom<[string, string]>(
    ['POST', '/v1/message:send'], ['POST', '/v1/message:stream'], ['GET', '/v1/tasks'], ['GET', '/v1/tasks/{id}'], ['POST', '/v1/tasks/{id}:cancel'],
    ['GET', '/v1/tasks/{id}:subscribe'], ['POST', '/v1/tasks/{id}:subscribe'], ['POST', '/v1/tasks/{id}:other'],
    ['POST', '/v1/tasks/{id}/pushNotificationConfigs'], ['GET', '/v1/tasks/{id}/pushNotificationConfigs'],
    ['GET', '/v1/tasks/{id}/pushNotificationConfigs/{id}'], ['DELETE', '/v1/tasks/{id}/pushNotificationConfigs/{id}'], ['GET', '/v1/card']
  ),
  id: fc.oneof(fc.constant('known'), fc.string({ maxLength: 20 }), fc.constantFrom('a:b', '..', '%3A', '%')),
  query: fc.dictionary(fc.constantFrom('historyLength', 'pageSize', 'pageToken', 'state', 'contextId', 'A2A-Version', 'x'),
    fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String), fc.constantFrom('-1', '1e3', 'TASK_STATE_WORKING', 'completed', '1.0')), { maxKeys: 3 }),
  body: fc.oneof(fc.constant(undefined), fc.constant('null'), fc.constant(''), fc.jsonValue().map(v => JSON.stringify(v)), mutatedV03Body)
})

t.test('REST v0.3 routes: any path, query and body get a documented status and, for an error, the JSON-RPC error object', async t => {
  const app = await build(t, { config: { server: { request_timeout: 2, shutdown_timeout: 0 }, agent: { name: 'Fuzz', delay_ms: 0 } } })
  const known = (await app.inject({ method: 'POST', url: '/v1/message:send', payload: { message: { messageId: 'k', role: 'ROLE_USER', content: [{ text: 'k' }] } } })).json().task.id
  let errors = 0
  await fc.assert(fc.asyncProperty(restV03Request, async ({ route: [method, path], id, query, body }) => {
    const segment = id === 'known' ? known : encodeURIComponent(id).replace(/%3A/gi, ':')
    const url = path.replaceAll('{id}', segment) + (Object.keys(query).length === 0 ? '' : '?' + new URLSearchParams(query).toString())
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' }
    const res = await bounded(app.inject({ method: method as 'GET', url, headers, payload: body }), `${method} ${url} ${body ?? ''}`)
    if ((res.statusCode === 404 || res.statusCode === 414) && !String(res.headers['content-type']).startsWith('application/a2a+json')) return
    // `/v1/tasks/../x` is `/v1/x`, no route of ours: the host answers it (and reads its body) as it does any other.
    if (url.includes('/../') && res.json().code?.startsWith?.('FST_ERR_') === true) return
    if (!REST_STATUSES.has(res.statusCode)) throw new Error(`${method} ${url}: status ${res.statusCode}: ${res.body.slice(0, 200)}`)
    if (res.statusCode >= 400) {
      const error = res.json()
      if (typeof error.code !== 'number' || typeof error.message !== 'string' || 'error' in error) {
        throw new Error(`${method} ${url}: not a JSON-RPC error object: ${res.body.slice(0, 200)}`)
      }
      if (error.code === -32603) throw new Error(`${method} ${url} ${body ?? ''}: -32603`)
      errors++
    }
  }), { seed: SEED, numRuns: RUNS * 2 })
  t.ok(errors > 0, `${errors} requests refused, each with the v0.3 error object`)
  t.equal((await app.inject({ method: 'GET', url: `/v1/tasks/${known}` })).statusCode, 200, 'the server still serves')
})
