import type { ExecutorEvent } from '../agent/executor.js'
import type { MaybePromise } from '../kernel/maybe-promise.js'

/**
 * Runs `apply` on each event of `events`, in order, as `for await` would, stopping when it answers true. While an
 * apply is in flight (it answered a promise: a write to a store across the network), the events the iterable yields
 * meanwhile are taken, up to `max` of them; then `merge` may fold each of them into the event before it (undefined:
 * they stay apart), so that one apply writes a run of them. An iterable slower than the applies is never read ahead
 * of them, and nothing is read past an event that `readsPast` refuses (one that may end the run: the iterable is not
 * run beyond it until it is applied). Stopping (or a throwing apply) returns the iterator, as `for await` does,
 * without waiting for it when it is still working on an event read ahead.
 */
export async function applyAhead<E> (
  events: AsyncIterable<E>,
  apply: (event: E) => MaybePromise<boolean>,
  merge: (into: E, next: E) => E | undefined,
  max: number,
  readsPast: (event: E) => boolean = () => true
): Promise<void> {
  const it = events[Symbol.asyncIterator]()
  const ahead: Array<IteratorResult<E> | { error: unknown }> = []
  let pulling: Promise<void> | undefined
  /** The iterable has ended or thrown: nothing more to read, nothing to return. */
  let ended = false
  const pull = (): Promise<void> => {
    pulling ??= it.next().then(result => {
      ahead.push(result)
      if (result.done === true) ended = true
    }, (error: unknown) => {
      ahead.push({ error })
      ended = true
    }).finally(() => { pulling = undefined })
    return pulling
  }
  try {
    for (;;) {
      if (ahead.length === 0) await pull()
      const item = ahead.shift() as IteratorResult<E> | { error: unknown }
      if ('error' in item) throw item.error
      if (item.done === true) return
      let event = item.value
      for (let next = ahead[0]; next !== undefined && !('error' in next) && next.done !== true; next = ahead[0]) {
        const merged = merge(event, next.value)
        if (merged === undefined) break
        ahead.shift()
        event = merged
      }
      const applied = apply(event)
      let stop: boolean
      if (applied instanceof Promise) {
        let settled = false
        const done = applied.finally(() => { settled = true })
        // (`settled` and `ended` change while the race is awaited.)
        for (;;) {
          if (settled || ended || ahead.length >= max || !readsPast(event)) break
          await Promise.race([done, pull()])
        }
        stop = await done
      } else {
        stop = applied
      }
      if (stop) return
    }
  } finally {
    if (!ended) {
      const closing = it.return?.()
      // An iterator still working on an event read ahead would only answer once that is done: it is left to it.
      if (pulling === undefined) await closing
      else closing?.catch(() => {})
    }
  }
}

type ArtifactEvent = Extract<ExecutorEvent, { kind: 'artifact' }>

/**
 * The artifact `event` appends to: for a string, the turn's result artifact (`resultArtifactId`) once it has one; for
 * an artifact event with `append`, its artifact; else undefined.
 */
function appendsTo (event: ExecutorEvent, resultArtifactId: string | undefined): string | undefined {
  if (typeof event === 'string') return resultArtifactId
  return event.kind === 'artifact' && event.append === true ? event.artifactId : undefined
}

/**
 * An executor's `into` and `next` as one event when both append to one artifact: `into` with the parts of both, and
 * `next`'s `lastChunk`. Applied, it leaves the task as the two would (a string appends one text part to the turn's
 * result artifact). Undefined when they do not merge.
 */
export function mergedChunks (into: ExecutorEvent, next: ExecutorEvent, resultArtifactId: string | undefined): ExecutorEvent | undefined {
  const artifactId = appendsTo(into, resultArtifactId)
  if (artifactId === undefined || appendsTo(next, resultArtifactId) !== artifactId) return undefined
  const first = asAppend(into, artifactId)
  const second = asAppend(next, artifactId)
  const merged = { ...first, parts: first.parts.concat(second.parts) }
  if (second.lastChunk === undefined) delete merged.lastChunk
  else merged.lastChunk = second.lastChunk
  return merged
}

function asAppend (event: ExecutorEvent, artifactId: string): ArtifactEvent {
  return typeof event === 'string'
    ? { kind: 'artifact', artifactId, append: true, parts: [{ kind: 'text', text: event }] }
    : event as ArtifactEvent
}
