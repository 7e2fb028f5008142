// A2A errors as gRPC statuses (services/grpc/status.ts): the code of each error per v1.0 §5.4, and the refusals of
// the transport by their HTTP meaning.
import { status as Status } from '@grpc/grpc-js'
import t from 'tap'
import { JsonRpcError, RpcCode } from '../../../services/kernel/errors.js'
import { grpcCode, statusOf } from '../../../services/grpc/status.js'
import { protoCodec } from '../../../services/grpc/protos.js'

t.test('each A2A error has the status code of v1.0 §5.4', async t => {
  const codes: Array<[number, Status]> = [
    [RpcCode.taskNotFound, Status.NOT_FOUND],
    [RpcCode.taskNotCancelable, Status.FAILED_PRECONDITION],
    [RpcCode.pushNotSupported, Status.FAILED_PRECONDITION],
    [RpcCode.unsupportedOperation, Status.FAILED_PRECONDITION],
    [RpcCode.contentTypeNotSupported, Status.INVALID_ARGUMENT],
    [RpcCode.invalidAgentResponse, Status.INTERNAL],
    [RpcCode.extendedCardNotConfigured, Status.FAILED_PRECONDITION],
    [RpcCode.extensionSupportRequired, Status.FAILED_PRECONDITION],
    [RpcCode.versionNotSupported, Status.FAILED_PRECONDITION],
    [RpcCode.invalidParams, Status.INVALID_ARGUMENT],
    [RpcCode.invalidRequest, Status.INVALID_ARGUMENT],
    [RpcCode.parseError, Status.INVALID_ARGUMENT],
    [RpcCode.methodNotFound, Status.UNIMPLEMENTED],
    [RpcCode.internalError, Status.INTERNAL],
    [RpcCode.unauthenticated, Status.UNAUTHENTICATED],
    [RpcCode.insufficientScope, Status.PERMISSION_DENIED],
    [RpcCode.rateLimited, Status.RESOURCE_EXHAUSTED]
  ]
  for (const [code, status] of codes) t.equal(grpcCode(new JsonRpcError(code, 'm')), status, `${code}`)
})

t.test('refusals by the transport keep their HTTP meaning', async t => {
  const http: Array<[number, Status]> = [
    [401, Status.UNAUTHENTICATED], [403, Status.PERMISSION_DENIED], [413, Status.RESOURCE_EXHAUSTED],
    [429, Status.RESOURCE_EXHAUSTED], [503, Status.UNAVAILABLE]
  ]
  for (const [code, status] of http) t.equal(grpcCode(new JsonRpcError(RpcCode.internalError, 'm', undefined, code)), status, `HTTP ${code}`)
})

t.test('the status message carries a text detail; other data stays in the details only', async t => {
  const codec = protoCodec()
  t.equal(statusOf(new JsonRpcError(RpcCode.taskNotFound, 'Task not found', 'task "x"'), codec).details, 'Task not found: task "x"')
  const structured = statusOf(new JsonRpcError(RpcCode.invalidParams, 'Invalid params', [{ field: 'a' }]), codec)
  t.equal(structured.details, 'Invalid params')
  t.equal(structured.code, Status.INVALID_ARGUMENT)
  t.ok((structured.metadata?.get('grpc-status-details-bin')[0] as Buffer).length > 0)
})
