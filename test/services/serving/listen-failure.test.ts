import t from 'tap'
import { ListenFailure, hostPort, listenFailure } from '../../../services/serving/listen-failure.js'

const http = { address: '127.0.0.1:8000', portHint: 'set server.port or PORT' }

/** An error as Node's listen gives it. */
function listenError (code: string, syscall = 'listen'): Error {
  return Object.assign(new Error(`${syscall} ${code}: …`), { code, syscall })
}

t.test('row 9: a failed listen is one line naming the address, the reason and the setting to change', async t => {
  const inUse = listenFailure(listenError('EADDRINUSE'), http) as ListenFailure
  t.ok(inUse instanceof ListenFailure)
  t.equal(inUse.code, 'A2A_ERR_LISTEN')
  t.equal(inUse.message, 'cannot listen on 127.0.0.1:8000: address in use (set server.port or PORT)')
  t.equal((listenFailure(listenError('EACCES'), http) as Error).message,
    'cannot listen on 127.0.0.1:8000: permission denied (ports below 1024 need privileges) (set server.port or PORT)')
  t.equal((listenFailure(listenError('EADDRNOTAVAIL'), http) as Error).message,
    'cannot listen on 127.0.0.1:8000: no such address on this machine (set server.host or HOST)')
  t.equal((listenFailure(listenError('ENOTFOUND', 'getaddrinfo'), http) as Error).message,
    'cannot listen on 127.0.0.1:8000: host name not found (set server.host or HOST)')
  t.equal((listenFailure(listenError('EINVAL'), http) as Error).message, 'cannot listen on 127.0.0.1:8000: EINVAL (set server.port or PORT)',
    'a code with no words of its own is named as it is')
  const grpc = new Error('No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use 127.0.0.1:50051]')
  t.equal((listenFailure(grpc, { binding: 'gRPC', address: '127.0.0.1:50051', portHint: 'set protocol.grpc.port' }) as Error).message,
    'cannot listen for gRPC on 127.0.0.1:50051: address in use (set protocol.grpc.port)', 'grpc-js: the code read from its message')
  t.equal(listenFailure(inUse, http), inUse, 'a ListenFailure stays as it is')
})

t.test('row 9: an error that is no failure to listen is left as it is', async t => {
  const other = Object.assign(new Error('plugin failed'), { code: 'A2A_ERR_SOMETHING' })
  t.equal(listenFailure(other, http), other)
  t.equal(listenFailure(undefined, http), undefined)
  t.equal(listenFailure('text', http), 'text')
})

t.test('hostPort puts an IPv6 host in brackets', async t => {
  t.equal(hostPort('::1', 8000), '[::1]:8000')
  t.equal(hostPort('0.0.0.0', '8000'), '0.0.0.0:8000')
})
