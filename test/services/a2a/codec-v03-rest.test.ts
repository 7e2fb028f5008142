import t from 'tap'
import {
  decodeCreatePushConfig03, decodePushConfig03, decodeSendRequest03, decodeState03, encodeEvent03, encodePushConfig03, encodeTask03
} from '../../../services/a2a/codec-v03-rest.js'
import { v03ErrorBody } from '../../../routes/rest.js'
import { JsonRpcError } from '../../../services/kernel/errors.js'
import type { Task } from '../../../schemas/task.js'

// The codec of the v0.3 REST routes (CONTRACT.md §12): the v0.3 proto's ProtoJSON in and out.

const user = { messageId: 'm', role: 'ROLE_USER', content: [{ text: 'hi' }] }

function refusal (fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    return String((err as JsonRpcError).data)
  }
  return 'no error'
}

t.test('a SendMessageRequest becomes message/send params: parts with kind, empty proto values unset', async t => {
  t.same(decodeSendRequest03({ message: user }), { message: { kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'hi' }], messageId: 'm' } })
  const full = decodeSendRequest03({
    message: {
      ...user,
      role: 2,
      contextId: 'c',
      taskId: '',
      extensions: ['urn:x'],
      metadata: { a: 1 },
      content: [{ file: { fileWithBytes: 'aGk=', mimeType: '' } }, { data: { data: { k: 1 } } }]
    },
    configuration: { acceptedOutputModes: [], historyLength: 0, pushNotificationConfig: { url: 'https://h/x', authentication: { schemes: ['Basic'], credentials: '' } } },
    metadata: { m: true }
  })
  t.same(full, {
    message: {
      kind: 'message',
      role: 'agent',
      parts: [{ kind: 'file', file: { bytes: 'aGk=' } }, { kind: 'data', data: { k: 1 } }],
      messageId: 'm',
      contextId: 'c',
      extensions: ['urn:x'],
      metadata: { a: 1 }
    },
    configuration: { blocking: false, pushNotificationConfig: { url: 'https://h/x', authentication: { schemes: ['Basic'] } } },
    metadata: { m: true }
  }, 'an empty list, 0 and "" are unset; the JSON-RPC name of the push config is read too')
  const kept = decodeSendRequest03({ message: { ...user, extensions: [], metadata: null }, configuration: { blocking: true, acceptedOutputModes: ['text/plain'], historyLength: 2 }, metadata: null })
  t.same(kept, {
    message: { kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'hi' }], messageId: 'm' },
    configuration: { blocking: true, acceptedOutputModes: ['text/plain'], historyLength: 2 }
  })
  const odd = decodeSendRequest03({ message: { ...user, extensions: 'x' } }) as { message: { extensions: unknown } }
  t.equal(odd.message.extensions, 'x', 'a value of the wrong type goes on, for the method\'s schema to name')
})

t.test('each malformed piece is -32602 naming its proto path', async t => {
  t.equal(refusal(() => decodeSendRequest03({})), 'params.message: is required')
  t.equal(refusal(() => decodeSendRequest03({ message: 'x' })), 'params.message: must be an object')
  t.equal(refusal(() => decodeSendRequest03({ message: [] })), 'params.message: must be an object')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, role: 'user' } })), 'params.message.role: must be ROLE_USER or ROLE_AGENT')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: {} } })), 'params.message.content: must be an array of parts')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: [null] } })), 'params.message.content.0: must be an object')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: [{}] } })), 'params.message.content.0: must have exactly one of text, file, data')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: [{ file: null }] } })), 'params.message.content.0.file: must have exactly one of fileWithUri, fileWithBytes')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: [{ file: 3 }] } })), 'params.message.content.0.file: must be an object')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: [{ file: { fileWithUri: 'u', fileWithBytes: 'b' } }] } })),
    'params.message.content.0.file: must have exactly one of fileWithUri, fileWithBytes')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: [{ data: 'x' }] } })), 'params.message.content.0.data: must be an object')
  t.equal(refusal(() => decodeSendRequest03({ message: { ...user, content: [{ data: {} }] } })), 'params.message.content.0.data.data: must be an object')
  t.equal(refusal(() => decodeSendRequest03({ message: user, configuration: { pushNotification: 'x' } })), 'params.configuration.pushNotification: must be an object')
  t.equal(refusal(() => decodeCreatePushConfig03({}, 't')), 'params.pushNotificationConfig: is required')
  t.equal(refusal(() => decodeCreatePushConfig03({ config: {} }, 't')), 'params.config.pushNotificationConfig: is required')
  t.equal(refusal(() => decodeCreatePushConfig03({ config: 1 }, 't')), 'params.config: must be an object')
})

