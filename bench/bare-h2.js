// bare node:http2: what a unary gRPC `SendMessage` costs Node's own HTTP/2 with no gRPC library on the server, as a
// reference below bare grpc-js. Every stream on the gRPC port is read to its end and answered with one canned,
// pre-encoded `lf.a2a.v1.SendMessageResponse` (a completed Task, as bench/bare-grpc.js answers) and `grpc-status: 0`;
// nothing is decoded, checked or stored. A tiny HTTP server on PORT answers the bench's readiness check.
// Usage: node bench/bare-h2.js PORT GRPC_PORT
import { createServer as createHttp2Server } from 'node:http2'
import { a2aService, answerReadiness, grpcFrame, task } from './canned-grpc.js'

const port = Number(process.argv[2] ?? 0)
const grpcPort = Number(process.argv[3] ?? 0)
const frame = grpcFrame(a2aService.SendMessage.responseSerialize({ task }))

const server = createHttp2Server()
server.on('stream', stream => {
  stream.on('data', () => {})
  stream.once('end', () => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto' }, { waitForTrailers: true })
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }))
    stream.end(frame)
  })
})
server.listen(grpcPort, '127.0.0.1', () => answerReadiness(port))
