import type { TaskState } from '../../schemas/task.js'

let stampedMs = Number.NaN
let stamp = ''

/**
 * `new Date(ms).toISOString()`, remembered for the last millisecond asked: a busy server stamps several changes of
 * many tasks within the same millisecond, and formatting a date is the dearest part of a status change.
 */
export function isoTime (ms: number): string {
  if (ms !== stampedMs) {
    stamp = new Date(ms).toISOString()
    stampedMs = ms
  }
  return stamp
}

const TERMINAL: ReadonlySet<string> = new Set(['completed', 'canceled', 'failed', 'rejected'])

/**
 * CONTRACT.md §6: submitted → in_progress → (completed | failed | canceled | input_required | auth_required);
 * input_required → in_progress; any non-terminal state → canceled. Two additions, documented in docs/protocol.md:
 * in_progress → rejected (an agent declines the work) and auth_required → in_progress (the twin of input_required).
 */
const NEXT: Readonly<Record<TaskState, readonly TaskState[]>> = {
  submitted: ['in_progress', 'canceled'],
  in_progress: ['completed', 'failed', 'canceled', 'input_required', 'auth_required', 'rejected'],
  input_required: ['in_progress', 'canceled'],
  auth_required: ['in_progress', 'canceled'],
  completed: [],
  canceled: [],
  failed: [],
  rejected: []
}

export function isTerminal (state: string): boolean {
  return TERMINAL.has(state)
}

/** Waiting for the client: `input_required` or `auth_required` (CONTRACT.md §2, `tasks.interrupted_ttl`). */
export function isInterrupted (state: string): boolean {
  return state === 'input_required' || state === 'auth_required'
}

/** Terminal, or waiting for the client: where a blocking `message/send` returns and a stream ends. */
export function isSettled (state: string): boolean {
  return TERMINAL.has(state) || isInterrupted(state)
}

export function canTransition (from: TaskState, to: TaskState): boolean {
  return NEXT[from].includes(to)
}
