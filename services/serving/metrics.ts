import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { TASK_STATES } from '../../schemas/task.js'
import type { AttemptOutcome } from '../push/notifier.js'

/** What the metrics read from the rest of the agent. */
export interface MetricsOptions {
  /** Whether a JSON-RPC method is registered: any other name is counted as `unknown`, so labels stay bounded. */
  knownMethod: (name: string) => boolean
  /** Open SSE streams now, read at each scrape. */
  openStreams: () => number
  /** Bytes of answers written and not yet taken by their clients (`server.max_answer_bytes`), read at each scrape. */
  answerBytes: () => number
  /** Bytes of requests being received and handled (`server.max_request_bytes`), read at each scrape. */
  requestBytes: () => number
}

/** Label of a request whose method is missing or not registered. */
export const UNKNOWN_METHOD = 'unknown'

/** Request durations run from milliseconds to a blocking `message/send` held up to `server.request_timeout`. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

let processRegistry: Registry | undefined

/** A gauge whose value is `read` at each scrape, registered in `registers`. */
function readAtScrape (name: string, help: string, read: () => number, registers: Registry[]): void {
  new Gauge({ // eslint-disable-line no-new -- registered through `registers`, read through `collect`
    name,
    help,
    registers,
    collect () {
      this.set(read())
    }
  })
}

/**
 * The default Node.js process metrics, in one registry per process shared by every agent in it: they describe the
 * process, and prom-client's collectors (GC observer, event-loop monitor) cannot be stopped once started.
 */
function processMetrics (): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

/**
 * The Prometheus metrics of one agent, in a registry of its own (never prom-client's global one, so that several
 * agents live in one process). The observers are bound functions, handed to the services that report.
 */
export class A2AMetrics {
  readonly registry = new Registry()
  readonly #knownMethod: (name: string) => boolean
  readonly #requests: Counter<'method' | 'code'>
  readonly #duration: Histogram<'method'>
  readonly #tasks: Gauge<'state'>
  readonly #deliveries: Counter<'outcome'>
  readonly #retries: Counter
  readonly #introspection: Counter<'result'>
  readonly #deduplicated: Counter

  constructor (opts: MetricsOptions) {
    this.#knownMethod = opts.knownMethod
    const registers = [this.registry]
    this.#requests = new Counter({
      name: 'a2a_rpc_requests_total',
      help: 'JSON-RPC requests answered, by method and outcome code (0: success, else the JSON-RPC error code).',
      labelNames: ['method', 'code'],
      registers
    })
    this.#duration = new Histogram({
      name: 'a2a_rpc_request_duration_seconds',
      help: 'Time from receiving a JSON-RPC request to its answer (to the opening of the stream, for streaming methods).',
      labelNames: ['method'],
      buckets: DURATION_BUCKETS,
      registers
    })
    this.#tasks = new Gauge({
      name: 'a2a_tasks',
      help: 'Tasks by state, as created and changed by this instance (terminal states count since start).',
      labelNames: ['state'],
      registers
    })
    readAtScrape('a2a_open_streams', 'Open streams of this instance: Server-Sent Events and gRPC server streams.', opts.openStreams, registers)
    readAtScrape('a2a_answer_bytes', 'Bytes of answers in flight: written and not yet taken by their clients, over every binding.', opts.answerBytes, registers)
    readAtScrape('a2a_request_bytes', 'Bytes of requests in flight: being received, parsed and handled, over every binding.', opts.requestBytes, registers)
    this.#deliveries = new Counter({
      name: 'a2a_webhook_deliveries_total',
      help: 'Webhook deliveries settled, by outcome: success, or failure (final, gone, or out of retries).',
      labelNames: ['outcome'],
      registers
    })
    this.#retries = new Counter({ name: 'a2a_webhook_retries_total', help: 'Webhook delivery attempts that failed and are retried.', registers })
    this.#introspection = new Counter({
      name: 'a2a_introspection_cache_total',
      help: 'OAuth2 token introspection cache lookups, by result: hit, or miss (the identity provider is asked).',
      labelNames: ['result'],
      registers
    })
    this.#deduplicated = new Counter({
      name: 'a2a_sends_deduplicated_total',
      help: 'Sends answered with the task an earlier send of the same messageId made (tasks.dedupe_window): the agent did not run again.',
      registers
    })
    // Every series exists from the start, at zero.
    for (const state of TASK_STATES) this.#tasks.set({ state }, 0)
    for (const outcome of ['success', 'failure']) this.#deliveries.inc({ outcome }, 0)
    for (const result of ['hit', 'miss']) this.#introspection.inc({ result }, 0)
  }

  /** A JSON-RPC request answered with `code` (0: a result) after `seconds`. */
  readonly rpc = (method: string | undefined, code: number, seconds: number): void => {
    const label = method !== undefined && this.#knownMethod(method) ? method : UNKNOWN_METHOD
    this.#requests.inc({ method: label, code: String(code) })
    this.#duration.observe({ method: label }, seconds)
  }

  /** A task was created (in `submitted`). */
  readonly taskCreated = (state: string): void => {
    this.#tasks.inc({ state })
  }

  /** A task moved from `previous` to `state`. */
  readonly taskChanged = (state: string, previous: string): void => {
    this.#tasks.dec({ state: previous })
    this.#tasks.inc({ state })
  }

  /** One webhook delivery attempt ended (services/push/notifier.ts). */
  readonly webhookAttempt = (outcome: AttemptOutcome): void => {
    if (outcome === 'retry') this.#retries.inc()
    else this.#deliveries.inc({ outcome: outcome === 'delivered' ? 'success' : 'failure' })
  }

  /** A send was a duplicate of an earlier one (services/tasks/dedupe.ts). */
  readonly sendDeduplicated = (): void => {
    this.#deduplicated.inc()
  }

  /** One introspection cache lookup (services/auth/introspection.ts). */
  readonly introspectionCache = (result: 'hit' | 'miss'): void => {
    this.#introspection.inc({ result })
  }

  /** The Prometheus text exposition format, version 0.0.4. */
  get contentType (): string {
    return this.registry.contentType
  }

  /** This agent's metrics, then the process's. */
  async render (): Promise<string> {
    return (await this.registry.metrics()) + '\n' + (await processMetrics().metrics())
  }
}
