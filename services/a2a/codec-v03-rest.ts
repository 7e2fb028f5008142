import type { PushNotificationConfig, TaskPushNotificationConfig } from '../../schemas/push-config.js'
import type { Artifact, Message, Part, Task, TaskState, TaskStatus } from '../../schemas/task.js'
import type { TaskEvent } from '../tasks/event-bus.js'
import { camelKeys, fieldError } from './codec-v10.js'

// The codec of the v0.3 HTTP+JSON routes (`/v1/...`, CONTRACT.md §12): the ProtoJSON form of the v0.3 `a2a.proto`,
// which differs from the v0.3 JSON-RPC objects: a Message has `content`, a part is one of `text`, `file`
// (`fileWithUri` | `fileWithBytes`) and `data` (`{data}`), states are `TASK_STATE_*` (`TASK_STATE_CANCELLED`),
// a status's message is `message`, and a push config is `{name: "tasks/{id}/pushNotificationConfigs/{cid}", ...}`.
// Requests are decoded into the v0.3 JSON-RPC params, which the v0.3 methods then validate and run; answers are
// encoded from the internal task model.

/** Stored state → its v0.3 proto enum name. */
export const V03_PROTO_STATES: Readonly<Record<TaskState, string>> = {
  submitted: 'TASK_STATE_SUBMITTED',
  in_progress: 'TASK_STATE_WORKING',
  input_required: 'TASK_STATE_INPUT_REQUIRED',
  auth_required: 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  canceled: 'TASK_STATE_CANCELLED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED'
}

const STATE_BY_NAME: Readonly<Record<string, TaskState>> = Object.fromEntries(
  Object.entries(V03_PROTO_STATES).map(([state, name]) => [name, state as TaskState]))

/** A `TASK_STATE_*` name as stored; any other value is returned as it is (for the method's own check). */
export function decodeState03 (value: string): string {
  return Object.hasOwn(STATE_BY_NAME, value) ? STATE_BY_NAME[value] : value
}

type Json = Record<string, unknown>

