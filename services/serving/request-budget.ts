import { AnswerBudget, type Taken } from './answer-budget.js'

/**
 * Bytes of requests being received, parsed and handled, bounded for the whole server and per connection, over every
 * binding (`server.max_request_bytes`, `server.max_request_bytes_per_connection`). A request takes its size before its
 * body is read (HTTP: its `content-length`, a chunked body `server.max_request_size`; gRPC: the message grpc-js read)
 * and gives it back once its operation has the message (which the task store counts from then on: `tasks.max_bytes`)
 * or its response has ended, whichever comes first. A request that finds no room waits a little (HTTP), then is
 * refused: 503 with Retry-After, gRPC RESOURCE_EXHAUSTED. What it bounds: requests, not answers (those have their own
 * budget, services/serving/answer-budget.ts, whose rules of room this one shares: a second instance, never the same one).
 * The bindings use it; the task layer does not know of it.
 */
export interface RequestBudgetOptions {
  /** `server.max_request_bytes`: all connections together. */
  maxBytes: number
  /** `server.max_request_bytes_per_connection`. */
  maxBytesPerConnection: number
}

export class RequestBudget {
  readonly #budget: AnswerBudget
  #peak = 0
  #refused = 0

  constructor (opts: RequestBudgetOptions) {
    this.#budget = new AnswerBudget(opts)
  }

  /** Bytes of requests in flight, all connections together. */
  get bytes (): number {
    return this.#budget.bytes
  }

  /** The most bytes ever in flight at once. */
  get peak (): number {
    return this.#peak
  }

  /** Requests refused for want of room. */
  get refused (): number {
    return this.#refused
  }

  /** Requests waiting for room. */
  get waiting (): number {
    return this.#budget.waiting
  }

  /**
   * Takes `bytes` on `connection` at once when they fit; else gives null, counted as a refusal unless `refusal` is
   * false (a caller that waits next).
   */
  tryTake (connection: object, bytes: number, refusal = true): Taken | null {
    const taken = this.#budget.tryTake(connection, bytes)
    if (taken === null) {
      if (refusal) this.#refused++
    } else {
      this.#taken()
    }
    return taken
  }

  /**
   * Takes `bytes` on `connection`, waiting at most `waitMs` for room (and no longer than `signal`, the client gone);
   * null (a refusal, counted) when no room came.
   */
  async take (connection: object, bytes: number, waitMs: number, signal: AbortSignal): Promise<Taken | null> {
    // (Callers `tryTake` first: what comes here is most likely to wait.)
    // A timer of our own: an AbortSignal.timeout() only composed into AbortSignal.any() may be collected unfired.
    const expired = new AbortController()
    const timer = setTimeout(() => expired.abort(), waitMs)
    const taken = await this.#budget.take(connection, bytes, AbortSignal.any([signal, expired.signal])).catch(() => null)
    clearTimeout(timer)
    if (taken === null) this.#refused++
    else this.#taken()
    return taken
  }

  #taken (): void {
    if (this.#budget.bytes > this.#peak) this.#peak = this.#budget.bytes
  }
}
