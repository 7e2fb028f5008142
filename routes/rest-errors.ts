// The HTTP+JSON binding's error answers (CONTRACT.md §12): an A2A error's HTTP status, and its v1.0 and v0.3 bodies.
import { errorData } from '../services/a2a/codec-v10.js'
import { type JsonRpcError, RpcCode } from '../services/kernel/errors.js'

/** A `google.rpc.Status` code name per HTTP status of a refusal (CONTRACT.md §12). */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  414: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE'
}

/** The HTTP status of an A2A error on a REST route (CONTRACT.md §12). */
export function restStatus (err: JsonRpcError): number {
  if (err.httpStatus !== 200) return err.httpStatus
  switch (err.code) {
    case RpcCode.taskNotFound:
    case RpcCode.methodNotFound:
      return 404
    case RpcCode.internalError:
    case RpcCode.invalidAgentResponse:
      return 500
    default:
      return 400
  }
}

/** An A2A error as the body of a v0.3 REST answer: the JSON-RPC error object (CONTRACT.md §12). */
export function v03ErrorBody (err: JsonRpcError): { code: number, message: string, data?: unknown } {
  return err.data === undefined ? { code: err.code, message: err.message } : { code: err.code, message: err.message, data: err.data }
}

/** An A2A error as the `google.rpc.Status` body of a v1.0 REST answer. */
export function statusBody (err: JsonRpcError): { error: { code: number, status: string, message: string, details: unknown[] } } {
  const http = restStatus(err)
  // -32002..-32005 and -32007..-32009 are preconditions the request did not meet; bad input is INVALID_ARGUMENT.
  const status = http === 400 && !BAD_INPUT.has(err.code) ? 'FAILED_PRECONDITION' : STATUS_NAMES[http] ?? 'INTERNAL'
  const detail = typeof err.data === 'string' ? `: ${err.data}` : ''
  return { error: { code: http, status, message: err.message + detail, details: errorData(err) } }
}

const BAD_INPUT: ReadonlySet<number> = new Set([RpcCode.invalidParams, RpcCode.invalidRequest, RpcCode.parseError])
