import { Type, type TSchema } from '@sinclair/typebox'
import {
  Error03Schema, ListPushConfigs03Schema, ListTasks03Schema, SendMessageRequest03Schema, SendMessageResponse03Schema,
  StreamResponse03Schema, Task03Schema, TaskPushConfig03Schema, V03_PROTO_STATE_NAMES
} from '../../schemas/v03-rest.js'
import type { MethodRegistry, RegisteredMethod } from '../json-rpc/registry.js'

// The OpenAPI 3.1 document of the HTTP+JSON routes (`GET /openapi.json`, CONTRACT.md §12), loaded and built when it
// is first asked for (plugins/methods.ts), made from TypeBox schemas: a v1.0 route's body, query parameters and
// answer are its method's; a v0.3 route's (`/v1`) are the v0.3 proto's forms of schemas/v03-rest.ts.

/** One REST operation: where it is, which v1.0 method it runs, and where that method's params come from. */
export interface RestOperation {
  method: 'get' | 'post' | 'delete'
  /** The OpenAPI path template. */
  path: string
  /** The v1.0 method the route runs. */
  rpc: string
  /** The params are the body (`body`), the query string (`query`), or only the path. */
  params: 'body' | 'query' | 'path'
  /** The params taken from the path: not in the body or the query. */
  pathParams: readonly string[]
  status: 200 | 201 | 204
  streaming?: boolean
}

const TASK = ['id']
const CONFIG = ['taskId', 'id']

/** Every operation of the v1.0 routes (routes/rest.ts), in the order of CONTRACT.md §12. */
export const REST_OPERATIONS: readonly RestOperation[] = [
  { method: 'post', path: '/message:send', rpc: 'SendMessage', params: 'body', pathParams: [], status: 200 },
  { method: 'post', path: '/message:stream', rpc: 'SendStreamingMessage', params: 'body', pathParams: [], status: 200, streaming: true },
  { method: 'get', path: '/tasks/{id}', rpc: 'GetTask', params: 'query', pathParams: TASK, status: 200 },
  { method: 'get', path: '/tasks', rpc: 'ListTasks', params: 'query', pathParams: [], status: 200 },
  { method: 'post', path: '/tasks/{id}:cancel', rpc: 'CancelTask', params: 'body', pathParams: TASK, status: 200 },
  { method: 'post', path: '/tasks/{id}:subscribe', rpc: 'SubscribeToTask', params: 'path', pathParams: TASK, status: 200, streaming: true },
  { method: 'get', path: '/tasks/{id}:subscribe', rpc: 'SubscribeToTask', params: 'path', pathParams: TASK, status: 200, streaming: true },
  { method: 'post', path: '/tasks/{taskId}/pushNotificationConfigs', rpc: 'CreateTaskPushNotificationConfig', params: 'body', pathParams: ['taskId'], status: 201 },
  { method: 'get', path: '/tasks/{taskId}/pushNotificationConfigs', rpc: 'ListTaskPushNotificationConfigs', params: 'query', pathParams: ['taskId'], status: 200 },
  { method: 'get', path: '/tasks/{taskId}/pushNotificationConfigs/{id}', rpc: 'GetTaskPushNotificationConfig', params: 'path', pathParams: CONFIG, status: 200 },
  { method: 'delete', path: '/tasks/{taskId}/pushNotificationConfigs/{id}', rpc: 'DeleteTaskPushNotificationConfig', params: 'path', pathParams: CONFIG, status: 204 },
  { method: 'get', path: '/extendedAgentCard', rpc: 'GetExtendedAgentCard', params: 'path', pathParams: [], status: 200 }
]

/** One v0.3 operation (`/v1`): its own schemas, as its bodies are the v0.3 proto's, not its method's. */
export interface Rest03Operation {
  method: 'get' | 'post' | 'delete'
  path: string
  operationId: string
  summary: string
  pathParams: readonly string[]
  query?: Readonly<Record<string, TSchema>>
  body?: TSchema
  /** What a success answers; none for 204. */
  result?: TSchema
  status: 200 | 201 | 204
  streaming?: boolean
}

const TASK03 = ['id']
const CONFIG03 = ['taskId', 'configId']
const HISTORY = Type.Integer({ minimum: 0 })

