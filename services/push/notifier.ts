import { newId } from '../kernel/ids.js'
import http from 'node:http'
import https from 'node:https'
import type { Got } from 'got'
import { lazyGot } from '../kernel/lazy-got.js'
import type { Logger } from '../kernel/logger.js'
import { spanFailed, traced, type Span, type TraceCarrier } from '../kernel/tracing.js'
import type { Task } from '../../schemas/task.js'
import type { StoredTask } from '../tasks/store.js'
import { signingKey } from './signing.js'
import {
  byError, byStatus, deliveryHeaders, postOnce, unreserved, type AttemptOutcome, type AttemptResult, type Delivery
} from './webhook-post.js'
import type { PushConfigStore, PushOutbox, StoredPushConfig } from './store.js'
import type { UrlPolicy } from './url-policy.js'

export { USER_AGENT, parseRetryAfter, type AttemptOutcome, type Delivery } from './webhook-post.js'

const JITTER = 0.2

export interface NotifierOptions {
  store: PushConfigStore
  policy: UrlPolicy
  log: Logger
  /**
   * The bodies of a task's deliveries, by config (each config's wire version has its own form): the protocol layer
   * writes them. Called once per change of state; the function it returns is called once per config.
   */
  bodies: (task: Task) => (config: StoredPushConfig) => string
  /** `push_notifications.config.timeout`, seconds per attempt. */
  timeoutSeconds: number
  /** Retries after the first attempt. */
  maxRetries: number
  /** Seconds before the first retry; doubled each retry, ±20% jitter. */
  retryDelaySeconds: number
  defaultHeaders: Record<string, string>
  /** Standard Webhooks secret; empty: deliveries are not signed. */
  signingSecret: string
  /** Deliveries in flight at once; the rest wait in line. */
  maxInFlight: number
  /** For tests: jitter source in [0, 1). */
  random?: () => number
  /** Told how each delivery attempt ended (metrics); absent, nothing is called. */
  onAttempt?: (outcome: AttemptOutcome) => void
}

/**
 * Where deliveries wait when they must outlive this process (CONTRACT.md §10: a Redis-backed queue). Without one,
 * the notifier queues and retries in memory.
 */
export interface DeliveryQueue {
  /**
   * Queues one delivery per config of one state change of a task (`version` is the task's version after it). `trace`:
   * the change's trace context, kept with each delivery for its attempts' spans.
   */
  add (taskId: string, version: number, state: string, bodyOf: (config: StoredPushConfig) => string, configs: StoredPushConfig[], trace?: TraceCarrier): Promise<void>
  /** Deliveries queued or in flight, across every instance sharing the queue. */
  pending (): Promise<number>
  close (timeoutMs: number): Promise<void>
}

/** How an attempt ended, for its caller (the outcome, a retry's `Retry-After`) and its span (the rest). */
export interface Attempted extends AttemptResult {
  /** The URL posted to. */
  server?: URL
}

/** `server.port` of a URL that names none (the URL policy allows http and https only). */
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 }

/** What the attempt's span says of its end: the receiver's answer, the outcome, and ERROR unless it was delivered. */
function endAttemptSpan (span: Span, result: Attempted): void {
  span.setAttribute('a2a.push.outcome', result.outcome)
  if (result.server !== undefined) {
    const { hostname, port, protocol } = result.server
    span.setAttributes({ 'server.address': hostname, 'server.port': Number(port || DEFAULT_PORTS[protocol]) })
  }
  if (result.status !== undefined) span.setAttribute('http.response.status_code', result.status)
  if (result.outcome !== 'delivered') spanFailed(span, result.code ?? String(result.status), `webhook delivery ${result.outcome}`)
}

/**
 * Delivers every state change of a task to each of its push configs (CONTRACT.md §8.3): in order per (task,
 * config), with retries on its own schedule, signed when a secret is set. Fully detached: `notify` returns at once
 * and nothing a webhook does reaches the caller or the agent.
 */
