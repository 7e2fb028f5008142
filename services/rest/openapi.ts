import type { TSchema } from '@sinclair/typebox'
import type { MethodRegistry, RegisteredMethod } from '../json-rpc/registry.js'

// The OpenAPI 3.1 document of the HTTP+JSON routes (`GET /openapi.json`, CONTRACT.md §12), made from the same
// TypeBox schemas the v1.0 methods validate with: a route's body, query parameters and answer are its method's.

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

export interface OpenApiInfo {
  title: string
  version: string
  description: string
  /** The server's base URL. */
  url: string
}

const ERROR = { $ref: '#/components/schemas/Status' }

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
  const components: Record<string, unknown> = { schemas: { Status: STATUS_SCHEMA } }
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

/** The document and its JSON, built once on first use (every method is registered by then). */
export interface RenderedOpenApi {
  document: Record<string, unknown>
  json: string
}

export function openApiRenderer (build: () => Record<string, unknown>): () => RenderedOpenApi {
  let rendered: RenderedOpenApi | undefined
  return () => {
    if (rendered === undefined) {
      const document = build()
      rendered = { document, json: JSON.stringify(document) }
    }
    return rendered
  }
}
