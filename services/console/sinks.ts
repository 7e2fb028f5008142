// The developer console's webhook sink (CONTRACT.md §3, `GET /console`): push deliveries the server makes to itself,
// kept in memory so the console can show them. A sink is named by a random token the console picks; knowing the
// token is what lets a caller read it, as with any webhook URL.
import ipaddr from 'ipaddr.js'
import type { A2AConfig } from '../../schemas/config.js'

/** Sink tokens: 16 to 64 URL-safe characters, enough to be unguessable and short enough to sit in a path. */
export const SINK_TOKEN = /^[A-Za-z0-9_-]{16,64}$/

/** What a caller is told when a token does not have that shape. */
export const SINK_TOKEN_RULE = 'token: must be 16 to 64 characters of A-Z, a-z, 0-9, _ or -'

/** Deliveries kept per sink; older ones are dropped first. */
export const MAX_ENTRIES_PER_SINK = 50
/** Sinks kept at once; the least recently written is dropped first. */
export const MAX_SINKS = 32
/** Body bytes kept across every sink; the oldest deliveries of the least recently written sink go first. */
export const MAX_TOTAL_BYTES = 8 * 1024 * 1024

/** Headers shown as `[set]` only: they carry credentials (CONTRACT.md §8.3). */
const SECRET_HEADERS = ['x-a2a-notification-token', 'authorization', 'x-api-key']
/** Headers worth showing for a delivery; the others are transport detail. */
const SHOWN_HEADERS = ['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', ...SECRET_HEADERS]

/** A TCP address the server listens on. */
export interface Endpoint {
  address: string
  port: number
}

/** One delivery as the console shows it. */
export interface SinkDelivery {
  /** Increases with every delivery this server receives. */
  seq: number
  receivedAt: string
  /** The task id and state from the body, when it is a Task (v0.3) or holds one (v1.0), as the body spells them. */
  taskId: string | null
  state: string | null
  headers: Record<string, string>
  body: string
}

export interface ConsoleSinksOptions {
  /** The plugin prefix, normalized (`/` or `/agent`). */
  prefix: string
  /** The addresses the server listens on (`fastify.addresses()`): none before `listen`, a path for a Unix socket. */
  addresses: () => Array<Endpoint | string>
  /** Default MAX_ENTRIES_PER_SINK. */
  maxEntries?: number
  /** Default MAX_SINKS. */
  maxSinks?: number
  /** Default MAX_TOTAL_BYTES; at least the largest body accepted, so that the newest delivery is always kept. */
  maxBytes?: number
}

/** `console.enabled`: `auto` turns the console on exactly when security is off. */
export function consoleEnabled (config: A2AConfig): boolean {
  const enabled = config.console.enabled
  return enabled === 'auto' ? !config.security.enabled : enabled
}

/** The in-memory sinks, and which push URLs are the server's own sink URLs. */
export class ConsoleSinks {
  readonly #opts: Required<ConsoleSinksOptions>
  readonly #sinks = new Map<string, SinkDelivery[]>()
  readonly #path: string
  #bytes = 0
  #seq = 0

  constructor (opts: ConsoleSinksOptions) {
    this.#opts = { maxEntries: MAX_ENTRIES_PER_SINK, maxSinks: MAX_SINKS, maxBytes: MAX_TOTAL_BYTES, ...opts }
    this.#path = `${opts.prefix === '/' ? '' : opts.prefix}/console/sink/`
  }

  /** Keeps one delivery in the token's sink, within the caps. */
  record (token: string, headers: Record<string, string | string[] | undefined>, body: string): SinkDelivery {
    const entries = this.#sinks.get(token) ?? []
    // Re-inserted so that the map's order is least recently written first.
    this.#sinks.delete(token)
    this.#sinks.set(token, entries)
    const entry: SinkDelivery = { seq: ++this.#seq, receivedAt: new Date().toISOString(), ...summary(body), headers: shown(headers), body }
    entries.push(entry)
    this.#bytes += Buffer.byteLength(body)
    if (entries.length > this.#opts.maxEntries) this.#dropOldest(token)
    while (this.#sinks.size > this.#opts.maxSinks) this.#dropSink(this.#sinks.keys().next().value as string)
    while (this.#bytes > this.#opts.maxBytes) this.#dropOldest(this.#sinks.keys().next().value as string)
    return entry
  }

  /** The token's deliveries, newest first. */
  list (token: string): SinkDelivery[] {
    return [...this.#sinks.get(token) ?? []].reverse()
  }

  /** The URL a push config uses to reach the token's sink on this server, or null while it listens on no TCP port. */
  urlFor (token: string): string | null {
    const own = this.#endpoints()[0]
    if (own === undefined) return null
    const ip = ipaddr.parse(own.address)
    const host = ip.range() === 'unspecified' ? (ip.kind() === 'ipv4' ? '127.0.0.1' : '::1') : own.address
    return `http://${host.includes(':') ? `[${host}]` : host}:${own.port}${this.#path}${token}`
  }

  /**
   * Whether a push URL is exactly one of this server's own sink URLs: plain http to an address and port the server
   * listens on (a loopback address when it listens on every address), the sink path with a valid token, nothing
   * else. The URL policy lets these through its private-address rule and nothing more.
   */
  readonly owns = (url: URL): boolean => {
    if (url.protocol !== 'http:' || url.search !== '' || url.hash !== '' || !url.pathname.startsWith(this.#path)) return false
    if (!SINK_TOKEN.test(url.pathname.slice(this.#path.length))) return false
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    if (!ipaddr.isValid(host)) return false
    const ip = ipaddr.parse(host)
    const port = Number(url.port === '' ? 80 : url.port)
    return this.#endpoints().some(own => own.port === port && serves(ipaddr.parse(own.address), ip))
  }

  #endpoints (): Endpoint[] {
    return this.#opts.addresses().filter((a): a is Endpoint => typeof a !== 'string')
  }

  #dropOldest (token: string): void {
    const entries = this.#sinks.get(token) as SinkDelivery[]
    this.#bytes -= Buffer.byteLength((entries.shift() as SinkDelivery).body)
    if (entries.length === 0) this.#sinks.delete(token)
  }

  #dropSink (token: string): void {
    for (const entry of this.#sinks.get(token) as SinkDelivery[]) this.#bytes -= Buffer.byteLength(entry.body)
    this.#sinks.delete(token)
  }
}

/** Whether a server listening on `own` answers at `ip`: the same address, or loopback when it listens on all. */
function serves (own: ipaddr.IPv4 | ipaddr.IPv6, ip: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (own.range() === 'unspecified') return ip.range() === 'loopback'
  return own.kind() === ip.kind() && own.toNormalizedString() === ip.toNormalizedString()
}

interface TaskLike { id?: unknown, status?: { state?: unknown } }

/** The task id and state of a body: a v0.3 Task, or a v1.0 StreamResponse `{"task": ...}` (push-bodies.ts). */
function summary (body: string): Pick<SinkDelivery, 'taskId' | 'state'> {
  let parsed: (TaskLike & { task?: TaskLike }) | null
  try {
    parsed = JSON.parse(body)
  } catch {
    return { taskId: null, state: null }
  }
  const task = typeof parsed?.task === 'object' && parsed.task !== null ? parsed.task : parsed
  const id = task?.id
  const state = task?.status?.state
  return { taskId: typeof id === 'string' ? id : null, state: typeof state === 'string' ? state : null }
}

function shown (headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of SHOWN_HEADERS) {
    const value = headers[name]
    if (value === undefined) continue
    out[name] = SECRET_HEADERS.includes(name) ? '[set]' : String(value)
  }
  return out
}
