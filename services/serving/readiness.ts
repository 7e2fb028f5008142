// Readiness (CONTRACT.md §3): every backend in use answers, each within a bound. `/ready` and the gRPC health
// service ask the same checks the same way.

/** Readiness checks by name: each throws when its backend does not answer. */
export type ReadinessChecks = Record<string, () => Promise<void>>

/** How long a check may take before its backend counts as unavailable. */
export const READY_TIMEOUT_MS = 2_000

export interface Readiness {
  ok: boolean
  checks: Record<string, 'ok' | 'unavailable'>
}

/** Runs every check at once, each within READY_TIMEOUT_MS; `failed` hears of each one that fails. */
export async function readiness (checks: ReadinessChecks, failed: (name: string, err: unknown) => void = () => {}): Promise<Readiness> {
  const out: Readiness = { ok: true, checks: {} }
  await Promise.all(Object.entries(checks).map(async ([name, check]) => {
    try {
      await withTimeout(check(), READY_TIMEOUT_MS)
      out.checks[name] = 'ok'
    } catch (err) {
      out.ok = false
      out.checks[name] = 'unavailable'
      failed(name, err)
    }
  }))
  return out
}

function withTimeout (promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<void>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}
