import type { Logger } from './logger.js'

export interface Sweeper {
  /** Stops the timer, and waits for a round under way. */
  stop (): Promise<void>
}

/**
 * Deletes what has expired, a batch at a time (`deleteBatch` returns how many went), on a timer: each round goes on
 * until a batch deletes nothing. A round that fails is logged as `failure` and tried again at the next tick; a tick
 * that comes while a round is under way is skipped. The timer never keeps the process alive.
 */
export function startSweeper (deleteBatch: () => Promise<number>, opts: { intervalMs: number, log: Logger, failure: string }): Sweeper {
  let round: Promise<void> | undefined
  const timer = setInterval(() => {
    round ??= (async () => {
      try {
        let deleted: number
        do deleted = await deleteBatch(); while (deleted > 0)
      } catch (err) {
        opts.log.warn({ err }, opts.failure)
      } finally {
        round = undefined
      }
    })()
  }, opts.intervalMs).unref()
  return {
    async stop () {
      clearInterval(timer)
      await round
    }
  }
}

/** How often a store sweeps what outlived `ttl` seconds: every tenth of it, at least every second, at most every 5 minutes. */
export function sweepIntervalMs (ttlSeconds: number): number {
  return Math.min(300_000, Math.max(1000, ttlSeconds * 100))
}
