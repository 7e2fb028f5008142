// The caps on open SSE streams: this instance's `server.max_streams` and each principal's share (CONTRACT.md §7, §9).
import type { StreamSlots } from '../services/auth/stream-slots.js'
import { JsonRpcError, RpcCode } from '../services/kernel/errors.js'
import type { StreamClaim } from './sse-types.js'

const noop = (): void => {}

/** 429 with Retry-After: a stream refused by one of its caps. */
function tooManyStreams (data: string): JsonRpcError {
  return new JsonRpcError(RpcCode.rateLimited, 'Too many open streams', data, 429, { 'retry-after': '1' })
}

/** Counts the slots streams hold: this instance's, here, and the principal's, in `StreamSlots` (shared through Redis). */
export class StreamCaps {
  readonly #maxStreams: number
  readonly #slots: StreamSlots | undefined
  /** Slots of `server.max_streams` taken: open streams and those whose request is still being served. */
  #taken = 0

  constructor (maxStreams: number, slots: StreamSlots | undefined) {
    this.#maxStreams = maxStreams
    this.#slots = slots
  }

  /**
   * Takes one of this instance's `server.max_streams` slots, at once: the function that gives it back, or null when
   * all are taken. Taken before anything is awaited, so that concurrent requests cannot all pass one check and
   * open more streams than the cap.
   */
  take (): (() => void) | null {
    if (this.#taken >= this.#maxStreams) return null
    this.#taken++
    let held = true
    return () => {
      if (!held) return
      held = false
      this.#taken--
    }
  }

  /**
   * Takes one of the principal's stream slots: the function that gives it back (pass it to `open`), or null when
   * the principal has all its streams open. Throws StorageUnavailable when the shared count cannot be read.
   */
  async reserve (owner: string): Promise<(() => void) | null> {
    return this.#slots === undefined ? noop : await this.#slots.take(owner)
  }

  /**
   * What a stream holds while it is prepared and open, for every binding: one of `server.max_streams`, taken now
   * (before anything is awaited, so that concurrent requests cannot all pass one check), and with `own(owner)`
   * one of the principal's. Either refusal is the 429 of CONTRACT.md §7 and §9; `release` (for `open`) gives back
   * whatever was taken.
   */
  claim (): StreamClaim {
    const local = this.take()
    if (local === null) throw tooManyStreams('server.max_streams reached')
    let own: (() => void) | null = null
    return {
      own: async owner => {
        own = await this.reserve(owner)
        if (own === null) throw tooManyStreams('too many open streams for this principal')
      },
      release: () => {
        local()
        own?.()
      }
    }
  }
}
