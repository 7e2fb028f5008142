import type { Task, TaskState } from '../../schemas/task.js'

export type Dialect = 'default' | 'a2a'

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
 * input_required → in_progress; any non-terminal state → canceled. Two additions, documented in the README:
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

const A2A_NAMES: Readonly<Record<string, string>> = {
  in_progress: 'working',
  input_required: 'input-required',
  auth_required: 'auth-required'
}

const FROM_A2A: Readonly<Record<string, TaskState>> = {
  working: 'in_progress',
  'input-required': 'input_required',
  'auth-required': 'auth_required'
}

/** A state name in either spelling, as stored; undefined when it is no state at all. */
export function normalizeState (name: string): TaskState | undefined {
  if (Object.hasOwn(NEXT, name)) return name as TaskState
  return Object.hasOwn(FROM_A2A, name) ? FROM_A2A[name] : undefined
}

/** The wire name of a stored state in a dialect. */
export function stateName (state: TaskState, dialect: Dialect): string {
  return dialect === 'a2a' && Object.hasOwn(A2A_NAMES, state) ? A2A_NAMES[state] : state
}

/** A Task as a v0.3 client gets it: in the `a2a` dialect an unset `metadata` is left out. */
export type PresentedTask = Omit<Task, 'metadata'> & { metadata?: Task['metadata'] }

/**
 * The Task as a client sees it: state names in the dialect, history cut to the last `historyLength` entries. In the
 * `a2a` dialect a `metadata` of null is left out, as the v0.3.0 schema has it (an object when present); the default
 * dialect always carries it (CONTRACT.md §6). Stored tasks are never mutated, so the default dialect with the whole
 * history returns the object itself.
 */
export function presentTask (task: Task, dialect: Dialect, historyLength?: number): PresentedTask {
  const a2a = dialect === 'a2a'
  const renamed = a2a && Object.hasOwn(A2A_NAMES, task.status.state)
  const cut = historyLength !== undefined && historyLength < task.history.length
  const unset = a2a && task.metadata === null
  if (!renamed && !cut && !unset) return task
  const out: PresentedTask = { ...task }
  if (renamed) out.status = { ...task.status, state: stateName(task.status.state, dialect) as TaskState }
  if (cut) out.history = historyLength === 0 ? [] : task.history.slice(-historyLength)
  if (unset) delete out.metadata
  return out
}
