import type { Artifact, Message, Part, Task, TaskState, TaskStatus } from '../../schemas/task.js'
import type { V10Message, V10Part, V10PushConfig } from '../../schemas/v10/objects.js'
import { RpcCode, invalidParams, type JsonRpcError } from '../kernel/errors.js'
import type { PushNotificationConfig } from '../../schemas/push-config.js'
import type { TaskEvent } from '../tasks/event-bus.js'

// The A2A v1.0 codec (CONTRACT.md §11.2 to §11.4): the internal task model in and out of the ProtoJSON form of
// `a2a.proto` v1.0.1. Nothing below it sees a v1.0 object: decoding makes the internal form, encoding reads it.

/** Stored state → its v1.0 enum name. */
export const V10_STATES: Readonly<Record<TaskState, string>> = {
  submitted: 'TASK_STATE_SUBMITTED',
  in_progress: 'TASK_STATE_WORKING',
  input_required: 'TASK_STATE_INPUT_REQUIRED',
  auth_required: 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  canceled: 'TASK_STATE_CANCELED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED'
}

/** The proto's enum numbers of TaskState, in order (0 is UNSPECIFIED). */
const STATE_NUMBERS: ReadonlyArray<TaskState | undefined> =
  [undefined, 'submitted', 'in_progress', 'completed', 'failed', 'canceled', 'input_required', 'rejected', 'auth_required']

const STATE_BY_NAME: Readonly<Record<string, TaskState>> = Object.fromEntries(
  Object.entries(V10_STATES).map(([state, name]) => [name, state as TaskState]))

/** A v1.0 TaskState (name or number) as stored; undefined for UNSPECIFIED or anything else. */
export function decodeState (value: string | number): TaskState | undefined {
  if (typeof value === 'number') return STATE_NUMBERS[value]
  return Object.hasOwn(STATE_BY_NAME, value) ? STATE_BY_NAME[value] : undefined
}

const ROLE_NAMES = { user: 'ROLE_USER', agent: 'ROLE_AGENT' } as const

function decodeRole (value: string | number, field: string): Message['role'] {
  if (value === 'ROLE_USER' || value === 1) return 'user'
  if (value === 'ROLE_AGENT' || value === 2) return 'agent'
  throw fieldError(field, 'must be ROLE_USER or ROLE_AGENT')
}

/** A -32602 for one field, its path relative to `params` (CONTRACT.md §11.4). */
export function fieldError (field: string, reason: string): JsonRpcError {
  return invalidParams(`params.${field}: ${reason}`)
}

// ---------------------------------------------------------------------------------------------------------------
// Input: snake_case field names and enum numbers are accepted (ProtoJSON parsers must); `metadata`, `data` and
// `params` values are the client's own JSON and are left as they are.

const SNAKE = /_([a-z0-9])/g

/**
 * The params with every snake_case key in camelCase, outside the client's own JSON values. Returns the value itself
 * when no key needs renaming (the usual case: the official clients send camelCase), so nothing is copied then.
 */
export function camelKeys (value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    let out: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const item = camelKeys(value[i])
      if (item !== value[i]) (out ??= value.slice())[i] = item
    }
    return out ?? value
  }
  const obj = value as Record<string, unknown>
  let out: Record<string, unknown> | undefined
  for (const key in obj) {
    const name = key.includes('_') ? key.replace(SNAKE, upper) : key
    const given = obj[key]
    const item = name === 'metadata' || name === 'data' ? given : camelKeys(given)
    if (out !== undefined) {
      // A camelCase key given beside its snake_case twin wins.
      if (name === key || !Object.hasOwn(obj, name)) out[name] = item
    } else if (name !== key || item !== given) {
      out = copyUntil(obj, key)
      if (name === key || !Object.hasOwn(obj, name)) out[name] = item
    }
  }
  return out ?? obj
}

function upper (_match: string, c: string): string {
  return c.toUpperCase()
}

/** A copy of an object's entries before `stop`. */
function copyUntil (obj: Record<string, unknown>, stop: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key in obj) {
    if (key === stop) break
    out[key] = obj[key]
  }
  return out
}

/** A v1.0 Message (validated by its schema) in the internal form. */
export function decodeMessage (message: V10Message, field = 'message'): Message {
  const out: Message = {
    kind: 'message',
    role: decodeRole(message.role, `${field}.role`),
    parts: decodeParts(message.parts, `${field}.parts`),
    messageId: message.messageId
  }
  // Empty strings are the proto's unset values.
  if (message.contextId !== undefined && message.contextId !== '') out.contextId = message.contextId
  if (message.taskId !== undefined && message.taskId !== '') out.taskId = message.taskId
  if (message.referenceTaskIds !== undefined && message.referenceTaskIds.length > 0) out.referenceTaskIds = message.referenceTaskIds
  if (message.extensions !== undefined && message.extensions.length > 0) out.extensions = message.extensions
  if (message.metadata != null) out.metadata = message.metadata
  return out
}

