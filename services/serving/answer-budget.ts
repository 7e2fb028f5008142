/**
 * Bytes of answers written and not yet taken by their clients, bounded for the whole server and per connection,
 * over every binding (HTTP answers and SSE streams, gRPC answers and streams). An answer is serialized, then takes
 * its size here before it is written, and gives it back once the client has taken it (its response finished, its
 * gRPC message sent) or its connection is gone. What does not fit waits, holding only the result it will serialize
 * again, never the serialized bytes: clients that do not read hold at most their connection's share each, and all
 * of them together at most the server's (docs/operations.md, "Reliability").
 *
 * A connection with nothing in flight may always take one answer, however large, when the server has room for it
 * or nothing in flight at all: an idle server answers anything it stores. Room goes to waiters in the order they
 * came; one whose connection has no room does not hold up the others.
 *
 * How a binding uses it:
 * - a whole answer: `tryTake`, else `take` (waits; give it the client's abort signal), write, and `release()` once
 *   the answer has left (HTTP: the response's `close`; gRPC: the message's write callback);
 * - a stream: `tryTake` for each event; when it gives null the stream holds its events (coalescing them) and waits
 *   with `take(connection, bytes)` for the size of the event it could not write. The grant is a reservation: the
 *   stream's next write `exchange`s it for that write's own size, whatever the room, so a granted stream always
 *   moves on. What must go out regardless (the last snapshot at shutdown) is taken with `takeNow`.
 */

export interface AnswerBudgetOptions {
  /** `server.max_answer_bytes`: all connections together. */
  maxBytes: number
  /** `server.max_answer_bytes_per_connection`. */
  maxBytesPerConnection: number
}

/** Bytes taken for one answer or event. */
export interface Taken {
  readonly bytes: number
  /** Gives the bytes back; idempotent. */
  release (): void
}

interface Waiter {
  readonly connection: object
  readonly bytes: number
  readonly grant: (taken: Taken) => void
}

export class AnswerBudget {
  readonly #max: number
  readonly #perConnection: number
  /** Bytes in flight per connection (an HTTP/1 socket, an HTTP/2 session); a connection at 0 is not kept. */
  readonly #connections = new Map<object, number>()
  readonly #waiters: Waiter[] = []
  /** A waiter is held up by the server's room (not only its connection's): nobody may pass it. */
  #queued = false
  #bytes = 0

  constructor (opts: AnswerBudgetOptions) {
    this.#max = opts.maxBytes
    this.#perConnection = opts.maxBytesPerConnection
  }

  /** Bytes in flight, all connections together. */
  get bytes (): number {
    return this.#bytes
  }

  /** Answers waiting for room. */
  get waiting (): number {
    return this.#waiters.length
  }

  /** Bytes in flight on one connection. */
  held (connection: object): number {
    return this.#connections.get(connection) ?? 0
  }

  /** Takes `bytes` on `connection` at once, when they fit and no waiter is owed the room first; else null. */
  tryTake (connection: object, bytes: number): Taken | null {
    if (this.#queued || !this.#fits(connection, bytes)) return null
    return this.#take(connection, bytes)
  }

  /**
   * Takes `bytes` on `connection` once they fit. `signal` (the client gone, a deadline) gives up the wait: the
   * promise then rejects with the signal's reason.
   */
  async take (connection: object, bytes: number, signal?: AbortSignal): Promise<Taken> {
    const now = this.tryTake(connection, bytes)
    if (now !== null) return now
    signal?.throwIfAborted()
    return await new Promise<Taken>((resolve, reject) => {
      const abort = (): void => {
        const at = this.#waiters.indexOf(waiter)
        if (at >= 0) this.#waiters.splice(at, 1)
        reject(signal?.reason)
        // The one that gave up may have held up others behind it.
        this.#pump()
      }
      const waiter: Waiter = {
        connection,
        bytes,
        grant: taken => {
          signal?.removeEventListener('abort', abort)
          resolve(taken)
        }
      }
      signal?.addEventListener('abort', abort, { once: true })
      this.#waiters.push(waiter)
      this.#pump()
    })
  }

  /**
   * Gives `taken` back and takes `bytes` on the same connection in its place, whatever the room: a stream's
   * reservation spent on the event it writes (which coalescing may have grown or shrunk).
   */
  exchange (taken: Taken, connection: object, bytes: number): Taken {
    const next = this.#take(connection, bytes)
    taken.release()
    return next
  }

  /** Takes `bytes` whatever the room: what must be written regardless (a stream's last snapshot at shutdown). */
  takeNow (connection: object, bytes: number): Taken {
    return this.#take(connection, bytes)
  }

  #fits (connection: object, bytes: number): boolean {
    const own = this.#connections.get(connection) ?? 0
    if (own > 0 && own + bytes > this.#perConnection) return false
    return this.#bytes === 0 || this.#bytes + bytes <= this.#max
  }

  #take (connection: object, bytes: number): Taken {
    this.#bytes += bytes
    this.#connections.set(connection, (this.#connections.get(connection) ?? 0) + bytes)
    let held = true
    return {
      bytes,
      release: () => {
        if (!held) return
        held = false
        this.#bytes -= bytes
        const left = (this.#connections.get(connection) as number) - bytes
        if (left === 0) this.#connections.delete(connection)
        else this.#connections.set(connection, left)
        if (this.#waiters.length > 0) this.#pump()
      }
    }
  }

  /** Grants room to waiters in order; one held up by its own connection lets those behind it by. */
  #pump (): void {
    this.#queued = false
    for (let i = 0; i < this.#waiters.length;) {
      const waiter = this.#waiters[i]
      const own = this.#connections.get(waiter.connection) ?? 0
      if (own > 0 && own + waiter.bytes > this.#perConnection) {
        i++
        continue
      }
      if (this.#bytes > 0 && this.#bytes + waiter.bytes > this.#max) {
        this.#queued = true
        return
      }
      this.#waiters.splice(i, 1)
      waiter.grant(this.#take(waiter.connection, waiter.bytes))
    }
  }
}

/** What a watch of a connection's untaken bytes last saw: how many, and since when they have not moved. */
export interface Stall {
  last: number
  since: number
}

/**
 * Whether `bytes` untaken have stayed the same, and above 0, for `timeoutMs` (the `server.write_timeout` check of
 * every binding); records what it saw in `stall` for the next look.
 */
export function stalledFor (stall: Stall, bytes: number, now: number, timeoutMs: number): boolean {
  if (bytes === 0 || bytes !== stall.last) {
    stall.last = bytes
    stall.since = now
    return false
  }
  return now - stall.since >= timeoutMs
}

/** What closes once, with a `close` event: a response, an HTTP/2 stream. */
interface Closing {
  once (event: 'close', listener: () => void): unknown
  off (event: 'close', listener: () => void): unknown
}

/**
 * A signal for a wait (for room here, or for a turn) that ends when its client goes: it aborts when `target`
 * closes, or at once when `closed` says it has already (its `close` is past, and a listener added now would never
 * run). `stop` removes the listener once the wait is over.
 */
export function closeSignal (target: Closing, closed: boolean): { signal: AbortSignal, stop: () => void } {
  const controller = new AbortController()
  if (closed) {
    controller.abort()
    return { signal: controller.signal, stop: () => {} }
  }
  const abort = (): void => controller.abort()
  target.once('close', abort)
  return { signal: controller.signal, stop: () => { target.off('close', abort) } }
}
