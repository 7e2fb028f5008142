import { Type, type TSchema } from '@sinclair/typebox'
import { PushNotificationConfigSchema, TaskPushNotificationConfigSchema } from '../../schemas/push-config.js'
import { ArtifactSchema, MessageSchema, PartSchema, TaskSchema } from '../../schemas/task.js'
import { InvalidPluginOptions, RpcCode } from '../kernel/errors.js'
import type { MethodDefinition, RegisteredMethod } from './registry.js'

/** What the document says about the service as a whole. */
export interface OpenRpcInfo {
  /** `agent.name`. */
  title: string
  /** `agent.version`. */
  version: string
  /** `agent.description`. */
  description: string
  /** The card's url: where the JSON-RPC endpoint is. */
  url: string
}

/** An OpenRPC error object: a JSON-RPC error code and the message this server sends with it. */
export interface OpenRpcError { code: number, message: string }

/** An OpenRPC content descriptor: a named value (a param, a result) and its JSON Schema. */
export interface OpenRpcContentDescriptor { name: string, schema: unknown, required?: boolean, description?: string }

/** An OpenRPC method object, with two extensions: `x-scopes` and `x-streaming`. */
export interface OpenRpcMethod {
  name: string
  summary: string
  description?: string
  paramStructure: 'by-name'
  params: OpenRpcContentDescriptor[]
  result: OpenRpcContentDescriptor
  errors: OpenRpcError[]
  'x-scopes': string[]
  'x-streaming'?: true
}

/** An OpenRPC 1.3 document. @see https://spec.open-rpc.org */
export interface OpenRpcDocument {
  openrpc: '1.3.2'
  info: { title: string, version: string, description: string }
  servers: Array<{ name: string, url: string }>
  methods: OpenRpcMethod[]
  components: { schemas: Record<string, unknown>, errors: Record<string, OpenRpcError> }
}

/** The document, and its JSON as served (built once). */
export interface RenderedOpenRpc {
  readonly document: OpenRpcDocument
  readonly json: string
}

/** The OpenRPC specification version the document follows. */
export const OPENRPC_VERSION = '1.3.2'
/** The OpenRPC service discovery method. */
export const DISCOVER_METHOD = 'rpc.discover'

/** Every error code this server answers with, by name, with the message it sends (services/kernel/errors.ts). */
export const ERRORS: Readonly<Record<string, OpenRpcError>> = {
  ParseError: { code: RpcCode.parseError, message: 'Parse error' },
  InvalidRequest: { code: RpcCode.invalidRequest, message: 'Invalid Request' },
  MethodNotFound: { code: RpcCode.methodNotFound, message: 'Method not found' },
  InvalidParams: { code: RpcCode.invalidParams, message: 'Invalid params' },
  InternalError: { code: RpcCode.internalError, message: 'Internal error' },
  TaskNotFound: { code: RpcCode.taskNotFound, message: 'Task not found' },
  TaskNotCancelable: { code: RpcCode.taskNotCancelable, message: 'Task cannot be canceled' },
  PushNotificationNotSupported: { code: RpcCode.pushNotSupported, message: 'Push notifications are not supported' },
  UnsupportedOperation: { code: RpcCode.unsupportedOperation, message: 'Unsupported operation' },
  ContentTypeNotSupported: { code: RpcCode.contentTypeNotSupported, message: 'Incompatible content types' },
  ExtendedAgentCardNotConfigured: { code: RpcCode.extendedCardNotConfigured, message: 'Extended agent card not configured' },
  ExtensionSupportRequired: { code: RpcCode.extensionSupportRequired, message: 'Extension support required' },
  VersionNotSupported: { code: RpcCode.versionNotSupported, message: 'Version not supported' },
  Unauthenticated: { code: RpcCode.unauthenticated, message: 'Unauthenticated' },
  InsufficientScope: { code: RpcCode.insufficientScope, message: 'Insufficient scope' },
  RateLimited: { code: RpcCode.rateLimited, message: 'Rate limited' },
  IdpUnavailable: { code: RpcCode.idpUnavailable, message: 'Identity provider unavailable' }
}

const BY_CODE = new Map(Object.values(ERRORS).map(e => [e.code, e]))

/** Schemas named once in `components.schemas` and referred to wherever they occur, which keeps the document small. */
export const COMPONENT_SCHEMAS: Readonly<Record<string, TSchema>> = {
  Task: TaskSchema,
  Message: MessageSchema,
  Artifact: ArtifactSchema,
  Part: PartSchema,
  PushNotificationConfig: PushNotificationConfigSchema,
  TaskPushNotificationConfig: TaskPushNotificationConfigSchema
}

const STREAMING_NOTE = 'Answers with Server-Sent Events: each event is one JSON-RPC response with the request id, ' +
  'whose result is described below; errors after authentication are one error event.'