export class WebhookNotifier {
  readonly #opts: NotifierOptions
  /** got, loaded with the first delivery. */
  readonly #client: () => Promise<Got>
  readonly #key: Buffer | undefined
  readonly #defaultHeaders: Record<string, string>
  readonly #log: Logger
  readonly #random: () => number
  /** One promise chain per task: keeps the order in which configs are read and deliveries queued. */
  readonly #taskChains = new Map<string, Promise<void>>()
  /** One promise chain per (task, config): each state is sent after the previous one settled. */
  readonly #chains = new Map<string, Promise<void>>()
  readonly #timers = new Set<NodeJS.Timeout>()
  /** (task, config) keys that answered 410: what is still queued for them is dropped. */
  readonly #gone = new Set<string>()
  readonly #waiting: Array<() => void> = []
  readonly #agents: { http: http.Agent, https: https.Agent }
  #queue: DeliveryQueue | undefined
  #outbox: PushOutbox | undefined
  #inFlight = 0
  #closed = false

  constructor (opts: NotifierOptions) {
    this.#opts = opts
    this.#log = opts.log
    this.#random = opts.random ?? Math.random
    this.#key = opts.signingSecret === '' ? undefined : signingKey(opts.signingSecret)
    this.#defaultHeaders = unreserved(opts.defaultHeaders)
    this.#agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
    this.#client = lazyGot({
      retry: { limit: 0 },
      followRedirect: false,
      throwHttpErrors: false,
      timeout: { request: opts.timeoutSeconds * 1000 },
      // Every name is resolved through the policy: an address it refuses is never connected to (DNS rebinding).
      dnsLookup: opts.policy.lookup,
      agent: this.#agents,
      mutableDefaults: true
    }, client => {
      // got copies `cacheOptions` (four keys, all undefined) into every request, and then builds the request's
      // options as a spread of it followed by some thirty keys: V8 cannot cache that shape, so every request cost
      // about 19 µs and 11 KB of new hidden classes in the old generation. We never use got's cache: an empty
      // object keeps the spread on the fast path.
      client.defaults.options.cacheOptions = {}
    })
  }

  /**
   * Sends every later delivery through a durable queue, which calls `attemptOnce` for each attempt. With an outbox,
   * each change queued is acknowledged there, and `relay` queues the changes whose writer died before it could.
   */
  useQueue (queue: DeliveryQueue, outbox?: PushOutbox): void {
    this.#queue = queue
    this.#outbox = outbox
  }

  /**
   * Queues the deliveries of the outbox entries that waited past their grace period (their writer died, or could
   * not queue them). Returns how many entries were taken. Run by every instance before its reaper (only once
   * `useQueue` was given an outbox).
   */
  async relay (): Promise<number> {
    const records = await (this.#outbox as PushOutbox).claim()
    for (const record of records) this.notify(record, true)
    if (records.length > 0) this.#log.info({ count: records.length }, 'webhook deliveries recovered from the outbox')
    return records.length
  }

  /** Deliveries started or waiting (for tests and metrics); with a durable queue, those of every instance. */
  async backlog (): Promise<number> {
    return this.#taskChains.size + this.#chains.size + (await this.#queue?.pending() ?? 0)
  }

  /**
   * Queues the task's current state for every config it has. Never throws, never waits. `configs`: whether the task
   * had push configs when the change was written, when the task store could tell (Redis: the write's own script
   * looked); false costs nothing more.
   */
  notify (record: StoredTask, recovered = false, configs?: boolean): void {
    if (this.#closed) return
    const { task } = record
    // Most tasks have no push config: when the store can tell at once, such a change costs nothing more.
    if (!recovered && !this.#taskChains.has(task.id) && (configs ?? this.#opts.store.holds?.(task.id)) === false) return
    // The span of the write that made the change (an executor turn, an operation), as the record keeps it: the
    // deliveries' spans are its children, here or in the instance that relays it from the outbox.
    const { trace } = record
    const previous = this.#taskChains.get(task.id) ?? Promise.resolve()
    const next = previous.then(async () => {
      let configs: StoredPushConfig[]
      try {
        configs = await this.#opts.store.list(task.id)
      } catch (err) {
        this.#log.warn({ err, taskId: task.id, state: task.status.state }, 'push configs could not be read')
        return
      }
      // An outbox entry whose configs are gone since has nothing left to deliver.
      if (configs.length === 0) {
        if (recovered) await this.#ack(record)
        return
      }
      // Snapshots are immutable: the body is the state this change made, serialized only when someone gets it, once
      // per wire version (CONTRACT.md §11.6).
      const bodyOf = this.#opts.bodies(task)
      const queue = this.#queue
      if (queue === undefined) {
        for (const config of configs) {
          this.#enqueue({ taskId: task.id, config, body: bodyOf(config), state: task.status.state, id: `msg_${newId()}`, trace })
        }
        return
      }
      try {
        await queue.add(task.id, record.version, task.status.state, bodyOf, configs, trace)
      } catch (err) {
        // Left in the outbox (kvcache): the relay queues them once Redis takes writes again.
        this.#log.warn({ err, taskId: task.id, state: task.status.state }, 'webhook deliveries could not be queued')
        return
      }
      await this.#ack(record)
    })
    this.#taskChains.set(task.id, next)
    next.finally(() => {
      if (this.#taskChains.get(task.id) === next) this.#taskChains.delete(task.id)
    })
  }

  /** The change's deliveries are queued: its outbox entry, if it has one, is done. */
  async #ack (record: StoredTask): Promise<void> {
    await this.#outbox?.ack(record.task.id, record.version)
  }

  /** Waits for queued deliveries up to `timeoutMs`, then abandons the rest (memory backend: they are lost). */
  async close (timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs
    const all = Promise.all([...this.#taskChains.values(), ...this.#chains.values()])
    let timer: NodeJS.Timeout | undefined
    await Promise.race([all, new Promise<void>(resolve => { timer = setTimeout(resolve, timeoutMs) })])
    clearTimeout(timer)
    // The durable queue keeps what it could not deliver in time, for another instance or the next start. Its attempts
    // in flight get what is left of the same `timeoutMs`.
    await this.#queue?.close(Math.max(0, deadline - Date.now()))
    this.#closed = true
    for (const t of this.#timers) clearTimeout(t)
    this.#timers.clear()
    for (const wake of this.#waiting.splice(0)) wake()
    this.#agents.http.destroy()
    this.#agents.https.destroy()
  }

  #enqueue (delivery: Delivery): void {
    const key = `${delivery.taskId}\n${delivery.config.id}`
    const previous = this.#chains.get(key) ?? Promise.resolve()
    const next = previous.then(() => this.#gone.has(key) ? undefined : this.#deliver(delivery, key))
    this.#chains.set(key, next)
    next.finally(() => {
      if (this.#chains.get(key) !== next) return
      this.#chains.delete(key)
      this.#gone.delete(key)
    })
  }

  /** One delivery: attempts until success, a final failure, or retries run out. */
  async #deliver (delivery: Delivery, key: string): Promise<void> {
    for (let attempt = 1; !this.#closed; attempt++) {
      const report = await this.attemptOnce(delivery, attempt)
      if (report.outcome === 'gone') this.#gone.add(key)
      if (report.outcome !== 'retry') return
      await this.#sleep(this.retryDelay(attempt, report.retryAfter))
    }
  }

  /**
   * One attempt of a delivery, logged, with the 410 rule applied (the config is removed). `retry` means another
   * attempt is due and allowed: once `attempt` is past `max_retries` a retryable failure is final. The caller
   * (this notifier's own loop, or the durable queue) schedules the retry with `retryDelay`. Each attempt is a span,
   * `a2a push delivery`, a child of the change's (`delivery.trace`) wherever and whenever it is made.
   */
  attemptOnce (delivery: Delivery, attempt: number): Promise<Attempted> {
    return traced('a2a push delivery', () => ({
      'a2a.task.id': delivery.taskId,
      'a2a.task.state': delivery.state,
      'a2a.push.config.id': delivery.config.id,
      'a2a.push.attempt': attempt,
      'a2a.push.webhook_id': delivery.id
    }), () => this.#attemptOnce(delivery, attempt), endAttemptSpan, delivery.trace)
  }

  async #attemptOnce (delivery: Delivery, attempt: number): Promise<Attempted> {
    const { taskId, config } = delivery
    const checked = this.#opts.policy.checkUrl(config.url)
    if (!checked.ok) {
      this.#log.warn({ taskId, configId: config.id, reason: checked.reason }, 'webhook url refused at delivery')
      return this.#report({ outcome: 'final', code: 'A2A_ERR_UNSAFE_URL' })
    }
    const url = checked.url
    const host = url.host
    const result: Attempted = await this.#attempt(delivery, url)
    // Where it went, for the span: the host and port, never the path or query (they may carry a token).
    result.server = url
    if (result.outcome === 'delivered') {
      this.#log.debug({ taskId, configId: config.id, host, attempt, status: result.status }, 'webhook delivered')
      return this.#report(result)
    }
    const fields = { taskId, configId: config.id, host, attempt, state: delivery.state, status: result.status, code: result.code }
    if (result.outcome === 'gone') {
      this.#log.warn(fields, 'webhook gone: push config removed')
      await this.#opts.store.remove(taskId, config.id).catch(err => {
        this.#log.warn({ err, taskId, configId: config.id }, 'push config could not be removed')
      })
      return this.#report(result)
    }
    if (result.outcome === 'final' || attempt > this.#opts.maxRetries) {
      this.#log.warn(fields, 'webhook delivery failed')
      return this.#report({ ...result, outcome: 'final' })
    }
    this.#log.warn(fields, 'webhook delivery failed, will retry')
    return this.#report(result)
  }

  /** Tells the observer (metrics) how an attempt ended. */
  #report<R extends { outcome: AttemptOutcome }> (result: R): R {
    this.#opts.onAttempt?.(result.outcome)
    return result
  }

  /** The wait before retry number `attempt`: Retry-After when sane, else retry_delay × 2^(attempt-1) ± 20%. */
  retryDelay (attempt: number, retryAfter: number | undefined): number {
    if (retryAfter !== undefined) return retryAfter * 1000
    const base = this.#opts.retryDelaySeconds * 1000 * 2 ** (attempt - 1)
    return Math.round(base * (1 - JITTER + 2 * JITTER * this.#random()))
  }

  #sleep (ms: number): Promise<void> {
    return new Promise(resolve => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer)
        resolve()
      }, ms)
      this.#timers.add(timer)
    })
  }

  /** Waits for a free delivery slot; false when the notifier closed meanwhile. */
  async #slot (): Promise<boolean> {
    while (this.#inFlight >= this.#opts.maxInFlight && !this.#closed) {
      await new Promise<void>(resolve => this.#waiting.push(resolve))
    }
    if (this.#closed) return false
    this.#inFlight++
    return true
  }

  #release (): void {
    this.#inFlight--
    this.#waiting.shift()?.()
  }

  async #attempt (delivery: Delivery, url: URL): Promise<AttemptResult> {
    if (!await this.#slot()) return { outcome: 'final', code: 'A2A_ERR_CLOSED' }
    const result = await this.#client()
      .then(client => postOnce(client, url, deliveryHeaders(this.#defaultHeaders, this.#key, delivery), delivery.body))
      .then(byStatus, byError)
    this.#release()
    return result
  }
}
