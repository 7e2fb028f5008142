/**
 * Answers made during one turn of the event loop, sent together once that turn's I/O is handled (`setImmediate`)
 * instead of each as soon as it is made.
 *
 * Why: every response written to a client that is asleep in `epoll_wait` makes the kernel wake it, and on one host
 * (a sidecar, a local gateway, a load test) that wake-up is paid inside our `writev`, an interrupt to another core
 * each time. Requests that arrive together are read in one turn; written back to back at its end, their answers
 * find the client awake after the first. Each answer waits at most for the rest of its turn's requests to be
 * handled, a few hundred microseconds under load; an answer alone in its turn goes out at once after it.
 * Order is kept: answers leave in the order they were made.
 */
export class Outbox<T> {
  readonly #send: (item: T) => void
  readonly #fail: (item: T, err: unknown) => void
  #items: T[] = []

  /**
   * `send` writes one answer. If it throws, `fail` gets the item and the error, and the rest are still sent: one
   * answer's failure is its own request's error, never its neighbours'.
   */
  constructor (send: (item: T) => void, fail: (item: T, err: unknown) => void) {
    this.#send = send
    this.#fail = fail
  }

  /** Queues an answer; the first of a turn schedules the flush. */
  push (item: T): void {
    if (this.#items.push(item) === 1) setImmediate(this.#flush)
  }

  readonly #flush = (): void => {
    const items = this.#items
    this.#items = []
    for (const item of items) {
      try {
        this.#send(item)
      } catch (err) {
        this.#fail(item, err)
      }
    }
  }
}
