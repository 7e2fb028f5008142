import type { Task } from '../../schemas/task.js'
import type { TaskEvent } from '../tasks/event-bus.js'
import type { StreamEncoder } from '../tasks/task-stream.js'
import { encodeEvent, encodeTask } from './codec-v10.js'
import { encodeEvent03, encodeTask03 } from './codec-v03-rest.js'
import { presentTask, stateName, type Dialect } from './codec-v03.js'

// What a stream of a task writes, in each wire form: its events and snapshots as JSON. The task layer's
// TaskEventStream orders and holds the results; the encoder it is given here writes them.

/**
 * How a stream's results are written: A2A v0.3 in one of its dialects, A2A v1.0 (`v1`: StreamResponse objects,
 * the Task first, then `statusUpdate` and `artifactUpdate`, no `final`), or the v0.3 proto's StreamResponse of the
 * `/v1` REST routes (`rest03`: the same with `final`).
 */
export type Wire = Dialect | 'v1' | 'rest03'

// One serialization per event and wire form, shared by every stream that follows the task. The bus hands one event
// object to all of a task's streams in one loop, so the last event serialized is all that needs remembering for
// events; snapshots (resubscribe, shutdown) are kept per task. (With 100 streams on one task, each event is
// serialized once instead of 100 times.)
let lastEvent: TaskEvent | undefined
let lastWire: Wire | undefined
let lastJson = ''
const snapshots: Record<Wire, WeakMap<object, string>> = {
  default: new WeakMap(), a2a: new WeakMap(), v1: new WeakMap(), rest03: new WeakMap()
}

/**
 * The JSON of an event's `result` in a wire form: the whole Task (default), an A2A update event (a2a) or a v1.0
 * StreamResponse (v1).
 */
export function eventResult (event: TaskEvent, wire: Wire): string {
  if (event === lastEvent && wire === lastWire) return lastJson
  let json: string
  const { task } = event
  if (wire === 'v1') {
    json = JSON.stringify(encodeEvent(event))
  } else if (wire === 'rest03') {
    json = JSON.stringify(encodeEvent03(event))
  } else if (wire === 'default') {
    json = JSON.stringify(presentTask(task, wire))
  } else if (event.type === 'status') {
    json = JSON.stringify({
      kind: 'status-update',
      taskId: task.id,
      contextId: task.contextId,
      status: { ...task.status, state: stateName(task.status.state, wire) },
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
  lastWire = wire
  lastJson = json
  return json
}

/** A snapshot as a stream writes it: the Task (v0.3) or the StreamResponse `{task}` (v1.0, v0.3 REST). */
function snapshotJson (task: Task, wire: Wire): string {
  if (wire === 'v1') return JSON.stringify({ task: encodeTask(task) })
  if (wire === 'rest03') return JSON.stringify({ task: encodeTask03(task) })
  return JSON.stringify(presentTask(task, wire))
}

/** The same, remembered per snapshot: every stream that resubscribes to a task starts from the same one. */
function snapshotResult (task: Task, wire: Wire): string {
  const cache = snapshots[wire]
  let json = cache.get(task)
  if (json === undefined) {
    json = snapshotJson(task, wire)
    cache.set(task, json)
  }
  return json
}

function encoderOf (wire: Wire): StreamEncoder {
  return {
    wholeTask: wire === 'default',
    event: event => eventResult(event, wire),
    snapshot: (task, shared) => shared ? snapshotResult(task, wire) : snapshotJson(task, wire)
  }
}

const ENCODERS: Readonly<Record<Wire, StreamEncoder>> = {
  default: encoderOf('default'), a2a: encoderOf('a2a'), v1: encoderOf('v1'), rest03: encoderOf('rest03')
}

/** The encoder of a wire form's streams (one per form, shared). */
export function streamEncoder (wire: Wire): StreamEncoder {
  return ENCODERS[wire]
}
