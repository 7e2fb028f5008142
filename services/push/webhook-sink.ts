// `fastify-a2a webhook-sink` (CONTRACT.md §1): a local receiver that prints each push notification, for trying
// push by hand. Plain node:http, so that it starts at once and has nothing to configure.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { signingKey, verify } from './signing.js'

export interface WebhookSinkOptions {
  /** The address to listen on, e.g. 127.0.0.1. */
  host: string
  /** The port to listen on; 0 for any free one. */
  port: number
  /** The server's `signing_secret`: when given, each line says whether the delivery's signature is valid. */
  secret?: string
  /** Where the lines go. */
  out: NodeJS.WritableStream
  /** Bodies over this many bytes get 413 and are not shown; default 16 MiB (the default `server.max_request_size`). */
  maxBodyBytes?: number
}

export interface WebhookSink {
  /** `http://<address>:<port>/`, the URL to give as a push config's `url`. */
  url: string
  close (): Promise<void>
}

export const SINK_DEFAULTS = { host: '127.0.0.1', port: 9000 } as const

const MAX_BODY_BYTES = 16 * 1024 * 1024
const MAX_VALUE_CHARS = 120
// Shown as set or unset only: they carry credentials (CONTRACT.md §8.3).
const SECRET_HEADERS = ['x-a2a-notification-token', 'authorization', 'x-api-key']

// A value from the request, safe to print on one terminal line.
function clean (value: unknown): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is being removed
  const text = String(value).replace(/[\u0000-\u001f\u007f]/g, '?')
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text
}

// The body as text, or undefined past the limit (the rest is still read, so that the client gets its answer).
async function readBody (req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size <= limit) chunks.push(chunk)
  }
  return size > limit ? undefined : Buffer.concat(chunks).toString('utf8')
}

// "task=<id> state=<state>" from a Task body, or what is wrong with the body.
function describeBody (body: string): string {
  let task: { id?: unknown, status?: { state?: unknown } } | null
  try {
    task = JSON.parse(body)
  } catch {
    return 'invalid JSON'
  }
  return `task=${clean(task?.id ?? '-')} state=${clean(task?.status?.state ?? '-')}`
}

/** Starts the receiver: every POST gets 204 and one line on `out`; other methods get 405. */
export async function startWebhookSink (opts: WebhookSinkOptions): Promise<WebhookSink> {
  const key = opts.secret === undefined ? undefined : signingKey(opts.secret)
  const limit = opts.maxBodyBytes ?? MAX_BODY_BYTES

  async function handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end()
      return
    }
    let body: string | undefined
    try {
      body = await readBody(req, limit)
    } catch {
      // The client went away mid-body: there is nothing to show or to answer.
      res.destroy()
      return
    }
    const fields = [new Date().toISOString(), `POST ${clean(req.url)}`]
    fields.push(body === undefined ? `body over ${limit} bytes, not read` : describeBody(body))
    for (const name of SECRET_HEADERS) fields.push(`${name}=${req.headers[name] === undefined ? 'unset' : 'set'}`)
    if (req.headers['webhook-id'] !== undefined) fields.push(`webhook-id=${clean(req.headers['webhook-id'])}`)
    if (key !== undefined) {
      const signature = req.headers['webhook-signature'] === undefined
        ? 'missing'
        : body !== undefined && verify(key, req.headers, body) ? 'valid' : 'invalid'
      fields.push(`signature=${signature}`)
    }
    opts.out.write(`${fields.join(' ')}\n`)
    res.writeHead(body === undefined ? 413 : 204).end()
  }

  // handle never rejects: its one await is guarded.
  const server = createServer((req, res) => { handle(req, res) })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { address, port } = server.address() as AddressInfo
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}/`,
    close: () => new Promise<void>(resolve => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }
}

/**
 * The CLI command: starts the sink, prints its URL, and stops it on the first of `signals`. The process then ends
 * by itself, with exit code 0.
 */
export async function runWebhookSink (
  opts: Partial<Pick<WebhookSinkOptions, 'host' | 'port'>> & Omit<WebhookSinkOptions, 'host' | 'port'>,
  signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']
): Promise<void> {
  const sink = await startWebhookSink({ ...opts, host: opts.host ?? SINK_DEFAULTS.host, port: opts.port ?? SINK_DEFAULTS.port })
  opts.out.write(`webhook sink listening on ${sink.url} (Ctrl-C to stop)\n`)
  await new Promise<void>(resolve => {
    const stop = (): void => {
      for (const signal of signals) process.off(signal, stop)
      resolve()
    }
    for (const signal of signals) process.on(signal, stop)
  })
  await sink.close()
}