function isObject (value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** An object field, or a -32602 naming it; absent and `null` are undefined (proto: unset). */
function objectAt (value: unknown, field: string): Json | undefined {
  if (value === undefined || value === null) return undefined
  if (!isObject(value)) throw fieldError(field, 'must be an object')
  return value
}

/** A string field; the proto's unset value `""` is undefined. Other types go on as they are, for the schema. */
function setString (out: Json, key: string, value: unknown): void {
  if (value !== undefined && value !== '') out[key] = value
}

// ---------------------------------------------------------------------------------------------------------------
// Requests

/**
 * A SendMessageRequest (`{message, configuration?, metadata?}`, snake_case accepted, `request` as the field's
 * proto name) as v0.3 `message/send` params. `configuration` follows ProtoJSON: a configuration without
 * `blocking: true` is non-blocking (proto3's default false), as the v0.3 SDKs' REST servers read it; no
 * configuration at all is blocking, as over JSON-RPC.
 */
export function decodeSendRequest03 (body: Json): Json {
  const request = camelKeys(body) as Json
  const message = objectAt(request.message ?? request.request, 'message')
  if (message === undefined) throw fieldError('message', 'is required')
  const out: Json = { message: decodeMessage03(message, 'message') }
  const configuration = objectAt(request.configuration, 'configuration')
  if (configuration !== undefined) {
    const config: Json = { blocking: configuration.blocking === true }
    const modes = configuration.acceptedOutputModes
    if (modes !== undefined && !(Array.isArray(modes) && modes.length === 0)) config.acceptedOutputModes = modes
    // 0 is the proto's unset value: the whole history.
    if (configuration.historyLength !== undefined && configuration.historyLength !== 0) config.historyLength = configuration.historyLength
    const push = objectAt(configuration.pushNotification ?? configuration.pushNotificationConfig, 'configuration.pushNotification')
    if (push !== undefined) config.pushNotificationConfig = decodePushConfig03(push)
    out.configuration = config
  }
  if (request.metadata !== undefined && request.metadata !== null) out.metadata = request.metadata
  return out
}

function decodeMessage03 (message: Json, field: string): Json {
  const out: Json = { kind: 'message', role: decodeRole03(message.role, `${field}.role`) }
  const content = message.content
  if (!Array.isArray(content)) throw fieldError(`${field}.content`, 'must be an array of parts')
  const parts = new Array(content.length)
  for (let i = 0; i < content.length; i++) parts[i] = decodePart03(content[i], `${field}.content.${i}`)
  out.parts = parts
  out.messageId = message.messageId
  setString(out, 'contextId', message.contextId)
  setString(out, 'taskId', message.taskId)
  if (Array.isArray(message.extensions) && message.extensions.length > 0) out.extensions = message.extensions
  else if (message.extensions !== undefined && !Array.isArray(message.extensions)) out.extensions = message.extensions
  if (message.metadata !== undefined && message.metadata !== null) out.metadata = message.metadata
  return out
}

function decodeRole03 (value: unknown, field: string): Message['role'] {
  if (value === 'ROLE_USER' || value === 1) return 'user'
  if (value === 'ROLE_AGENT' || value === 2) return 'agent'
  throw fieldError(field, 'must be ROLE_USER or ROLE_AGENT')
}

/** A Part is exactly one of `text`, `file`, `data` (the proto's `part` oneof). */
function decodePart03 (part: unknown, field: string): Json {
  if (!isObject(part)) throw fieldError(field, 'must be an object')
  const given = (part.text !== undefined ? 1 : 0) + (part.file !== undefined ? 1 : 0) + (part.data !== undefined ? 1 : 0)
  if (given !== 1) throw fieldError(field, 'must have exactly one of text, file, data')
  if (part.text !== undefined) return { kind: 'text', text: part.text }
  if (part.data !== undefined) {
    const data = objectAt(part.data, `${field}.data`)
    if (data === undefined || !isObject(data.data)) throw fieldError(`${field}.data.data`, 'must be an object')
    return { kind: 'data', data: data.data }
  }
  const file = objectAt(part.file, `${field}.file`) ?? {}
  const uri = file.fileWithUri
  const bytes = file.fileWithBytes
  if ((uri === undefined) === (bytes === undefined)) throw fieldError(`${field}.file`, 'must have exactly one of fileWithUri, fileWithBytes')
  const out: Json = uri !== undefined ? { uri } : { bytes }
  setString(out, 'mimeType', file.mimeType)
  return { kind: 'file', file: out }
}

/** A PushNotificationConfig (proto: empty strings unset) as the v0.3 JSON-RPC form. */
export function decodePushConfig03 (config: Json): Json {
  const out: Json = { url: config.url }
  setString(out, 'id', config.id)
  setString(out, 'token', config.token)
  const auth = config.authentication
  if (isObject(auth)) {
    const authentication: Json = { schemes: auth.schemes ?? [] }
    setString(authentication, 'credentials', auth.credentials)
    out.authentication = authentication
  } else if (auth !== undefined && auth !== null) {
    out.authentication = auth
  }
  return out
}

/**
 * The body of `POST /v1/tasks/{id}/pushNotificationConfigs` as `tasks/pushNotificationConfig/set` params. The proto
 * maps the body to the TaskPushNotificationConfig (`{name?, pushNotificationConfig}`, as the v0.3 SDKs send it); the
 * whole CreateTaskPushNotificationConfigRequest (`{parent, configId, config}`) is taken too.
 */
export function decodeCreatePushConfig03 (body: Json, taskId: string): Json {
  const request = camelKeys(body) as Json
  const wrapped = objectAt(request.config, 'config')
  const field = wrapped === undefined ? 'pushNotificationConfig' : 'config.pushNotificationConfig'
  const config = objectAt((wrapped ?? request).pushNotificationConfig, field)
  if (config === undefined) throw fieldError(field, 'is required')
  const decoded = decodePushConfig03(config)
  if (decoded.id === undefined && typeof request.configId === 'string' && request.configId !== '') decoded.id = request.configId
  return { taskId, pushNotificationConfig: decoded }
}

// ---------------------------------------------------------------------------------------------------------------
// Answers: camelCase, enum names, every object one literal (absent fields undefined, which JSON leaves out).

const ROLE_NAMES = { user: 'ROLE_USER', agent: 'ROLE_AGENT' } as const

/** A Task in the v0.3 proto form, its history cut to the last `historyLength` messages. */
export function encodeTask03 (task: Task, historyLength?: number): Json {
  const { history } = task
  const from = historyLength !== undefined && historyLength < history.length ? history.length - historyLength : 0
  const messages = new Array(history.length - from)
  for (let i = from; i < history.length; i++) messages[i - from] = encodeMessage03(history[i])
  const artifacts = new Array(task.artifacts.length)
  for (let i = 0; i < artifacts.length; i++) artifacts[i] = encodeArtifact03(task.artifacts[i])
  return {
    id: task.id,
    contextId: task.contextId,
    status: encodeStatus03(task.status),
    artifacts,
    history: messages,
    metadata: task.metadata ?? undefined
  }
}

function encodeStatus03 (status: TaskStatus): Json {
  return {
    state: V03_PROTO_STATES[status.state],
    message: status.message == null ? undefined : encodeMessage03(status.message),
    timestamp: status.timestamp
  }
}

function encodeMessage03 (message: Message): Json {
  return {
    messageId: message.messageId,
    contextId: message.contextId,
    taskId: message.taskId,
    role: ROLE_NAMES[message.role],
    content: encodeParts03(message.parts),
    metadata: message.metadata ?? undefined,
    extensions: message.extensions != null && message.extensions.length > 0 ? message.extensions : undefined
  }
}

function encodeParts03 (parts: readonly Part[]): Json[] {
  const out = new Array(parts.length)
  for (let i = 0; i < parts.length; i++) out[i] = encodePart03(parts[i])
  return out
}

function encodePart03 (part: Part): Json {
  if (part.kind === 'text') return { text: part.text }
  if (part.kind === 'data') return { data: { data: part.data } }
  const { file } = part
  return {
    file: file.bytes !== undefined
      ? { fileWithBytes: file.bytes, mimeType: file.mimeType }
      : { fileWithUri: file.uri ?? '', mimeType: file.mimeType }
  }
}

function encodeArtifact03 (artifact: Artifact): Json {
  return {
    artifactId: artifact.artifactId,
    name: artifact.name,
    description: artifact.description ?? undefined,
    parts: encodeParts03(artifact.parts),
    metadata: artifact.metadata ?? undefined,
    extensions: artifact.extensions != null && artifact.extensions.length > 0 ? artifact.extensions : undefined
  }
}

/** A task event as a v0.3 StreamResponse: `statusUpdate` (with `final`) or `artifactUpdate`. */
export function encodeEvent03 (event: TaskEvent): Json {
  const { task } = event
  if (event.type === 'status') {
    return { statusUpdate: { taskId: task.id, contextId: task.contextId, status: encodeStatus03(task.status), final: event.final } }
  }
  return {
    artifactUpdate: {
      taskId: task.id,
      contextId: task.contextId,
      artifact: encodeArtifact03(event.artifact),
      append: event.append,
      lastChunk: event.lastChunk
    }
  }
}

/** A push config as the v0.3 proto's TaskPushNotificationConfig: `{name, pushNotificationConfig}`. */
export function encodePushConfig03 ({ taskId, pushNotificationConfig: config }: TaskPushNotificationConfig): Json {
  return {
    name: `tasks/${taskId}/pushNotificationConfigs/${config.id ?? ''}`,
    pushNotificationConfig: pushConfigBody(config)
  }
}

function pushConfigBody (config: PushNotificationConfig): Json {
  const auth = config.authentication
  return {
    id: config.id,
    url: config.url,
    token: config.token,
    authentication: auth === undefined ? undefined : { schemes: auth.schemes, credentials: auth.credentials }
  }
}
