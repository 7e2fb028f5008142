import type { Task } from '../../schemas/task.js'

/*
 * About how many bytes a stored task holds on the heap, for `tasks.max_bytes` (CONTRACT.md §2): a string counts its
 * length (V8 keeps ASCII text one byte a character) and every object, array and slot a fixed cost. It is an estimate
 * that grows with what clients and agents put in a task, which is what the bound is for; the fixed costs of a small
 * task are about right.
 * Stored tasks are immutable snapshots that share what did not change, so the size of a message, an artifact or a
 * history list is computed once and cached by the object; a write that appends to a history or to an artifact's parts
 * costs what it appended.
 */

const STRING = 16
const SLOT = 8
const OBJECT = 32

const sizes = new WeakMap<object, number>()

/** The estimate for any JSON-like value. */
export function valueBytes (value: unknown): number {
  if (typeof value === 'string') return STRING + value.length
  if (typeof value !== 'object' || value === null) return SLOT
  let bytes = OBJECT
  if (Array.isArray(value)) {
    for (const item of value) bytes += SLOT + valueBytes(item)
  } else {
    for (const key of Object.keys(value)) bytes += SLOT + key.length + valueBytes((value as Record<string, unknown>)[key])
  }
  return bytes
}

function cached (value: object): number {
  let bytes = sizes.get(value)
  if (bytes === undefined) {
    bytes = valueBytes(value)
    sizes.set(value, bytes)
  }
  return bytes
}

/** `list` is `before` with items appended (the same objects first): only the new ones are measured. */
function extends_ (list: readonly unknown[], before: readonly unknown[] | undefined): before is readonly unknown[] {
  return before !== undefined && before.length > 0 && list.length >= before.length && list[before.length - 1] === before[before.length - 1]
}

/** A list of objects (a history, some parts): the sum of its items, cached by the list. */
function listBytes (list: readonly object[], before?: readonly object[]): number {
  let bytes = sizes.get(list)
  if (bytes !== undefined) return bytes
  let from = 0
  if (extends_(list, before)) {
    bytes = listBytes(before)
    from = before.length
  } else {
    bytes = OBJECT
  }
  for (let i = from; i < list.length; i++) bytes += SLOT + cached(list[i])
  sizes.set(list, bytes)
  return bytes
}

type StoredArtifact = Task['artifacts'][number]

/** An artifact; one made by appending parts to `before` (the same artifact in the previous snapshot) costs the parts. */
function artifactBytes (artifact: StoredArtifact, before: StoredArtifact | undefined): number {
  let bytes = sizes.get(artifact)
  if (bytes !== undefined) return bytes
  if (before !== undefined && before.artifactId === artifact.artifactId && extends_(artifact.parts, before.parts)) {
    bytes = artifactBytes(before, undefined) - listBytes(before.parts) + listBytes(artifact.parts, before.parts)
  } else {
    bytes = cached(artifact)
  }
  sizes.set(artifact, bytes)
  return bytes
}

/** The estimate for a task; `previous`, the snapshot it was made from, lets the unchanged parts be reused. */
export function taskBytes (task: Task, previous?: Task): number {
  let bytes = OBJECT + 2 * STRING + task.id.length + task.contextId.length + valueBytes(task.status)
  bytes += listBytes(task.history, previous?.history)
  bytes += OBJECT
  for (let i = 0; i < task.artifacts.length; i++) bytes += SLOT + artifactBytes(task.artifacts[i], previous?.artifacts[i])
  if (task.metadata != null) bytes += cached(task.metadata)
  return bytes
}
