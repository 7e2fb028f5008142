// What the two bare gRPC references (bench/bare-grpc.js, bench/bare-h2.js) share, some of it with the bench's gRPC
// load (bench/load.js): `lf.a2a.v1.A2AService` loaded from the vendored proto with proto-loader, as any grpc-js server
// loads it, a message's gRPC frame, the canned completed Task they answer, and the HTTP server that answers the
// bench's readiness check.
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import { loadSync } from '@grpc/proto-loader'

const includeDirs = [fileURLToPath(new URL('../dist/schemas/proto/', import.meta.url))]
const definition = loadSync('a2a/v1.0.1/a2a.proto', { keepCase: false, longs: String, enums: String, defaults: false, oneofs: true, includeDirs })

/** The A2A v1.0 service's definition (its methods' serializers included). */
export const a2aService = definition['lf.a2a.v1.A2AService']

/** A gRPC message on the wire: a flag byte (not compressed), the length (big-endian), the message. */
export function grpcFrame (message) {
  const frame = Buffer.alloc(5 + message.length)
  frame.writeUInt32BE(message.length, 1)
  message.copy(frame, 5)
  return frame
}

export const task = {
  id: '00000000-0000-4000-8000-000000000000',
  contextId: '00000000-0000-4000-8000-000000000001',
  status: { state: 'TASK_STATE_COMPLETED', timestamp: { seconds: '1798761600', nanos: 0 } },
  artifacts: [{ artifactId: '00000000-0000-4000-8000-000000000002', name: 'Agent-result', parts: [{ text: 'echo: hello bench' }] }],
  history: [{ messageId: 'bench', role: 'ROLE_USER', parts: [{ text: 'hello bench' }] }]
}

/** The bench's readiness check on `port`: a JSON-RPC answer with a completed task, once the gRPC port listens. */
export function answerReadiness (port) {
  createServer((_req, res) => res.end('{"jsonrpc":"2.0","id":1,"result":{"status":{"state":"completed"}}}')).listen(port, '127.0.0.1')
}
