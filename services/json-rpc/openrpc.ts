import type { TSchema } from '@sinclair/typebox'
import { PushNotificationConfigSchema, TaskPushNotificationConfigSchema } from '../../schemas/push-config.js'
import { ArtifactSchema, MessageSchema, PartSchema, TaskSchema } from '../../schemas/task.js'
import type { RegisteredMethod } from './registry.js'
import { ERRORS, errorsOf, type OpenRpcError } from './discover.js'

// The OpenRPC document's generator, loaded when the document is first asked for (`GET /openrpc.json`,
// `rpc.discover`): services/json-rpc/discover.ts registers the method and checks the error codes at start.

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

/** The OpenRPC specification version the document follows. */
export const OPENRPC_VERSION = '1.3.2'
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
