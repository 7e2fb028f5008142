import { Metadata, status as Status, type StatusObject } from '@grpc/grpc-js'
import { errorData } from '../a2a/codec-v10.js'
import { JsonRpcError, RpcCode } from '../kernel/errors.js'
import type { ProtoCodec } from './codec.js'

// A2A errors over gRPC (CONTRACT.md §13, v1.0 §10.6): a status code per v1.0 §5.4, the message with its detail, and
// a `google.rpc.Status` in `grpc-status-details-bin` whose details are the ErrorInfo (reason, domain, metadata) and,
// for bad params, the BadRequest naming the field: the same details the other v1.0 bindings carry.

/** The status code of an A2A error (v1.0 §5.4); refusals by the transport keep their HTTP meaning. */
export function grpcCode (err: JsonRpcError): Status {
  switch (err.httpStatus) {
    case 401: return Status.UNAUTHENTICATED
    case 403: return Status.PERMISSION_DENIED
    case 413:
    case 429: return Status.RESOURCE_EXHAUSTED
    case 503: return Status.UNAVAILABLE
  }
  switch (err.code) {
    case RpcCode.taskNotFound:
      return Status.NOT_FOUND
    case RpcCode.taskNotCancelable:
    case RpcCode.pushNotSupported:
    case RpcCode.unsupportedOperation:
    case RpcCode.extendedCardNotConfigured:
    case RpcCode.extensionSupportRequired:
    case RpcCode.versionNotSupported:
      return Status.FAILED_PRECONDITION
    case RpcCode.contentTypeNotSupported:
    case RpcCode.invalidParams:
    case RpcCode.invalidRequest:
    case RpcCode.parseError:
      return Status.INVALID_ARGUMENT
    // v0.3's answer to a push config while push notifications are off, and to anything this server does not do.
    case RpcCode.methodNotFound:
      return Status.UNIMPLEMENTED
    case RpcCode.unauthenticated:
      return Status.UNAUTHENTICATED
    case RpcCode.insufficientScope:
      return Status.PERMISSION_DENIED
    case RpcCode.rateLimited:
      return Status.RESOURCE_EXHAUSTED
    default:
      return Status.INTERNAL
  }
}

const DETAILS_BIN = 'grpc-status-details-bin'
const TYPE_PREFIX = 'type.googleapis.com/'

/** The status a call ends with for `err`: code, message and the `google.rpc.Status` details (with `retry-after`). */
export function statusOf (err: JsonRpcError, codec: ProtoCodec): Partial<StatusObject> {
  const code = grpcCode(err)
  const message = typeof err.data === 'string' ? `${err.message}: ${err.data}` : err.message
  const details = errorData(err).map(detail => {
    const { '@type': url, ...fields } = detail as { '@type': string }
    // protobufjs's own google.protobuf.Any keeps the proto's field name.
    return { type_url: url, value: codec.write(codec.type(url.slice(TYPE_PREFIX.length)), fields) }
  })
  const metadata = new Metadata()
  metadata.set(DETAILS_BIN, encodeStatus(codec, code, message, details))
  if (err.headers !== undefined) for (const [name, value] of Object.entries(err.headers)) metadata.set(name, value)
  return { code, details: message, metadata }
}

/** google.rpc.Status, its details as `Any`s already encoded. */
function encodeStatus (codec: ProtoCodec, code: Status, message: string, details: Array<{ type_url: string, value: Buffer }>): Buffer {
  const type = codec.type('google.rpc.Status')
  return Buffer.from(type.encode(type.fromObject({ code, message, details })).finish())
}
