import createError from '@fastify/error'

/** JSON-RPC 2.0 and A2A v0.3 error codes, plus the transport-level ones of CONTRACT.md §4. */
export const RpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  invalidAgentResponse: -32006,
  extendedCardNotConfigured: -32007,
  extensionSupportRequired: -32008,
  versionNotSupported: -32009,
  unauthenticated: -32010,
  insufficientScope: -32011,
  rateLimited: -32012,
  idpUnavailable: -32013
} as const

/**
 * An error that travels to the client as a JSON-RPC error object. `httpStatus` is 200 for protocol errors and the
 * transport status (400, 401, 403, 413, 415, 429, 503) for the few that are not.
 */
export class JsonRpcError extends Error {
  readonly code: number
  readonly data: unknown
  readonly httpStatus: number
  readonly headers: Record<string, string> | undefined

  constructor (code: number, message: string, data?: unknown, httpStatus = 200, headers?: Record<string, string>) {
    super(message)
    this.name = 'JsonRpcError'
    this.code = code
    this.data = data
    this.httpStatus = httpStatus
    this.headers = headers
  }
}

export const invalidParams = (data: string) => new JsonRpcError(RpcCode.invalidParams, 'Invalid params', data)
export const invalidRequest = (data: string) => new JsonRpcError(RpcCode.invalidRequest, 'Invalid Request', data)
export const methodNotFound = (method: string) =>
  new JsonRpcError(RpcCode.methodNotFound, 'Method not found', `method "${method}" is not supported`)
export const taskNotFound = (id: string) =>
  new JsonRpcError(RpcCode.taskNotFound, 'Task not found', `task "${id}" was not found`)
export const taskNotCancelable = (id: string, state: string) =>
  new JsonRpcError(RpcCode.taskNotCancelable, 'Task cannot be canceled', `task "${id}" is ${state}`)
export const contentTypeNotSupported = (data: string) =>
  new JsonRpcError(RpcCode.contentTypeNotSupported, 'Incompatible content types', data)

// Coded errors thrown by services; the JSON-RPC layer maps the ones a client may see.
export const InvalidConfig = createError('A2A_ERR_INVALID_CONFIG', 'Invalid configuration:\n%s', 500, TypeError)
export const InvalidPluginOptions = createError('A2A_ERR_INVALID_OPTIONS', 'Invalid option: %s', 500, TypeError)
export const IllegalTransition = createError('A2A_ERR_ILLEGAL_TRANSITION', 'Task %s cannot move from %s to %s', 409)
export const TaskNotFound = createError('A2A_ERR_TASK_NOT_FOUND', 'Task %s not found', 404)
export const TaskStoreFull = createError('A2A_ERR_TASK_STORE_FULL', 'The task store holds %s unfinished tasks, its limit', 503)
/** An owner holds `tasks.max_live_per_principal` unfinished tasks: HTTP 429, -32012 (CONTRACT.md §2). */
export const LiveTaskLimit = createError('A2A_ERR_LIVE_TASK_LIMIT', 'Principal %s holds its limit of unfinished tasks', 429)
export const TaskConflict = createError('A2A_ERR_TASK_CONFLICT', 'Task %s was changed concurrently', 409)
export const StorageUnavailable = createError('A2A_ERR_STORAGE_UNAVAILABLE', 'Storage unavailable: %s', 503)
/** A task run whose writes the store kept refusing past its retries: the run stops, and its lease lapses. */
export const RunStorageFailure = createError('A2A_ERR_RUN_STORAGE_FAILURE', 'Task %s could not be written: storage unavailable', 503)

/**
 * Awaits a Redis call; whatever it throws (connection, timeout, an error reply) becomes StorageUnavailable with the
 * client's message, which the JSON-RPC layer answers with 503 and Retry-After (CONTRACT.md §8.1).
 */
export async function storageCall<T> (call: Promise<T>): Promise<T> {
  try {
    return await call
  } catch (err) {
    throw new StorageUnavailable((err as Error).message)
  }
}

/** HTTP 401 with the challenge of CONTRACT.md §9; `invalid_token` when the caller sent a credential. */
export function unauthenticated (data: string, credentialSent: boolean): JsonRpcError {
  const challenge = credentialSent ? 'Bearer realm="a2a", error="invalid_token"' : 'Bearer realm="a2a"'
  return new JsonRpcError(RpcCode.unauthenticated, 'Unauthenticated', data, 401, { 'www-authenticate': challenge })
}
export const PushConfigLimit = createError('A2A_ERR_PUSH_CONFIG_LIMIT', 'Task %s already has %s push configs', 400)