/** The result of `rpc.discover`: an OpenRPC document (its full shape is the OpenRPC meta-schema). */
export const OpenRpcDocumentSchema = Type.Object({
  openrpc: Type.String(),
  info: Type.Object({ title: Type.String(), version: Type.String() }, { additionalProperties: true }),
  methods: Type.Array(Type.Object({ name: Type.String() }, { additionalProperties: true }))
}, { additionalProperties: true, description: 'An OpenRPC 1.3 document, see https://spec.open-rpc.org' })

type Plain = (schema: TSchema) => unknown

/**
 * TypeBox schemas are JSON Schema plus symbol keys. The copy this returns has plain string keys only, and every
 * subschema equal to a component (after the symbols are gone) is a `$ref` to it.
 */
function plainWithRefs (components: Readonly<Record<string, TSchema>>): { plain: Plain, schemas: Record<string, unknown> } {
  const names = new Map(Object.entries(components).map(([name, schema]) => [JSON.stringify(schema), name]))
  const walk = (node: unknown, root: boolean): unknown => {
    if (typeof node !== 'object' || node === null) return node
    const name = root ? undefined : names.get(JSON.stringify(node))
    if (name !== undefined) return { $ref: `#/components/schemas/${name}` }
    if (Array.isArray(node)) return node.map(item => walk(item, false))
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, walk(value, false)]))
  }
  const schemas = Object.fromEntries(Object.entries(components).map(([name, schema]) => [name, walk(schema, true)]))
  return { plain: schema => walk(schema, false), schemas }
}

/** By-name params: one content descriptor per property of an object schema, else the whole object as `params`. */
function paramsOf (schema: TSchema | undefined, plain: Plain): OpenRpcContentDescriptor[] {
  if (schema === undefined) return []
  const properties = schema.properties as Record<string, TSchema> | undefined
  if (schema.type !== 'object' || properties === undefined) return [{ name: 'params', schema: plain(schema), required: true }]
  const required = new Set<string>(schema.required ?? [])
  return Object.entries(properties).map(([name, property]) => ({ name, schema: plain(property), required: required.has(name) }))
}

/**
 * The method's own error codes, plus -32602 when it takes params and -32011 when it needs scopes, by code descending.
 * A code without a known message is a mistake in the method's entry, refused when the document is built.
 */
function errorsOf (method: RegisteredMethod): OpenRpcError[] {
  const codes = new Set(method.errors ?? [])
  if (method.params !== undefined) codes.add(RpcCode.invalidParams)
  if (method.scopes.length > 0) codes.add(RpcCode.insufficientScope)
  return [...codes].sort((a, b) => b - a).map(code => {
    const error = BY_CODE.get(code)
    if (error === undefined) throw new InvalidPluginOptions(`method ${method.name}: error code ${code} has no known message`)
    return error
  })
}

function methodOf (method: RegisteredMethod, plain: Plain): OpenRpcMethod {
  const out: OpenRpcMethod = {
    name: method.name,
    summary: method.summary,
    paramStructure: 'by-name',
    params: paramsOf(method.params, plain),
    result: { name: 'result', schema: method.result === undefined ? {} : plain(method.result) },
    errors: errorsOf(method),
    'x-scopes': [...method.scopes]
  }
  if (method.streaming === true) {
    out.description = STREAMING_NOTE
    out['x-streaming'] = true
  }
  return out
}

/**
 * The OpenRPC document of the registered methods, generated from their TypeBox schemas (params, result) and error
 * codes, never written by hand. `x-scopes` gives the scopes a caller needs beyond authentication.
 */
export function buildOpenRpcDocument (methods: readonly RegisteredMethod[], info: OpenRpcInfo): OpenRpcDocument {
  const { plain, schemas } = plainWithRefs(COMPONENT_SCHEMAS)
  return {
    openrpc: OPENRPC_VERSION,
    info: { title: info.title, version: info.version, description: info.description },
    servers: [{ name: info.title, url: info.url }],
    methods: methods.map(method => methodOf(method, plain)),
    components: { schemas, errors: { ...ERRORS } }
  }
}

/**
 * The document of a registry, built on the first call and kept: call it once every method is registered
 * (at startup).
 */
export function openRpcRenderer (methods: () => readonly RegisteredMethod[], info: OpenRpcInfo): () => RenderedOpenRpc {
  let rendered: RenderedOpenRpc | undefined
  return () => {
    if (rendered === undefined) {
      const document = buildOpenRpcDocument(methods(), info)
      rendered = { document, json: JSON.stringify(document) }
    }
    return rendered
  }
}

/** `rpc.discover` (the OpenRPC service discovery method): the document, which lists this method too. */
export function createDiscoverMethod (render: () => RenderedOpenRpc): MethodDefinition {
  return {
    name: DISCOVER_METHOD,
    summary: 'Returns the OpenRPC document of this service: every method with its params, result and errors.',
    result: OpenRpcDocumentSchema,
    discovery: true,
    handler: () => render().document
  }
}
