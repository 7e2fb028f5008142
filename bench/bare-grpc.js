// bare grpc-js: the least a gRPC `SendMessage` can cost on @grpc/grpc-js, as a reference for our gRPC binding's CPU
// per request. `lf.a2a.v1.A2AService/SendMessage` from the vendored proto (proto-loader, as any grpc-js server loads
// it) answers one canned completed Task; nothing is read, stored or checked. A tiny HTTP server on PORT answers the
// bench's readiness check. Usage: node bench/bare-grpc.js PORT GRPC_PORT
import { Server, ServerCredentials } from '@grpc/grpc-js'
import { a2aService, answerReadiness, task } from './canned-grpc.js'

const port = Number(process.argv[2] ?? 0)
const grpcPort = Number(process.argv[3] ?? 0)
const server = new Server()
server.addService(a2aService, { SendMessage: (_call, callback) => callback(null, { task }) })
server.bindAsync(`127.0.0.1:${grpcPort}`, ServerCredentials.createInsecure(), err => {
  if (err !== null) throw err
  answerReadiness(port)
})
