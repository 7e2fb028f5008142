// bare grpc-js: the least a gRPC `SendMessage` can cost on @grpc/grpc-js, as a reference for our gRPC binding's CPU
// per request. `lf.a2a.v1.A2AService/SendMessage` from the vendored proto (proto-loader, as any grpc-js server loads
// it) answers one canned completed Task; nothing is read, stored or checked. A tiny HTTP server on PORT answers the
// bench's readiness check. Usage: node bench/bare-grpc.js PORT GRPC_PORT
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import { Server, ServerCredentials, loadPackageDefinition } from '@grpc/grpc-js'
import { loadSync } from '@grpc/proto-loader'

const port = Number(process.argv[2] ?? 0)
const grpcPort = Number(process.argv[3] ?? 0)
const includeDirs = [fileURLToPath(new URL('../dist/schemas/proto/', import.meta.url))]
const definition = loadSync('a2a/v1.0.1/a2a.proto', { keepCase: false, longs: String, enums: String, defaults: false, oneofs: true, includeDirs })
const service = loadPackageDefinition(definition).lf.a2a.v1.A2AService.service

const task = {
  id: '00000000-0000-4000-8000-000000000000',
  contextId: '00000000-0000-4000-8000-000000000001',
  status: { state: 'TASK_STATE_COMPLETED', timestamp: { seconds: '1798761600', nanos: 0 } },
  artifacts: [{ artifactId: '00000000-0000-4000-8000-000000000002', name: 'Agent-result', parts: [{ text: 'echo: hello bench' }] }],
  history: [{ messageId: 'bench', role: 'ROLE_USER', parts: [{ text: 'hello bench' }] }]
}
const server = new Server()
server.addService(service, { SendMessage: (_call, callback) => callback(null, { task }) })
server.bindAsync(`127.0.0.1:${grpcPort}`, ServerCredentials.createInsecure(), err => {
  if (err !== null) throw err
  // The bench's readiness check: a JSON-RPC answer with a completed task.
  createServer((_req, res) => res.end('{"jsonrpc":"2.0","id":1,"result":{"status":{"state":"completed"}}}')).listen(port, '127.0.0.1')
})