t.test('push configs: either body form, the configId when the config has no id, authentication as sent', async t => {
  t.same(decodeCreatePushConfig03({ push_notification_config: { url: 'u', id: 'a', token: 'k' } }, 't'), { taskId: 't', pushNotificationConfig: { url: 'u', id: 'a', token: 'k' } })
  t.same(decodeCreatePushConfig03({ parent: 'tasks/t', configId: 'b', config: { pushNotificationConfig: { url: 'u' } } }, 't'),
    { taskId: 't', pushNotificationConfig: { url: 'u', id: 'b' } })
  t.same(decodeCreatePushConfig03({ configId: '', pushNotificationConfig: { url: 'u', id: '' } }, 't'), { taskId: 't', pushNotificationConfig: { url: 'u' } })
  t.same(decodePushConfig03({ url: 'u', authentication: {} }), { url: 'u', authentication: { schemes: [] } })
  t.same(decodePushConfig03({ url: 'u', authentication: 'Bearer' }), { url: 'u', authentication: 'Bearer' }, 'left for the method\'s schema')
  t.same(decodePushConfig03({ url: 'u', authentication: null }), { url: 'u' })
  t.same(encodePushConfig03({ taskId: 't', pushNotificationConfig: { url: 'u' } }), { name: 'tasks/t/pushNotificationConfigs/', pushNotificationConfig: { url: 'u' } })
  t.same(JSON.parse(JSON.stringify(encodePushConfig03({ taskId: 't', pushNotificationConfig: { id: 'a', url: 'u', authentication: { schemes: ['Bearer'], credentials: 'c' } } }))),
    { name: 'tasks/t/pushNotificationConfigs/a', pushNotificationConfig: { id: 'a', url: 'u', authentication: { schemes: ['Bearer'], credentials: 'c' } } })
})

t.test('tasks and events in the proto form: TASK_STATE_* names, content, status message, every part kind', async t => {
  const task: Task = {
    kind: 'task',
    id: 't',
    contextId: 'c',
    status: {
      state: 'canceled',
      timestamp: '2026-01-01T00:00:00.000Z',
      message: { kind: 'message', role: 'agent', messageId: 's', parts: [{ kind: 'text', text: 'bye' }], extensions: ['urn:e'] }
    },
    artifacts: [{
      artifactId: 'a',
      name: 'n',
      description: 'd',
      metadata: { x: 1 },
      extensions: ['urn:a'],
      parts: [{ kind: 'file', file: { uri: 'https://f', mimeType: 'image/png', name: 'f.png' } }, { kind: 'file', file: { bytes: 'aGk=' } }, { kind: 'data', data: { k: 2 } }]
    }],
    history: [
      { kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'one' }] },
      { kind: 'message', role: 'user', messageId: 'm2', parts: [{ kind: 'text', text: 'two' }] }
    ],
    metadata: { t: true }
  }
  const encoded = JSON.parse(JSON.stringify(encodeTask03(task, 1)))
  t.same(encoded, {
    id: 't',
    contextId: 'c',
    status: {
      state: 'TASK_STATE_CANCELLED',
      message: { messageId: 's', role: 'ROLE_AGENT', content: [{ text: 'bye' }], extensions: ['urn:e'] },
      timestamp: '2026-01-01T00:00:00.000Z'
    },
    artifacts: [{
      artifactId: 'a',
      name: 'n',
      description: 'd',
      parts: [{ file: { fileWithUri: 'https://f', mimeType: 'image/png' } }, { file: { fileWithBytes: 'aGk=' } }, { data: { data: { k: 2 } } }],
      metadata: { x: 1 },
      extensions: ['urn:a']
    }],
    history: [{ messageId: 'm2', role: 'ROLE_USER', content: [{ text: 'two' }] }],
    metadata: { t: true }
  })
  t.equal((encodeTask03(task).history as unknown[]).length, 2, 'no historyLength: the whole history')
  const status = JSON.parse(JSON.stringify(encodeEvent03({ type: 'status', task, version: 3, final: true } as never)))
  t.match(status, { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_CANCELLED' }, final: true } })
  const artifact = JSON.parse(JSON.stringify(encodeEvent03({ type: 'artifact', task, version: 2, artifact: task.artifacts[0], append: true, lastChunk: false } as never)))
  t.match(artifact, { artifactUpdate: { taskId: 't', artifact: { artifactId: 'a' }, append: true, lastChunk: false } })
  const bare: Task = { ...task, artifacts: [{ artifactId: 'b', parts: [{ kind: 'file', file: { mimeType: 'text/plain' } }] }] }
  t.same(JSON.parse(JSON.stringify(encodeTask03(bare))).artifacts[0].parts, [{ file: { fileWithUri: '', mimeType: 'text/plain' } }],
    'a file with neither uri nor bytes: the proto\'s unset uri')
  t.equal(decodeState03('TASK_STATE_CANCELLED'), 'canceled')
  t.equal(decodeState03('TASK_STATE_WORKING'), 'in_progress')
  t.equal(decodeState03('working'), 'working', 'another name goes on for the method to read')
})

t.test('the /v1 error body: the JSON-RPC error object, data only when there is some', async t => {
  t.same(v03ErrorBody(new JsonRpcError(-32001, 'Task not found')), { code: -32001, message: 'Task not found' })
  t.same(v03ErrorBody(new JsonRpcError(-32001, 'Task not found', 'x')), { code: -32001, message: 'Task not found', data: 'x' })
})
