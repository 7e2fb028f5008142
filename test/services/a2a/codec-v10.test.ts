import t from 'tap'
import { camelKeys, decodeMessage, decodePushConfig, decodeState, encodeMessage, encodeTask, errorData } from '../../../services/a2a/codec-v10.js'
import { JsonRpcError, RpcCode, invalidParams } from '../../../services/kernel/errors.js'
import type { Task } from '../../../schemas/task.js'

t.test('§11.2 camelKeys renames snake_case keys at any depth, outside metadata and data, copying only what changes', async t => {
  const camel = { message: { messageId: 'a', parts: [{ text: 'x' }] } }
  t.equal(camelKeys(camel), camel, 'nothing to rename: the same object')
  t.equal(camelKeys('text'), 'text')
  const input = {
    before: 1,
    message: { message_id: 'a', parts: [{ text: 'x' }, { media_type: 'text/plain', raw: 'eA==' }] },
    metadata: { keep_me: { and_me: 1 } },
    after: 2
  }
  t.same(camelKeys(input), {
    before: 1,
    message: { messageId: 'a', parts: [{ text: 'x' }, { mediaType: 'text/plain', raw: 'eA==' }] },
    metadata: { keep_me: { and_me: 1 } },
    after: 2
  })
  t.same(input.message.parts[1], { media_type: 'text/plain', raw: 'eA==' }, 'the input is left as it was')
  t.same(camelKeys({ task_id: 'snake', taskId: 'camel' }), { taskId: 'camel' }, 'a camelCase twin wins, before it')
  t.same(camelKeys({ taskId: 'camel', task_id: 'snake' }), { taskId: 'camel' }, 'and after it')
})

t.test('§11.2 enums: names and numbers; anything else is no state or a -32602 for the role', async t => {
  t.equal(decodeState('TASK_STATE_WORKING'), 'in_progress')
  t.equal(decodeState(8), 'auth_required')
  t.equal(decodeState(0), undefined)
  t.equal(decodeState('working'), undefined)
  t.equal(decodeMessage({ messageId: 'm', role: 2, parts: [{ text: 'x' }] }).role, 'agent')
  t.throws(() => decodeMessage({ messageId: 'm', role: 7, parts: [{ text: 'x' }] }), { code: RpcCode.invalidParams, data: 'params.message.role: must be ROLE_USER or ROLE_AGENT' })
})

t.test('§11.2 a message decodes to the internal form; empty strings are the proto\'s unset values', async t => {
  t.same(decodeMessage({
    messageId: 'm',
    role: 'ROLE_USER',
    contextId: '',
    taskId: '',
    referenceTaskIds: [],
    extensions: [],
    metadata: null,
    parts: [{ raw: 'eA==', filename: '', mediaType: '' }, { url: 'https://x/y', metadata: { a: 1 } }, { data: [1, 2] }]
  }), {
    kind: 'message',
    role: 'user',
    messageId: 'm',
    parts: [{ kind: 'file', file: { bytes: 'eA==' } }, { kind: 'file', file: { uri: 'https://x/y' }, metadata: { a: 1 } }, { kind: 'data', data: [1, 2] }]
  })
  t.same(decodeMessage({ messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }], contextId: 'c', taskId: 't', referenceTaskIds: ['r'], extensions: ['e'], metadata: { k: 1 } }), {
    kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'text', text: 'x' }], contextId: 'c', taskId: 't', referenceTaskIds: ['r'], extensions: ['e'], metadata: { k: 1 }
  })
  t.throws(() => decodeMessage({ messageId: 'm', role: 1, parts: [{}] }), { message: 'Invalid params', data: 'params.message.parts.0: must have exactly one of text, raw, url, data' })
})

t.test('§11.3 a flat push config decodes to the internal form', async t => {
  t.same(decodePushConfig({ url: 'https://h/a', id: '', token: '', authentication: null }), { url: 'https://h/a' })
  t.same(decodePushConfig({ url: 'https://h/a', id: 'i', token: 'tok', authentication: { scheme: 'Basic', credentials: '' } }),
    { url: 'https://h/a', id: 'i', token: 'tok', authentication: { schemes: ['Basic'] } })
})

