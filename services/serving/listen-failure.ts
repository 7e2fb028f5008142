// A start that cannot listen (CONTRACT.md §1, `serve`): one line that names what failed and the setting that
// changes it, e.g. "cannot listen on 127.0.0.1:8000: address in use (set server.port or PORT)". The standalone
// server turns the errors of its HTTP listen and of the gRPC binding's bind into this.

/** Why a listen failed, per Node's error code, and whether the address (not the port) is to blame. */
const REASONS: Readonly<Record<string, { reason: string, address?: true }>> = {
  EADDRINUSE: { reason: 'address in use' },
  EACCES: { reason: 'permission denied (ports below 1024 need privileges)' },
  EADDRNOTAVAIL: { reason: 'no such address on this machine', address: true },
  ENOTFOUND: { reason: 'host name not found', address: true },
  EAI_AGAIN: { reason: 'host name not found', address: true }
}

const ADDRESS_HINT = 'set server.host or HOST'

export interface ListenTarget {
  /** What listens, when not the HTTP server: `gRPC`. */
  binding?: string
  /** host:port, as configured. */
  address: string
  /** The settings that change the port. */
  portHint: string
}

/** A failed listen, with the one line to print. Code `A2A_ERR_LISTEN`. */
export class ListenFailure extends Error {
  readonly code = 'A2A_ERR_LISTEN'

  constructor (message: string, cause: unknown) {
    super(message, { cause })
    this.name = 'ListenFailure'
  }
}

/** host:port, the host in brackets when it is an IPv6 address. */
export function hostPort (host: string, port: number | string): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * The ListenFailure a listen's error comes to; the error itself when it is no failure to listen (a plugin that
 * failed to start, say). grpc-js gives only a message ("No address added out of total 1
 * resolved errors: [listen EADDRINUSE: …]"): its code is read from there.
 */
export function listenFailure (err: unknown, target: ListenTarget): unknown {
  if (err instanceof ListenFailure) return err
  const { code, syscall, message } = (err ?? {}) as { code?: unknown, syscall?: unknown, message?: unknown }
  const fromMessage = /\b(?:listen|bind) (E[A-Z_]+)\b/.exec(typeof message === 'string' ? message : '')?.[1]
  const named = (syscall === 'listen' || syscall === 'getaddrinfo') && typeof code === 'string' ? code : fromMessage
  if (named === undefined) return err
  const known = REASONS[named]
  const hint = known?.address === true ? ADDRESS_HINT : target.portHint
  const what = target.binding === undefined ? '' : ` for ${target.binding}`
  return new ListenFailure(`cannot listen${what} on ${target.address}: ${known?.reason ?? named} (${hint})`, err)
}
