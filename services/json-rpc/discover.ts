import { Type } from '@sinclair/typebox'
import { InvalidPluginOptions, RpcCode } from '../kernel/errors.js'
import type { MethodDefinition, RegisteredMethod } from './registry.js'

// What every server needs of its service documents at start: the `rpc.discover` method, the check of each method's
// error codes, and a renderer that builds a document once, on its first use. The generators themselves
// (services/json-rpc/openrpc.ts, services/rest/openapi.ts) are imported by that first use (docs/architecture.md,
// "What loads when"): a server nobody asks for its documents never loads them nor holds the documents.

/** An OpenRPC error object: a JSON-RPC error code and the message this server sends with it. */
export interface OpenRpcError { code: number, message: string }

/** A document, and its JSON as served. */
export interface Rendered<D> {
  readonly document: D
  readonly json: string
}

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

/**
 * The method's own error codes, plus -32602 when it takes params and -32011 when it needs scopes, by code descending.
 * A code without a known message is a mistake in the method's entry: refused at start (`checkErrorCodes`).
 */
export function errorsOf (method: RegisteredMethod): OpenRpcError[] {
  const codes = new Set(method.errors ?? [])
  if (method.params !== undefined) codes.add(RpcCode.invalidParams)
  if (method.scopes.length > 0) codes.add(RpcCode.insufficientScope)
  return [...codes].sort((a, b) => b - a).map(code => {
    const error = BY_CODE.get(code)
    if (error === undefined) throw new InvalidPluginOptions(`method ${method.name}: error code ${code} has no known message`)
    return error
  })
}

/** Throws InvalidPluginOptions for a method listing an error code with no known message, as building the document would. */
export function checkErrorCodes (methods: readonly RegisteredMethod[]): void {
  for (const method of methods) errorsOf(method)
}

/** The result of `rpc.discover`: an OpenRPC document (its full shape is the OpenRPC meta-schema). */
export const OpenRpcDocumentSchema = Type.Object({
  openrpc: Type.String(),
  info: Type.Object({ title: Type.String(), version: Type.String() }, { additionalProperties: true }),
  methods: Type.Array(Type.Object({ name: Type.String() }, { additionalProperties: true }))
}, { additionalProperties: true, description: 'An OpenRPC 1.3 document, see https://spec.open-rpc.org' })

/**
 * A document built by `build` on the first call and kept, with its JSON. Call it once every method is registered.
 * A build that fails is tried again by the next call.
 */
export function renderOnce<D> (build: () => Promise<D>): () => Promise<Rendered<D>> {
  let rendered: Promise<Rendered<D>> | undefined
  return async () => {
    const current = rendered ??= build().then(document => ({ document, json: JSON.stringify(document) }))
    try {
      return await current
    } catch (err) {
      // Only the build that failed is forgotten, not one a later call has started since.
      if (rendered === current) rendered = undefined
      throw err
    }
  }
}

/** `rpc.discover` (the OpenRPC service discovery method): the document, which lists this method too. */
export function createDiscoverMethod (render: () => Promise<Rendered<unknown>>): MethodDefinition {
  return {
    name: DISCOVER_METHOD,
    summary: 'Returns the OpenRPC document of this service: every method with its params, result and errors.',
    result: OpenRpcDocumentSchema,
    discovery: true,
    handler: async () => (await render()).document
  }
}
