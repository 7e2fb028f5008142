import type { Task } from '../../schemas/task.js'

/*
 * About how many bytes a stored task holds on the heap, for `tasks.max_bytes` (CONTRACT.md §2): a string counts its
 * length (V8 keeps ASCII text one byte a character) and every object, array and slot a fixed cost. It is an estimate
 * that grows with what clients and agents put in a task, which is what the bound is for.
 * Stored tasks are immutable snapshots that share what did not change, so a write is measured by what it changed
 * (`taskBytesChange`): a history or an artifact's parts that grew by appending cost what was appended, and the rest
 * is compared by identity, with no walk and no cache.
 */

const STRING = 16
const SLOT = 8
const OBJECT = 32

/** The estimate for any JSON-like value. */
export function valueBytes (value: unknown): number {
  if (typeof value === 'string') return STRING + value.length
  if (typeof value !== 'object' || value === null) return SLOT
  let bytes = OBJECT
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) bytes += SLOT + valueBytes(value[i])
  } else {
    for (const key in value) bytes += SLOT + key.length + valueBytes((value as Record<string, unknown>)[key])
  }
  return bytes
}

/** The items of `list` past the first `from`, measured as a list's slots. */
function tailBytes (list: readonly unknown[], from: number): number {
  let bytes = 0
  for (let i = from; i < list.length; i++) bytes += SLOT + valueBytes(list[i])
  return bytes
}

/** `list` is `before` with items appended (the same objects first). */
function extends_ (list: readonly unknown[], before: readonly unknown[]): boolean {
  return list.length >= before.length && (before.length === 0 || list[before.length - 1] === before[before.length - 1])
}

/** How much a list grew or shrank from `before`: only what was appended is measured when it grew by appending. */
function listChange (list: readonly unknown[], before: readonly unknown[]): number {
  if (list === before) return 0
  if (extends_(list, before)) return tailBytes(list, before.length)
  return valueBytes(list) - valueBytes(before)
}

type StoredArtifact = Task['artifacts'][number]

/** How much an artifact changed from the one at its index before (appended parts cost what they add). */
function artifactChange (artifact: StoredArtifact, before: StoredArtifact | undefined): number {
  if (artifact === before) return 0
  if (before === undefined) return SLOT + valueBytes(artifact)
  if (before.artifactId === artifact.artifactId && extends_(artifact.parts, before.parts) && artifact.name === before.name &&
    artifact.metadata === before.metadata && artifact.description === before.description) {
    return tailBytes(artifact.parts, before.parts.length)
  }
  return valueBytes(artifact) - valueBytes(before)
}

/** The estimate for a whole task (a new one). */
export function taskBytes (task: Task): number {
  return OBJECT + 2 * STRING + task.id.length + task.contextId.length + valueBytes(task.status) +
    valueBytes(task.history) + valueBytes(task.artifacts) + (task.metadata == null ? 0 : valueBytes(task.metadata))
}

/** How much the estimate of `task` differs from that of `previous`, the snapshot it was made from. */
export function taskBytesChange (task: Task, previous: Task): number {
  let change = 0
  if (task.status !== previous.status) change += valueBytes(task.status) - valueBytes(previous.status)
  change += listChange(task.history, previous.history)
  if (task.artifacts !== previous.artifacts) {
    for (let i = 0; i < task.artifacts.length; i++) change += artifactChange(task.artifacts[i], previous.artifacts[i])
    for (let i = task.artifacts.length; i < previous.artifacts.length; i++) change -= SLOT + valueBytes(previous.artifacts[i])
  }
  if (task.metadata !== previous.metadata) {
    change += (task.metadata == null ? 0 : valueBytes(task.metadata)) - (previous.metadata == null ? 0 : valueBytes(previous.metadata))
  }
  return change
}