function decodeParts (parts: readonly V10Part[], field: string): Part[] {
  const out: Part[] = new Array(parts.length)
  for (let i = 0; i < parts.length; i++) out[i] = decodePart(parts[i], `${field}.${i}`)
  return out
}

/** A Part is exactly one of `text`, `raw`, `url`, `data` (the proto's `content` oneof). */
function decodePart (part: V10Part, field: string): Part {
  const given = (part.text !== undefined ? 1 : 0) + (part.raw !== undefined ? 1 : 0) + (part.url !== undefined ? 1 : 0) +
    (part.data !== undefined ? 1 : 0)
  if (given !== 1) throw fieldError(field, 'must have exactly one of text, raw, url, data')
  const metadata = part.metadata ?? undefined
  let out: Part
  if (part.text !== undefined) {
    out = { kind: 'text', text: part.text }
  } else if (part.data !== undefined) {
    out = { kind: 'data', data: part.data as Record<string, unknown> }
  } else {
    const file: Extract<Part, { kind: 'file' }>['file'] = part.raw !== undefined ? { bytes: part.raw } : { uri: part.url as string }
    if (part.mediaType !== undefined && part.mediaType !== '') file.mimeType = part.mediaType
    if (part.filename !== undefined && part.filename !== '') file.name = part.filename
    out = { kind: 'file', file }
  }
  if (metadata !== undefined) out.metadata = metadata
  return out
}

