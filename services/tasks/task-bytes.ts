import type { Task } from '../../schemas/task.js'
import type { KeptBody } from './store.js'

/*
 * About how many bytes a stored task holds on the V8 heap, for `tasks.max_bytes` (CONTRACT.md §2), in one pass over
 * what is measured. Measured with `process.memoryUsage().heapUsed` around JSON.parse of 200,000 values, after gc
 * (Node 20, 2026-11-27; test/services/tasks/task-bytes.test.ts checks it again):
 * - a string: 1 byte a character when every character is Latin-1 (<= 0xFF), 2 bytes when any is not (V8 keeps a
 *   string one-byte or two-byte as a whole; 8M '漢' held 16 MB), and a header (short strings 24 bytes, with their slot 32);
 * - an object key: 63 to 87 bytes each in an object of many keys with names of their own (`{"k0":0,…}`: a dictionary
 *   entry, the name, the value), 190 for one-key objects whose names all differ (each a hidden class), but only 8 to
 *   16 when many small objects share their names (one hidden class for all);
 * - an object or an empty array 40 bytes with its slot; a number 8 (a double in an array 7, a small integer 8).
 * The estimate counts a key KEY bytes plus its name, so it stays within 0.5x to 2x of the heap for text (Latin-1 or
 * not) and for objects of many keys (the attack on it), and overcounts many small objects that share their names
 * (50,000 text parts of 10 characters: 2.75x): never far under what the heap holds, which is what the bound is for. It grows
 * with what clients and agents put in a task.
 * Stored tasks are immutable snapshots that share what did not change, so a write is measured by what it changed
 * (`taskBytesChange`): a history or an artifact's parts that grew by appending cost what was appended, and the rest
 * is compared by identity, with no walk and no cache.
 */

const STRING = 16
const SLOT = 8
const OBJECT = 32
/** An object key beyond its name and its value's slot: see above (63 to 87 bytes measured for a key of 6 characters). */
const KEY = 56
/** A character that is not Latin-1: V8 then keeps the whole string two bytes a character. */
const TWO_BYTE = /[\u0100-\uffff]/

/** A string's bytes: its length, twice that when V8 keeps it two-byte. The test runs natively, stopping at the first such character. */
function textBytes (text: string): number {
  return TWO_BYTE.test(text) ? 2 * text.length : text.length
}

/** The estimate for any JSON-like value. */
export function valueBytes (value: unknown): number {
  if (typeof value === 'string') return STRING + textBytes(value)
  if (typeof value !== 'object' || value === null) return SLOT
  let bytes = OBJECT
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) bytes += SLOT + valueBytes(value[i])
  } else {
    for (const key in value) bytes += KEY + SLOT + textBytes(key) + valueBytes((value as Record<string, unknown>)[key])
  }
  return bytes
}

/**
 * The object keys and array items of a value, all its objects and arrays together (`tasks.max_keys`), counted up to
 * `max`: past it the count stops, at `max + 1`.
 */
export function keyCount (value: unknown, max: number): number {
  let count = 0
  /** False once past `max`. */
  const visit = (v: unknown): boolean => {
    if (typeof v !== 'object' || v === null) return true
    if (Array.isArray(v)) {
      count += v.length
      if (count > max) return false
      for (let i = 0; i < v.length; i++) if (!visit(v[i])) return false
    } else {
      for (const key in v) {
        if (++count > max || !visit((v as Record<string, unknown>)[key])) return false
      }
    }
    return true
  }
  return visit(value) ? count : max + 1
}

/**
 * The estimate for a kept stream event (`server.stream_replay`): its four fields and its body. The body may be what
 * the task holds too (its last status, an artifact it still has), counted again: an artifact sent whole again and
 * again leaves each earlier copy to the kept events only, and those are what this bounds.
 */
export function keptEventBytes (event: KeptBody): number {
  return OBJECT + 4 * (KEY + SLOT) + (event.type === 'status' ? valueBytes(event.status) : valueBytes(event.artifact))
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
  return OBJECT + 2 * STRING + textBytes(task.id) + textBytes(task.contextId) + valueBytes(task.status) +
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
