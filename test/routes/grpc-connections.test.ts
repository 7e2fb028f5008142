import { connect, type Socket } from 'node:net'
import t from 'tap'
import { listenGrpc, until, waitOrEchoInTwo } from '../helper.js'
import { prefaceOf } from '../../services/grpc/listener.js'
import { grpcClients, unary } from './grpc-client.js'

// The gRPC port's connections (issue 39 row 3): a client that never finishes its HTTP/2 preface is closed after
// protocol.grpc.handshake_timeout, connections past protocol.grpc.max_connections are dropped, and neither stops
// the HTTP port or well-behaved gRPC clients from being answered.

const executor = waitOrEchoInTwo
const MAGIC = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'

/** A raw socket to `target` that sends `bytes` and nothing more; `closed` settles when the server closes it. */
async function rawSocket (target: string, bytes: string | Buffer): Promise<{ socket: Socket, closed: Promise<void> }> {
  const [host, port] = target.split(':')
  const socket = connect(Number(port), host)
  socket.on('error', () => {})
  const closed = new Promise<void>(resolve => socket.once('close', () => resolve()))
  await new Promise<void>(resolve => socket.once('connect', () => resolve()))
  socket.write(bytes)
  return { socket, closed }
}

t.test('connections that send half an HTTP/2 preface are closed after protocol.grpc.handshake_timeout; HTTP and gRPC keep answering meanwhile', async t => {
  const { url, target } = await listenGrpc(t, { executor, config: { protocol: { grpc: { handshake_timeout: 1 } } } })
  const sockets: Array<{ socket: Socket, closed: Promise<void> }> = []
  for (let i = 0; i < 60; i++) sockets.push(await rawSocket(target, MAGIC.slice(0, 12)))
  t.teardown(() => { for (const { socket } of sockets) socket.destroy() })
  t.equal((await fetch(`${url}/health`)).status, 200, 'HTTP /health answers')
  const { health } = grpcClients(t, target)
  t.same((await unary(health, 'Check', { service: '' })).value, { status: 'SERVING' }, 'a gRPC call is answered')
  await Promise.all(sockets.map(s => s.closed))
  t.pass('every half-preface connection was closed by the server')
  t.same((await unary(health, 'Check', { service: '' })).value, { status: 'SERVING' }, 'and gRPC still answers')
})

t.test('a connection that is not HTTP/2 is closed at once', async t => {
  const { target } = await listenGrpc(t, { executor, config: { protocol: { grpc: { handshake_timeout: 60 } } } })
  const { closed } = await rawSocket(target, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  await closed
  t.pass('closed before the handshake timeout')
})

t.test('past protocol.grpc.max_connections, a new connection to the gRPC port is dropped; room comes back as connections close', async t => {
  const { target } = await listenGrpc(t, { executor, config: { protocol: { grpc: { max_connections: 3, handshake_timeout: 60 } } } })
  const held: Array<{ socket: Socket, closed: Promise<void> }> = []
  for (let i = 0; i < 3; i++) held.push(await rawSocket(target, MAGIC.slice(0, 12)))
  const extra = await rawSocket(target, MAGIC.slice(0, 12))
  await extra.closed
  t.pass('the fourth connection was dropped')
  t.ok(held.every(({ socket }) => !socket.destroyed), 'the three within the cap stay open')
  for (const { socket } of held) socket.destroy()
  await Promise.all(held.map(h => h.closed))
  const { health } = grpcClients(t, target)
  await until(async () => (await unary(health, 'Check', { service: '' })).value?.status === 'SERVING')
  t.pass('a gRPC call is answered once room is back')
})

t.test('the close ends connections still in their handshake', async t => {
  const { app, target } = await listenGrpc(t, { executor, config: { protocol: { grpc: { handshake_timeout: 60 } } } })
  const { closed } = await rawSocket(target, MAGIC.slice(0, 12))
  await app.close()
  await closed
  t.pass('closed by the shutdown')
})

t.test('prefaceOf: the magic and a whole first SETTINGS frame make a preface', async t => {
  const settings = (length: number, type = 4) => {
    const header = Buffer.alloc(9)
    header.writeUIntBE(length, 0, 3)
    header[3] = type
    return Buffer.concat([Buffer.from(MAGIC), header, Buffer.alloc(length)])
  }
  t.equal(prefaceOf(Buffer.from(MAGIC.slice(0, 10))), 'partial', 'part of the magic')
  t.equal(prefaceOf(Buffer.from('PRX')), 'invalid', 'not the magic')
  t.equal(prefaceOf(Buffer.from(MAGIC)), 'partial', 'the magic alone')
  t.equal(prefaceOf(settings(12).subarray(0, 40)), 'partial', 'part of the SETTINGS payload')
  t.equal(prefaceOf(settings(12)), 'complete')
  t.equal(prefaceOf(settings(0)), 'complete', 'an empty SETTINGS frame')
  t.equal(prefaceOf(settings(6, 1)), 'invalid', 'a first frame that is not SETTINGS')
  t.equal(prefaceOf(settings(16_385).subarray(0, 40)), 'invalid', 'a SETTINGS frame longer than any allowed')
})