/** Every operation of the v0.3 routes (routes/rest.ts), in the order of the v1.0 ones. */
export const REST03_OPERATIONS: readonly Rest03Operation[] = [
  { method: 'post', path: '/v1/message:send', operationId: 'v03SendMessage', summary: 'A2A v0.3: message/send.', pathParams: [], body: SendMessageRequest03Schema, result: SendMessageResponse03Schema, status: 200 },
  { method: 'post', path: '/v1/message:stream', operationId: 'v03SendStreamingMessage', summary: 'A2A v0.3: message/stream; each `data:` line one StreamResponse.', pathParams: [], body: SendMessageRequest03Schema, result: StreamResponse03Schema, status: 200, streaming: true },
  { method: 'get', path: '/v1/tasks/{id}', operationId: 'v03GetTask', summary: 'A2A v0.3: tasks/get.', pathParams: TASK03, query: { historyLength: HISTORY }, result: Task03Schema, status: 200 },
  {
    method: 'get',
    path: '/v1/tasks',
    operationId: 'v03ListTasks',
    summary: 'A2A v0.3: tasks/list, newest first.',
    pathParams: [],
    query: {
      contextId: Type.String(),
      state: Type.String({ description: `${V03_PROTO_STATE_NAMES.join(' | ')}, or a v0.3 JSON-RPC state name` }),
      pageSize: Type.Integer({ minimum: 1, maximum: 100 }),
      pageToken: Type.String(),
      historyLength: HISTORY
    },
    result: ListTasks03Schema,
    status: 200
  },
  { method: 'post', path: '/v1/tasks/{id}:cancel', operationId: 'v03CancelTask', summary: 'A2A v0.3: tasks/cancel.', pathParams: TASK03, result: Task03Schema, status: 200 },
  { method: 'post', path: '/v1/tasks/{id}:subscribe', operationId: 'v03SubscribeToTask', summary: 'A2A v0.3: tasks/resubscribe.', pathParams: TASK03, result: StreamResponse03Schema, status: 200, streaming: true },
  { method: 'get', path: '/v1/tasks/{id}:subscribe', operationId: 'v03SubscribeToTaskGet', summary: 'A2A v0.3: tasks/resubscribe.', pathParams: TASK03, result: StreamResponse03Schema, status: 200, streaming: true },
  {
    method: 'post',
    path: '/v1/tasks/{taskId}/pushNotificationConfigs',
    operationId: 'v03CreateTaskPushNotificationConfig',
    summary: 'A2A v0.3: tasks/pushNotificationConfig/set. The body is the TaskPushNotificationConfig (or the whole CreateTaskPushNotificationConfigRequest).',
    pathParams: ['taskId'],
    body: Type.Object({ name: Type.Optional(Type.String()), pushNotificationConfig: TaskPushConfig03Schema.properties.pushNotificationConfig }),
    result: TaskPushConfig03Schema,
    status: 201
  },
  { method: 'get', path: '/v1/tasks/{taskId}/pushNotificationConfigs', operationId: 'v03ListTaskPushNotificationConfigs', summary: 'A2A v0.3: tasks/pushNotificationConfig/list.', pathParams: ['taskId'], result: ListPushConfigs03Schema, status: 200 },
  { method: 'get', path: '/v1/tasks/{taskId}/pushNotificationConfigs/{configId}', operationId: 'v03GetTaskPushNotificationConfig', summary: 'A2A v0.3: tasks/pushNotificationConfig/get.', pathParams: CONFIG03, result: TaskPushConfig03Schema, status: 200 },
  { method: 'delete', path: '/v1/tasks/{taskId}/pushNotificationConfigs/{configId}', operationId: 'v03DeleteTaskPushNotificationConfig', summary: 'A2A v0.3: tasks/pushNotificationConfig/delete.', pathParams: CONFIG03, status: 204 },
  { method: 'get', path: '/v1/card', operationId: 'v03GetAgentCard', summary: 'The public agent card; with credentials, the caller\'s extended card (v0.3 form).', pathParams: [], result: Type.Object({ name: Type.String() }, { additionalProperties: true }), status: 200 }
]

/** A v0.3 operation's OpenAPI form. */
function operation03 (op: Rest03Operation): Record<string, unknown> {
  const responses: Record<string, unknown> = {
    default: { description: 'An error: the JSON-RPC error object, at the HTTP status of CONTRACT.md §12.', content: { 'application/a2a+json': { schema: ERROR03 } } }
  }
  if (op.result === undefined) responses['204'] = { description: 'Done.' }
  else if (op.streaming === true) responses['200'] = { description: 'Server-Sent Events: each `data:` line one StreamResponse.', content: { 'text/event-stream': { schema: plain(op.result) } } }
  else responses[String(op.status)] = { description: op.summary, content: { 'application/a2a+json': { schema: plain(op.result) } } }
  const parameters = [
    ...op.pathParams.map(name => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    ...Object.entries(op.query ?? {}).map(([name, schema]) => ({ name, in: 'query', required: false, schema: plain(schema) }))
  ]
  const out: Record<string, unknown> = { operationId: op.operationId, summary: op.summary, tags: ['A2A v0.3'], parameters, responses }
  if (op.body !== undefined) {
    const schema = plain(op.body)
    out.requestBody = { required: true, content: { 'application/json': { schema }, 'application/a2a+json': { schema } } }
  }
  return out
}

export interface OpenApiInfo {
  title: string
  version: string
  description: string
  /** The server's base URL. */
  url: string
}

const ERROR = { $ref: '#/components/schemas/Status' }
const ERROR03 = { $ref: '#/components/schemas/Error03' }

/** `google.rpc.Status` as the routes answer errors (CONTRACT.md §12). */
const STATUS_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'status', 'message', 'details'],
      properties: {
        code: { type: 'integer', description: 'The HTTP status.' },
        status: { type: 'string', enum: ['INVALID_ARGUMENT', 'FAILED_PRECONDITION', 'NOT_FOUND', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'UNAVAILABLE', 'INTERNAL'] },
        message: { type: 'string' },
        details: {
          type: 'array',
          description: 'A google.rpc.ErrorInfo first; a google.rpc.BadRequest naming each bad field for invalid input.',
          items: { type: 'object', required: ['@type'], properties: { '@type': { type: 'string' } }, additionalProperties: true }
        }
      }
    }
  }
}

