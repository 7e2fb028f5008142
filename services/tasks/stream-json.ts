import type { Task } from '../../schemas/task.js'
import { encodeEvent, encodeTask } from '../a2a/codec-v10.js'
import { encodeEvent03, encodeTask03 } from '../a2a/codec-v03-rest.js'
import type { TaskEvent } from './event-bus.js'
import { presentTask, stateName, type Dialect } from './states.js'

// What a stream of a task writes, in each wire form: its events and snapshots as JSON (services/tasks/task-stream.ts
// writes them). The wire part of the streams, apart from their ordering and holding: the part that is to move to the
// protocol layer (docs/architecture.md, step 1).

/**
 * How a stream's results are written: A2A v0.3 in one of its dialects, A2A v1.0 (`v1`: StreamResponse objects,
 * the Task first, then `statusUpdate` and `artifactUpdate`, no `final`; CONTRACT.md §11.3), or the v0.3 proto's
 * StreamResponse of the `/v1` REST routes (`rest03`: the same with `final`, CONTRACT.md §12).
 */
export type Wire = Dialect | 'v1' | 'rest03'

/** The metadata key that marks a snapshot sent in place of events no longer kept. */
export const RESYNC_KEY = 'fastify-a2a.resync'

/** `task` marked as a resync: a snapshot sent in place of events the stream no longer has. */
export function resynced (task: Task): Task {
  return { ...task, metadata: { ...task.metadata, [RESYNC_KEY]: true } }
}

// One serialization per event and dialect, shared by every stream that follows the task (CONTRACT.md §7). The bus
// hands one event object to all of a task's streams in one loop, so the last event serialized is all that needs
// remembering for events; snapshots (resubscribe, shutdown) are kept per task.
let lastEvent: TaskEvent | undefined
let lastDialect: Wire | undefined
let lastJson = ''
const snapshots: Record<Wire, WeakMap<object, string>> = {
  default: new WeakMap(), a2a: new WeakMap(), v1: new WeakMap(), rest03: new WeakMap()
}

/**
 * The JSON of an event's `result` in a wire form: the whole Task (default), an A2A update event (a2a) or a v1.0
 * StreamResponse (v1).
 */
export function eventResult (event: TaskEvent, dialect: Wire): string {
  if (event === lastEvent && dialect === lastDialect) return lastJson
  let json: string
  const { task } = event
  if (dialect === 'v1') {
    json = JSON.stringify(encodeEvent(event))
  } else if (dialect === 'rest03') {
    json = JSON.stringify(encodeEvent03(event))
  } else if (dialect === 'default') {
    json = JSON.stringify(presentTask(task, dialect))
  } else if (event.type === 'status') {
    json = JSON.stringify({
      kind: 'status-update',
      taskId: task.id,
      contextId: task.contextId,
      status: { ...task.status, state: stateName(task.status.state, dialect) },
      final: event.final
    })
  } else {
    json = JSON.stringify({
      kind: 'artifact-update',
      taskId: task.id,
      contextId: task.contextId,
      artifact: event.artifact,
      append: event.append,
      lastChunk: event.lastChunk
    })
  }
  lastEvent = event
  lastDialect = dialect
  lastJson = json
  return json
}

/** A snapshot as a stream writes it: the Task (v0.3) or the StreamResponse `{task}` (v1.0, v0.3 REST). */
export function snapshotJson (task: Task, dialect: Wire): string {
  if (dialect === 'v1') return JSON.stringify({ task: encodeTask(task) })
  if (dialect === 'rest03') return JSON.stringify({ task: encodeTask03(task) })
  return JSON.stringify(presentTask(task, dialect))
}

/** The same, remembered per snapshot: every stream that resubscribes to a task starts from the same one. */
export function snapshotResult (task: Task, dialect: Wire): string {
  const cache = snapshots[dialect]
  let json = cache.get(task)
  if (json === undefined) {
    json = snapshotJson(task, dialect)
    cache.set(task, json)
  }
  return json
}
