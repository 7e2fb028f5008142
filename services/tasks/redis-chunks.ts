import type { Part } from '../../schemas/task.js'
import type { TaskEvent } from './event-bus.js'
import type { StoredTask } from './store.js'

/*
 * Streamed artifact chunks on Redis (issue 39 row 7). A write whose event appends parts to an artifact (A2A
 * `artifact-update` with `append: true`, one per LLM token) changes nothing else of the task: RedisTaskStore appends
 * the chunk to a string beside the task's record (`<keyPrefix>c:<taskId>`) instead of rewriting the record, so a
 * chunk costs Redis about its own size. A read folds the chunks into the record. Any other write stores the whole
 * record again and drops the chunks, and so does a chunk that would make them outweigh the record (and
 * FOLD_MIN_BYTES): the record is rewritten each time the task has about doubled, so what a streamed answer sends to
 * Redis stays within a few times its own size. Measured (test/redis-chunks.test.ts): 2,000 chunks of 1 KB used to send
 * 3.9 GB to Redis; 4,000 now send 32 MB, 8 times their size (each chunk goes three times, to the chunks, the replay
 * Stream and the other instances; the record about twice in folds and once at the end, with its status event).
 */

/** Below this much, chunks are folded only when the task is written whole for another reason (a change of state). */
export const FOLD_MIN_BYTES = 64 * 1024

/** One appended chunk as kept: the version and update time of its write, the artifact, the parts appended. */
interface Chunk {
  v: number
  u: number
  a: string
  p: Part[]
}

/** The chunk `event` appends, as it is appended to the task's chunks (each after a comma); null for any other event. */
export function chunkEntry (next: StoredTask, event: TaskEvent | undefined): string | null {
  if (event === undefined || event.type !== 'artifact' || !event.append) return null
  return `,{"v":${next.version},"u":${next.updatedAt},"a":${JSON.stringify(event.artifact.artifactId)},"p":${JSON.stringify(event.artifact.parts)}}`
}

/**
 * The record as stored (`json`) with its chunks (`chunks`, as appended; null or '' for none) folded in: the record
 * the writes made, key for key in the same order.
 */
export function assembled (json: string, chunks: string | null): StoredTask {
  const record = JSON.parse(json) as { -readonly [K in keyof StoredTask]: StoredTask[K] }
  if (chunks === null || chunks === '') return record
  const artifacts = record.task.artifacts
  for (const chunk of JSON.parse(`[${chunks.slice(1)}]`) as Chunk[]) {
    const artifact = artifacts.find(a => a.artifactId === chunk.a)
    /* c8 ignore next -- a chunk is appended only to an artifact the record holds, and artifacts are never removed */
    if (artifact === undefined) continue
    for (const part of chunk.p) artifact.parts.push(part)
    record.version = chunk.v
    record.updatedAt = chunk.u
  }
  return record
}