/** A v1.0 push config (flat) in the internal form; the caller stores it as made in v1.0 (CONTRACT.md §11.6). */
export function decodePushConfig (config: V10PushConfig): PushNotificationConfig {
  const out: PushNotificationConfig = { url: config.url }
  if (config.id !== undefined && config.id !== '') out.id = config.id
  if (config.token !== undefined && config.token !== '') out.token = config.token
  const auth = config.authentication
  if (auth !== undefined && auth !== null) {
    out.authentication = { schemes: [auth.scheme] }
    if (auth.credentials !== undefined && auth.credentials !== '') out.authentication.credentials = auth.credentials
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// Output: camelCase, enum names, no `kind`, no nulls, never a snake_case key.

// Each object is made in one literal with every field, absent ones `undefined` (which JSON leaves out): one hidden
// class per kind of object, and no object grown field by field. A cache per snapshot cost more than it saved (a
// WeakMap entry per task is work for every garbage collection).

export interface V10Task {
  id: string
  contextId: string
  status: V10Status
  artifacts?: unknown[]
  history?: unknown[]
  metadata?: Record<string, unknown>
}

interface V10Status { state: string, message?: unknown, timestamp: string }

/**
 * A Task in its v1.0 form. `historyLength` follows v1.0 §3.2.4 (unset: all; 0: none; N: the last N); `artifacts`
 * false leaves them out (ListTasks without includeArtifacts).
 */
export function encodeTask (task: Task, historyLength?: number, artifacts = true): V10Task {
  const { history } = task
  const from = historyLength !== undefined && historyLength < history.length ? history.length - historyLength : 0
  const messages = new Array(history.length - from)
  for (let i = from; i < history.length; i++) messages[i - from] = encodeMessage(history[i])
  return {
    id: task.id,
    contextId: task.contextId,
    status: encodeStatus(task.status),
    artifacts: artifacts ? encodeArtifacts(task.artifacts) : undefined,
    history: messages,
    metadata: task.metadata ?? undefined
  }
}

function encodeStatus (status: TaskStatus): V10Status {
  return {
    state: V10_STATES[status.state],
    message: status.message == null ? undefined : encodeMessage(status.message),
    timestamp: status.timestamp
  }
}

export function encodeMessage (message: Message): Record<string, unknown> {
  return {
    messageId: message.messageId,
    contextId: message.contextId,
    taskId: message.taskId,
    role: ROLE_NAMES[message.role],
    parts: encodeParts(message.parts),
    metadata: message.metadata ?? undefined,
    extensions: nonEmpty(message.extensions),
    referenceTaskIds: nonEmpty(message.referenceTaskIds)
  }
}

function nonEmpty<T> (list: T[] | null | undefined): T[] | undefined {
  return list != null && list.length > 0 ? list : undefined
}

function encodeParts (parts: readonly Part[]): Array<Record<string, unknown>> {
  const out = new Array(parts.length)
  for (let i = 0; i < parts.length; i++) out[i] = encodePart(parts[i])
  return out
}

function encodePart (part: Part): Record<string, unknown> {
  const metadata = part.metadata ?? undefined
  if (part.kind === 'text') return { text: part.text, metadata }
  if (part.kind === 'data') return { data: part.data, metadata }
  const { file } = part
  return file.bytes !== undefined
    ? { raw: file.bytes, mediaType: file.mimeType, filename: file.name, metadata }
    : { url: file.uri ?? '', mediaType: file.mimeType, filename: file.name, metadata }
}

function encodeArtifacts (artifacts: readonly Artifact[]): Array<Record<string, unknown>> {
  const out = new Array(artifacts.length)
  for (let i = 0; i < artifacts.length; i++) out[i] = encodeArtifact(artifacts[i])
  return out
}

function encodeArtifact (artifact: Artifact): Record<string, unknown> {
  return {
    artifactId: artifact.artifactId,
    name: artifact.name,
    description: artifact.description ?? undefined,
    parts: encodeParts(artifact.parts),
    metadata: artifact.metadata ?? undefined,
    extensions: nonEmpty(artifact.extensions)
  }
}

/** A task event as a v1.0 StreamResponse: `statusUpdate` or `artifactUpdate` (no `final`, CONTRACT.md §11.3). */
export function encodeEvent (event: TaskEvent): Record<string, unknown> {
  const { task } = event
  if (event.type === 'status') {
    return { statusUpdate: { taskId: task.id, contextId: task.contextId, status: encodeStatus(task.status) } }
  }
  return {
    artifactUpdate: {
      taskId: task.id,
      contextId: task.contextId,
      artifact: encodeArtifact(event.artifact),
      append: event.append,
      lastChunk: event.lastChunk
    }
  }
}

/** A stored push config as v1.0 results show it: flat, and never with its credentials (CONTRACT.md §11.3). */
export function encodePushConfig (taskId: string, config: { id?: string, url: string, token?: string, authentication?: { schemes: string[] } }): Record<string, unknown> {
  const auth = config.authentication
  return { id: config.id, taskId, url: config.url, token: config.token, authentication: auth === undefined ? undefined : { scheme: auth.schemes[0] } }
}

// ---------------------------------------------------------------------------------------------------------------
// Errors (CONTRACT.md §11.4).

const REASONS: Readonly<Record<number, string>> = {
  [RpcCode.parseError]: 'PARSE_ERROR',
  [RpcCode.invalidRequest]: 'INVALID_REQUEST',
  [RpcCode.methodNotFound]: 'METHOD_NOT_FOUND',
  [RpcCode.invalidParams]: 'INVALID_PARAMS',
  [RpcCode.internalError]: 'INTERNAL',
  [RpcCode.taskNotFound]: 'TASK_NOT_FOUND',
  [RpcCode.taskNotCancelable]: 'TASK_NOT_CANCELABLE',
  [RpcCode.pushNotSupported]: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
  [RpcCode.unsupportedOperation]: 'UNSUPPORTED_OPERATION',
  [RpcCode.contentTypeNotSupported]: 'CONTENT_TYPE_NOT_SUPPORTED',
  [RpcCode.invalidAgentResponse]: 'INVALID_AGENT_RESPONSE',
  [RpcCode.extendedCardNotConfigured]: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
  [RpcCode.extensionSupportRequired]: 'EXTENSION_SUPPORT_REQUIRED',
  [RpcCode.versionNotSupported]: 'VERSION_NOT_SUPPORTED',
  [RpcCode.unauthenticated]: 'UNAUTHENTICATED',
  [RpcCode.insufficientScope]: 'PERMISSION_DENIED',
  [RpcCode.rateLimited]: 'RATE_LIMITED',
  [RpcCode.idpUnavailable]: 'UNAVAILABLE'
}

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo'
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest'
/** `params.<path>: <reason>`, as every -32602 of this server is worded (CONTRACT.md §4). */
const FIELD_DETAIL = /^params(?:\.([^:\s]*))?: ([\s\S]*)$/

/**
 * The `data` of a v1.0 error: an ErrorInfo first, then, for -32602, a BadRequest naming the field. The v0.3 detail
 * text goes into the ErrorInfo's metadata as `detail`; a storage outage (503) is `UNAVAILABLE`.
 */
export function errorData (err: JsonRpcError): unknown[] {
  const reason = err.code === RpcCode.internalError && err.httpStatus === 503 ? 'UNAVAILABLE' : (REASONS[err.code] ?? 'INTERNAL')
  const metadata: Record<string, string> = {}
  if (typeof err.data === 'string') metadata.detail = err.data
  const data: unknown[] = [{ '@type': ERROR_INFO, reason, domain: 'a2a-protocol.org', metadata }]
  if (err.code === RpcCode.invalidParams && typeof err.data === 'string') {
    const m = FIELD_DETAIL.exec(err.data)
    if (m !== null) data.push({ '@type': BAD_REQUEST, fieldViolations: [{ field: m[1] ?? '', description: m[2] }] })
  }
  return data
}
