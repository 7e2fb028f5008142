// Today's peer: @a2a-js/sdk 1.3 with express and grpc-js, its DefaultRequestHandler over its InMemoryTaskStore, the
// executor doing the work of our built-in agent (bench/peer-v1-agent.js), push notifications through its in-memory
// store and sender. It speaks A2A v1.0 only, in its three bindings from one handler, as its multi-transport sample
// mounts them: JSON-RPC (`jsonRpcHandler`) and HTTP+JSON (`restHandler`) on PORT, gRPC (`grpcService`) on GRPC_PORT.
// Usage: node bench/peer-v1.js PORT GRPC_PORT
import express from 'express'
import { Server, ServerCredentials } from '@grpc/grpc-js'
import {
  DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore
} from '@a2a-js/sdk-v1/server'
import { UserBuilder, jsonRpcHandler, restHandler } from '@a2a-js/sdk-v1/server/express'
import { A2AService, UserBuilder as GrpcUserBuilder, grpcService } from '@a2a-js/sdk-v1/server/grpc'
import { EchoExecutor, peerCard } from './peer-v1-agent.js'

const port = Number(process.argv[2] ?? 0)
const grpcPort = Number(process.argv[3] ?? 0)

const pushStore = new InMemoryPushNotificationStore()
const handler = new DefaultRequestHandler(peerCard(port, { rest: true, grpcPort }), new InMemoryTaskStore(), new EchoExecutor(),
  undefined, pushStore, new DefaultPushNotificationSender(pushStore))
const app = express()
app.use(express.json({ limit: '16mb' }))
app.use('/', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
const server = app.listen(port, '127.0.0.1')

const grpc = new Server()
grpc.addService(A2AService, grpcService({ requestHandler: handler, userBuilder: GrpcUserBuilder.noAuthentication }))
grpc.bindAsync(`127.0.0.1:${grpcPort}`, ServerCredentials.createInsecure(), err => { if (err !== null) throw err })

process.on('SIGTERM', () => {
  grpc.forceShutdown()
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