t.test('§11.2 encoding: no nulls, no kind, files as raw or url, artifacts and history cut on request', async t => {
  const task: Task = {
    id: 't',
    contextId: 'c',
    kind: 'task',
    status: { state: 'input_required', timestamp: '2026-01-01T00:00:00.000Z', message: { kind: 'message', role: 'agent', messageId: 'a', parts: [{ kind: 'text', text: 'more?' }] } },
    artifacts: [{ artifactId: 'x', description: 'd', parts: [{ kind: 'file', file: { name: 'n' } }], metadata: { m: 1 }, extensions: ['e'] }, { artifactId: 'y', description: null, parts: [], extensions: null }],
    history: [{ kind: 'message', role: 'user', messageId: 'u', parts: [{ kind: 'data', data: { d: 1 }, metadata: null }], extensions: ['e'], referenceTaskIds: ['r'], metadata: null }],
    metadata: null
  }
  // As the wire has it: absent fields are written as undefined, which JSON leaves out.
  const wire = (value: unknown) => JSON.parse(JSON.stringify(value))
  const out = wire(encodeTask(task))
  t.strictSame(out, {
    id: 't',
    contextId: 'c',
    status: { state: 'TASK_STATE_INPUT_REQUIRED', message: { messageId: 'a', role: 'ROLE_AGENT', parts: [{ text: 'more?' }] }, timestamp: '2026-01-01T00:00:00.000Z' },
    artifacts: [{ artifactId: 'x', description: 'd', parts: [{ url: '', filename: 'n' }], metadata: { m: 1 }, extensions: ['e'] }, { artifactId: 'y', parts: [] }],
    history: [{ messageId: 'u', role: 'ROLE_USER', parts: [{ data: { d: 1 } }], extensions: ['e'], referenceTaskIds: ['r'] }]
  })
  t.strictSame(wire(encodeTask(task, 5)), out, 'a history within the limit is not cut')
  t.strictSame(wire(encodeTask(task, 0, false)), { id: 't', contextId: 'c', status: out.status, history: [] })
  t.same(encodeTask({ ...task, metadata: { k: 1 } }, 0, true).metadata, { k: 1 }, 'metadata kept when the history is cut')
  t.strictSame(wire(encodeMessage({ kind: 'message', role: 'user', messageId: 'm', contextId: 'c', taskId: 't', parts: [], metadata: { a: 1 } })),
    { messageId: 'm', contextId: 'c', taskId: 't', role: 'ROLE_USER', parts: [], metadata: { a: 1 } })
  t.strictSame(wire(encodeTask({ ...task, history: [], artifacts: [{ artifactId: 'f', parts: [{ kind: 'file', file: { bytes: 'eA==', mimeType: 'a/b' } }] }] })).artifacts,
    [{ artifactId: 'f', parts: [{ raw: 'eA==', mediaType: 'a/b' }] }])
})

t.test('§11.4 error data: ErrorInfo with the reason, BadRequest for -32602, UNAVAILABLE for a storage outage', async t => {
  t.same(errorData(new JsonRpcError(RpcCode.internalError, 'Internal error', 'storage unavailable', 503)),
    [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAVAILABLE', domain: 'a2a-protocol.org', metadata: { detail: 'storage unavailable' } }])
  t.match(errorData(new JsonRpcError(RpcCode.internalError, 'Internal error')), [{ reason: 'INTERNAL', metadata: {} }])
  t.match(errorData(new JsonRpcError(-31999, 'Odd', { not: 'a string' })), [{ reason: 'INTERNAL', metadata: {} }])
  t.match(errorData(new JsonRpcError(RpcCode.rateLimited, 'Too many', 'slow down', 429)), [{ reason: 'RATE_LIMITED' }])
  t.match(errorData(new JsonRpcError(RpcCode.unauthenticated, 'Unauthenticated', 'x', 401)), [{ reason: 'UNAUTHENTICATED' }])
  t.same(errorData(invalidParams('params: required'))[1], { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: '', description: 'required' }] })
  t.equal(errorData(invalidParams('something else')).length, 1, 'a detail that names no field: no BadRequest')
  t.equal(errorData(new JsonRpcError(RpcCode.invalidParams, 'Invalid params')).length, 1)
})
