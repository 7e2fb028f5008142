import { once } from 'node:events'
import { connect } from 'node:net'
import { Server } from '@grpc/grpc-js'
import t from 'tap'
import { GrpcListener } from '../../../services/grpc/listener.js'

// GrpcListener.closed: the shutdown waits on it for the connections grpc-js serves to close, as grpc-js's own
// tryShutdown does not on Node 24 (see the method).

/** The HTTP/2 client preface: the magic and an empty SETTINGS frame. */
const PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])])

async function listener (t: { teardown (fn: () => unknown): void }) {
  const server = new Server()
  const grpc = new GrpcListener(server, { maxConnections: 10, handshakeTimeoutMs: 60_000 })
  const port = await grpc.listen('127.0.0.1', 0)
  t.teardown(() => {
    grpc.close()
    server.forceShutdown()
  })
  return { grpc, port }
}

t.test('closed resolves at once when no connection is served', async t => {
  const { grpc } = await listener(t)
  await grpc.closed()
  t.pass('resolved')
})

t.test('closed waits for every connection handed to grpc-js to close', async t => {
  const { grpc, port } = await listener(t)
  const sockets = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')]
  for (const socket of sockets) {
    socket.write(PREFACE)
    // The server's SETTINGS: grpc-js has the connection.
    await once(socket, 'data')
  }
  let resolved = false
  const closed = grpc.closed().then(() => { resolved = true })
  sockets[0].destroy()
  await once(sockets[0], 'close')
  await new Promise(resolve => setTimeout(resolve, 50))
  t.notOk(resolved, 'one connection is still open')
  sockets[1].destroy()
  await closed
  t.ok(resolved, 'resolved once both have closed')
})
