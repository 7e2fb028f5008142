import fc from 'fast-check'
import t from 'tap'
import { build, userMessage } from './helper.js'

// Seeded and replayable: FC_SEED=<n> npm run test:only -- test/fuzz.test.ts replays a failure (fast-check prints
// the seed and the counterexample path when a property fails).
const SEED = Number(process.env.FC_SEED ?? 20261122)
const RUNS = Number(process.env.FC_RUNS ?? 150)

const METHODS = ['message/send', 'message/stream', 'tasks/get', 'tasks/cancel', 'tasks/list', 'tasks/resubscribe',
  'tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete', 'status', 'capabilities', 'list_directory', 'agent/getAuthenticatedExtendedCard']

// 401: agent/getAuthenticatedExtendedCard for the anonymous caller (CONTRACT.md §5).
const TRANSPORT = new Set([200, 400, 401, 413, 415])

/** Checks one answer: a documented status and, for JSON, a JSON-RPC 2.0 envelope. */
function checkAnswer (status: number, type: string | undefined, body: string): void {
  if (!TRANSPORT.has(status)) throw new Error(`status ${status}: ${body.slice(0, 200)}`)
  if (type?.startsWith('text/event-stream')) {
    for (const block of body.split('\n\n').filter(Boolean)) {
      if (!block.startsWith('data: ')) throw new Error(`not an SSE event: ${block.slice(0, 100)}`)
      envelope(JSON.parse(block.slice(6)))
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

/** A valid request, then one field somewhere in it replaced by a value of another type. */
const mutatedRequest = fc.record({
  method: fc.constantFrom(...METHODS),
  path: fc.array(fc.constantFrom('params', 'message', 'parts', 0, 'text', 'kind', 'role', 'messageId', 'configuration',
    'pushNotificationConfig', 'url', 'id', 'historyLength', 'pageSize', 'taskId', 'metadata', 'jsonrpc', 'file'), { minLength: 1, maxLength: 4 }),
  value: anyValue
}).map(({ method, path, value }) => {
  const request: any = {
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      id: 'x',
      taskId: 'x',
      path: '.',
      message: userMessage('hello', { parts: [{ kind: 'text', text: 'hello' }, { kind: 'file', file: { uri: 'https://x/y', mimeType: 'text/plain' } }] }),
      configuration: { blocking: true, historyLength: 1, pushNotificationConfig: { url: 'https://hooks.example.com/a' } },
      pushNotificationConfig: { url: 'https://hooks.example.com/b' }
    }
  }
  let target = request
  for (let i = 0; i < path.length - 1; i++) {
    const next = target?.[path[i]]
    if (typeof next !== 'object' || next === null) break
    target = next
  }
  if (typeof target === 'object' && target !== null) target[path[path.length - 1]] = value
  return JSON.stringify(request)
})

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

t.test('no input knocks the server over: documented statuses, JSON-RPC envelopes, no pollution, still serving', async t => {
  const app = await build(t, { config: { server: { request_timeout: 2 }, agent: { name: 'Fuzz', delay_ms: 0 } } })
  const send = async (payload: string, type = 'application/json') => {
    const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': type }, payload })
    checkAnswer(res.statusCode, res.headers['content-type'] as string | undefined, res.body)
  }
  await fc.assert(fc.asyncProperty(fc.jsonValue().map(v => JSON.stringify(v)), p => send(p)), { seed: SEED, numRuns: RUNS })
  await fc.assert(fc.asyncProperty(mutatedRequest, p => send(p)), { seed: SEED, numRuns: RUNS * 2 })
  await fc.assert(fc.asyncProperty(rawText, p => send(p)), { seed: SEED, numRuns: 40 })
  await fc.assert(fc.asyncProperty(fc.string({ maxLength: 50 }), fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/json'), (body, type) => send(body, type)), { seed: SEED, numRuns: RUNS })
  t.equal(({} as any).polluted, undefined, 'Object.prototype is untouched')
  t.equal((Object.prototype as any).polluted, undefined)
  const after = await app.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 'after', method: 'status' } })
  t.equal(after.json().result.status, 'ok', 'the server still serves')
})
