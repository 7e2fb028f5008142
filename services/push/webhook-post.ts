import { createHash } from 'node:crypto'
import type http from 'node:http'
import type { Got } from 'got'
import { injectTrace, type TraceCarrier } from '../kernel/tracing.js'
import { VERSION } from '../kernel/version.js'
import { signatureHeaders } from './signing.js'
import type { StoredPushConfig } from './store.js'

// One webhook delivery attempt on the wire: its headers, the POST, and what the receiver's answer means. The
// notifier (notifier.ts) decides when to attempt, and in what order.

/** How a delivery attempt ended. */
export type AttemptOutcome = 'delivered' | 'retry' | 'final' | 'gone'

/** A receiver's answer is read to at most this much. */
const MAX_BODY_BYTES = 64 * 1024
/** A `Retry-After` above this is not honoured; the schedule applies. */
const MAX_RETRY_AFTER_S = 60
export const USER_AGENT = `fastify-a2a-notifier/${VERSION}`

/** Headers a config and the notifier set; `default_headers` cannot override them. */
const RESERVED = new Set([
  'content-type', 'user-agent', 'x-a2a-notification-token', 'authorization', 'x-api-key',
  'webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-length', 'host', 'traceparent', 'tracestate'
])

export interface Delivery {
  readonly taskId: string
  readonly config: StoredPushConfig
  readonly body: string
  readonly state: string
  /** Stable across the retries of this delivery (`webhook-id`). */
  readonly id: string
  /** The trace context of the write that made the change, when a span recorded it: each attempt's span is its child. */
  readonly trace?: TraceCarrier
}

/** `defaultHeaders` without the headers the notifier sets itself. */
export function unreserved (defaultHeaders: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(defaultHeaders).filter(([name]) => !RESERVED.has(name.toLowerCase())))
}

/**
 * The headers of an attempt: the defaults, the content type of the config's version, its token and credentials, the
 * signature, and the attempt span's `traceparent` when it records.
 */
export function deliveryHeaders (defaults: Record<string, string>, key: Buffer | undefined, delivery: Delivery): Record<string, string> {
  const { config } = delivery
  // Copied key by key: a spread followed by new keys is V8's slow path, on every attempt.
  const headers: Record<string, string> = {}
  for (const name of Object.keys(defaults)) headers[name] = defaults[name]
  headers['content-type'] = config.version === '1.0' ? 'application/a2a+json' : 'application/json'
  headers['user-agent'] = USER_AGENT
  if (config.token !== undefined && config.token !== '') headers['x-a2a-notification-token'] = config.token
  const auth = config.authentication
  const credentials = auth?.credentials
  if (config.version === '1.0') {
    // v1.0: `Authorization: <scheme> <credentials>`, whatever the scheme (§11.6).
    if (auth !== undefined && credentials !== undefined && credentials !== '') headers.authorization = `${auth.schemes[0]} ${credentials}`
  } else if (auth !== undefined && credentials !== undefined && credentials !== '') {
    // The schema requires schemes whenever authentication is given.
    const schemes = auth.schemes.map(s => s.toLowerCase())
    if (schemes.includes('bearer')) headers.authorization = `Bearer ${credentials}`
    else if (schemes.includes('apikey')) headers['x-api-key'] = credentials
  }
  if (key !== undefined) {
    Object.assign(headers, signatureHeaders(key, delivery.id, Math.floor(Date.now() / 1000), delivery.body))
  }
  injectTrace(headers)
  return headers
}

/** One POST; reads at most 64 KiB of the answer and drops the rest. */
export function postOnce (client: Got, url: URL, headers: Record<string, string>, body: string): Promise<{ status: number, retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const stream = client.stream.post(url, { headers, body })
    let status = 0
    let retryAfter: string | undefined
    let read = 0
    // A promise settles once: a later call (an error after the end) changes nothing.
    const done = (err?: Error) => {
      if (err !== undefined && status === 0) reject(err)
      else resolve({ status, retryAfter })
    }
    stream.on('response', (res: http.IncomingMessage) => {
      // A client response always has a status code; retry-after is a single-valued header.
      status = res.statusCode as number
      retryAfter = res.headers['retry-after']
    })
    stream.on('data', (chunk: Buffer) => {
      read += chunk.length
      if (read > MAX_BODY_BYTES) {
        stream.destroy()
        done()
      }
    })
    stream.on('end', () => done())
    stream.on('error', (err: Error) => done(err))
    stream.resume()
  })
}

export interface AttemptResult { outcome: AttemptOutcome, status?: number, code?: string, retryAfter?: number }

/** What a receiver's answer means for the delivery. */
export function byStatus (response: { status: number, retryAfter?: string }): AttemptResult {
  const { status } = response
  if (status >= 200 && status < 300) return { outcome: 'delivered', status }
  if (status === 410) return { outcome: 'gone', status }
  if (status === 408 || status === 429 || status >= 500) {
    return { outcome: 'retry', status, retryAfter: parseRetryAfter(response.retryAfter) }
  }
  // 3xx (redirects are not followed) and every other 4xx are final.
  return { outcome: 'final', status }
}

/** What a failed POST means: a refused address is final (retrying cannot make it safe); anything else is retried. */
export function byError (err: { code?: string }): AttemptResult {
  const { code = 'ERROR' } = err
  return { outcome: code === 'A2A_ERR_UNSAFE_ADDRESS' ? 'final' : 'retry', code }
}

/** `Retry-After` in seconds or as an HTTP date; undefined when absent, invalid or over 60 s. */
export function parseRetryAfter (value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined
  let seconds: number
  if (/^\d+$/.test(value.trim())) seconds = Number(value.trim())
  else {
    const at = Date.parse(value)
    if (Number.isNaN(at)) return undefined
    seconds = Math.max(0, Math.ceil((at - now) / 1000))
  }
  return seconds <= MAX_RETRY_AFTER_S ? seconds : undefined
}

/**
 * `<task>.<version>.<config>`: the id of the delivery of one state to one config (its `webhook-id` is `msg_` and this;
 * BullMQ's job id). BullMQ ids may not contain `:`, and a client-chosen config id may: those are hashed.
 */
export function deliveryJobId (taskId: string, version: number, configId: string): string {
  const config = /^[\w-]{1,64}$/.test(configId) ? configId : createHash('sha256').update(configId).digest('base64url')
  return `${taskId}.${version}.${config}`
}
