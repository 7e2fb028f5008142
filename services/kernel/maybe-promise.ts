/**
 * A value, or a promise of it: what a step returns when it answers at once where it can (a store in this process,
 * an executor that does not wait) and through a promise where it cannot.
 */
export type MaybePromise<T> = T | Promise<T>

/** True for a promise, or anything else with a `then` method (what `await` would wait on). */
export function isThenable (value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
