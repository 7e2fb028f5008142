import { TASK_STATES, type Task, type TaskState } from '../../schemas/task.js'

// The v0.3 JSON-RPC dialects (`protocol.dialect`): how a stored task is written to a v0.3 client. `default` keeps
// the stored state names; `a2a` writes the A2A v0.3.0 names (`working`, `input-required`, `auth-required`).

export type Dialect = 'default' | 'a2a'

const STATES: ReadonlySet<string> = new Set(TASK_STATES)

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
  if (STATES.has(name)) return name as TaskState
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
