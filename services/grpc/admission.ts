// How many unary calls of one HTTP/2 connection may be prepared at once (run, their answer read from the store and
// encoded) before their answers have taken their bytes from the answer budget. An answer that finds no room waits
// holding its value: without this bound one connection's 100 concurrent streams would each hold a large task read
// from the store (on Redis, a copy each: 100 GetTask of a 4 MB task held ~400 MB waiting for a client that never
// reads). Calls past the bound wait before they run, holding only their request.

interface Queue {
  running: number
  waiting: Array<() => void>
}

export class ConnectionAdmission {
  readonly #limit: number
  readonly #queues = new WeakMap<object, Queue>()

  constructor (limit: number) {
    this.#limit = limit
  }

  /** Admits a call of `connection` at once when it has fewer than the limit admitted; else null (nothing admitted). */
  tryEnter (connection: object): (() => void) | null {
    const queue = this.#queue(connection)
    return queue.running < this.#limit ? this.#admit(queue) : null
  }

  /**
   * Resolves once `connection` has fewer than the limit admitted, with the function that gives the place back (it
   * counts once). Resolves with null if `signal` fires first (the client left): nothing was admitted.
   */
  async enter (connection: object, signal: AbortSignal): Promise<(() => void) | null> {
    const admitted = this.#queue(connection)
    if (admitted.running < this.#limit) return this.#admit(admitted)
    if (signal.aborted) return null
    return await new Promise(resolve => {
      const turn = (): void => {
        signal.removeEventListener('abort', abort)
        resolve(this.#admit(admitted))
      }
      const abort = (): void => {
        admitted.waiting.splice(admitted.waiting.indexOf(turn), 1)
        resolve(null)
      }
      signal.addEventListener('abort', abort, { once: true })
      admitted.waiting.push(turn)
    })
  }

  #queue (connection: object): Queue {
    let queue = this.#queues.get(connection)
    if (queue === undefined) {
      queue = { running: 0, waiting: [] }
      this.#queues.set(connection, queue)
    }
    return queue
  }

  #admit (queue: Queue): () => void {
    queue.running++
    let done = false
    return () => {
      if (done) return
      done = true
      queue.running--
      queue.waiting.shift()?.()
    }
  }
}
