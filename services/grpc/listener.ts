import { createServer, type Server as NetServer, type Socket } from 'node:net'
import { ServerCredentials, type Server } from '@grpc/grpc-js'

// The gRPC port's own listener (issue 39 row 3): grpc-js alone keeps every socket it is given, for as long as its
// client likes, however many there are. This listener holds the sockets of the port itself, at most
// `protocol.grpc.max_connections` of them (Node drops those past it), and hands a socket to grpc-js only once its
// client has sent the whole HTTP/2 connection preface (the magic and its first SETTINGS frame). One that has not
// within `protocol.grpc.handshake_timeout` is closed, as the HTTP port closes a request whose headers do not come.

/** The client connection preface's magic (RFC 9113 §3.4). */
const MAGIC = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')
/** A frame's header: length (3 bytes), type, flags, stream id (4). */
const FRAME_HEADER = 9
const SETTINGS = 0x4
/** The largest frame a client may send before the server's own SETTINGS (RFC 9113 §4.2: SETTINGS_MAX_FRAME_SIZE's initial value). */
const MAX_FRAME = 16_384

export interface GrpcListenerOptions {
  /** `protocol.grpc.max_connections`. */
  maxConnections: number
  /** `protocol.grpc.handshake_timeout`, in ms. */
  handshakeTimeoutMs: number
}

/** What the preface read so far says: complete, not yet, or not HTTP/2. */
type Preface = 'complete' | 'partial' | 'invalid'

/** Whether `bytes` (the first a client sent) hold a whole HTTP/2 client preface. */
export function prefaceOf (bytes: Buffer): Preface {
  const magic = Math.min(bytes.length, MAGIC.length)
  if (!bytes.subarray(0, magic).equals(MAGIC.subarray(0, magic))) return 'invalid'
  if (bytes.length < MAGIC.length + FRAME_HEADER) return 'partial'
  const length = bytes.readUIntBE(MAGIC.length, 3)
  if (bytes[MAGIC.length + 3] !== SETTINGS || length > MAX_FRAME) return 'invalid'
  return bytes.length >= MAGIC.length + FRAME_HEADER + length ? 'complete' : 'partial'
}

/** The sockets of the gRPC port, each handed to the grpc-js server once its HTTP/2 preface is in. */
export class GrpcListener {
  readonly #net: NetServer
  readonly #inject: (socket: Socket) => void
  readonly #timeoutMs: number
  /** Sockets whose preface is not in yet. */
  readonly #pending = new Set<Socket>()
  /** Sockets handed to grpc-js and still open. */
  readonly #served = new Set<Socket>()
  /** Called once `#served` is empty (see `closed`). */
  #onEmpty: (() => void) | undefined

  constructor (server: Server, opts: GrpcListenerOptions) {
    const injector = server.createConnectionInjector(ServerCredentials.createInsecure())
    this.#inject = socket => injector.injectConnection(socket)
    this.#timeoutMs = opts.handshakeTimeoutMs
    this.#net = createServer(socket => this.#accept(socket))
    this.#net.maxConnections = opts.maxConnections
  }

  /** Listens on `host:port` (port 0: any free one); resolves to the port bound. */
  async listen (host: string, port: number): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.#net.once('error', reject)
      this.#net.listen(port, host, () => {
        this.#net.off('error', reject)
        resolve()
      })
    })
    return (this.#net.address() as { port: number }).port
  }

  /** Takes no more connections, and closes those still in their handshake; those grpc-js serves are its to close. */
  close (): void {
    this.#net.close(() => {})
    for (const socket of this.#pending) socket.destroy()
  }

  /**
   * Resolves once every socket handed to grpc-js has closed: their sessions have ended, their last frames sent.
   * grpc-js's `tryShutdown` says so too, on Node 20 and 22; on Node 24, whose HTTP/2 server closes its sessions
   * itself when closed, grpc-js finds them closing already and calls back at once, streams still open.
   */
  closed (): Promise<void> {
    if (this.#served.size === 0) return Promise.resolve()
    return new Promise(resolve => { this.#onEmpty = resolve })
  }

  #accept (socket: Socket): void {
    this.#pending.add(socket)
    // (A client that resets its socket mid-handshake: nothing to do but let it go.)
    socket.on('error', () => {})
    const timer = setTimeout(() => socket.destroy(), this.#timeoutMs)
    socket.once('close', () => {
      clearTimeout(timer)
      this.#pending.delete(socket)
      if (this.#served.delete(socket) && this.#served.size === 0) this.#onEmpty?.()
    })
    let read = Buffer.alloc(0)
    const onData = (chunk: Buffer): void => {
      read = Buffer.concat([read, chunk])
      const preface = prefaceOf(read)
      if (preface === 'partial') return
      if (preface === 'invalid') {
        socket.destroy()
        return
      }
      clearTimeout(timer)
      this.#pending.delete(socket)
      this.#served.add(socket)
      socket.off('data', onData)
      socket.pause()
      // grpc-js's HTTP/2 session reads what the socket holds first: the preface, and anything sent behind it.
      socket.unshift(read)
      this.#inject(socket)
    }
    socket.on('data', onData)
  }
}