/** A TypeBox schema as plain JSON Schema (TypeBox's symbols dropped). */
function plain (schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema))
}

/** The parameters of an operation: its path's, then (query operations) each property of its method's params. */
function parameters (op: RestOperation, method: RegisteredMethod): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = op.pathParams.map(name => ({ name, in: 'path', required: true, schema: { type: 'string' } }))
  if (op.params === 'query') {
    // Every route's method has a params schema, and a query route's is an object of scalars.
    const schema = plain(method.params as TSchema)
    const properties = schema.properties as Record<string, Record<string, unknown>>
    const required = new Set((schema.required as string[] | undefined) ?? [])
    for (const [name, schema] of Object.entries(properties)) {
      if (name === 'tenant' || op.pathParams.includes(name)) continue
      out.push({ name, in: 'query', required: required.has(name), schema })
    }
  }
  return out
}

/** The JSON Schema of a body: the method's params without what the path gives. */
function bodySchema (op: RestOperation, method: RegisteredMethod): Record<string, unknown> {
  const schema = plain(method.params as TSchema)
  const properties = { ...(schema.properties as Record<string, unknown> | undefined) }
  for (const name of [...op.pathParams, 'tenant']) delete properties[name]
  // Every body method requires a field (SendMessage its message, CancelTask its id, a config its url).
  const required = (schema.required as string[]).filter(name => !op.pathParams.includes(name))
  const out: Record<string, unknown> = { ...schema, properties }
  if (required.length > 0) out.required = required
  else delete out.required
  return out
}

function operation (op: RestOperation, method: RegisteredMethod): Record<string, unknown> {
  const responses: Record<string, unknown> = { default: { description: 'An error, as a google.rpc.Status.', content: { 'application/a2a+json': { schema: ERROR } } } }
  const result = plain(method.result as TSchema)
  if (op.status === 204) {
    responses['204'] = { description: 'Done.' }
  } else if (op.streaming === true) {
    responses['200'] = { description: 'Server-Sent Events: each `data:` line one StreamResponse.', content: { 'text/event-stream': { schema: result } } }
  } else {
    responses[String(op.status)] = { description: method.summary, content: { 'application/a2a+json': { schema: result } } }
  }
  const out: Record<string, unknown> = {
    operationId: `${op.rpc}${op.method === 'get' && op.streaming === true ? 'Get' : ''}`,
    summary: method.summary,
    tags: ['A2A v1.0'],
    parameters: parameters(op, method),
    responses
  }
  if (op.params === 'body') {
    const schema = bodySchema(op, method)
    // CancelTask's body may be absent, `{}` or `null`; the others need one.
    out.requestBody = {
      required: op.rpc !== 'CancelTask',
      content: { 'application/json': { schema }, 'application/a2a+json': { schema } }
    }
  }
  return out
}

/** OpenAPI's own fields of a security scheme: the card's entries also carry the A2A v1.0 form, which it has not. */
const SCHEME_FIELDS = ['type', 'description', 'name', 'in', 'scheme', 'bearerFormat', 'flows', 'openIdConnectUrl']

/**
 * The OpenAPI 3.1 document of the REST routes, from the v1.0 methods' schemas in `registry`. `securitySchemes` are
 * the agent card's (v0.3 entries are OpenAPI's security schemes), when security is on.
 */
export function buildOpenApiDocument (registry: MethodRegistry, info: OpenApiInfo, securitySchemes?: Record<string, Record<string, unknown>>): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const op of REST_OPERATIONS) {
    const method = registry.get(op.rpc) as RegisteredMethod
    paths[op.path] ??= {}
    paths[op.path][op.method] = operation(op, method)
  }
  for (const op of REST03_OPERATIONS) {
    paths[op.path] ??= {}
    paths[op.path][op.method] = operation03(op)
  }
  const components: Record<string, unknown> = { schemas: { Status: STATUS_SCHEMA, Error03: plain(Error03Schema) } }
  const doc: Record<string, unknown> = {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    servers: [{ url: info.url }],
    paths,
    components
  }
  if (securitySchemes !== undefined) {
    components.securitySchemes = Object.fromEntries(Object.entries(securitySchemes).map(([name, scheme]) =>
      [name, Object.fromEntries(SCHEME_FIELDS.filter(field => scheme[field] !== undefined).map(field => [field, scheme[field]]))]))
    doc.security = Object.keys(securitySchemes).map(name => ({ [name]: [] }))
  }
  return doc
}
