// The problems of an invalid configuration, for the config tests: a test asserts on them, and fails when the
// configuration was valid after all or the call threw something else.
import { isConfigError } from '../../../services/config/load.js'

function problemsIn (err: unknown): string[] {
  if (isConfigError(err)) return err.problems
  throw err
}

const NOT_THROWN = 'expected an invalid configuration error'

/** The problems of the configuration error `fn` throws. */
export function problemsOf (fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    return problemsIn(err)
  }
  throw new Error(NOT_THROWN)
}

/** The problems of the configuration error `promise` rejects with. */
export async function problemsOfLoad (promise: Promise<unknown>): Promise<string[]> {
  try {
    await promise
  } catch (err) {
    return problemsIn(err)
  }
  throw new Error(NOT_THROWN)
}
