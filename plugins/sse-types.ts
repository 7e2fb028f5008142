// The shapes the SSE stream hub shares with the bindings: the source a stream carries, its slots, the plugin's options.
import type { StreamSlots } from '../services/auth/stream-slots.js'
import type { StreamSink } from '../services/tasks/task-stream.js'
import type { HttpAnswers } from './answers.js'

/** What the hub streams: a source of serialized JSON-RPC results (see services/tasks/task-stream.ts). */
export interface EventSource {
  attach (sink: StreamSink): void
  /** The consumer has caught up after a write returned false. */
  drain (): void
  /** Stops the source (client gone or stream cut); idempotent. */
  close (): void
  /** The current state, serialized, sent last when the server shuts down. */
  snapshot (): string
  /** The SSE event id of what `snapshot` shows, when the stream has ids. */
  snapshotId (): number | undefined
  /** About how many bytes of results it holds for the consumer, not written yet (0 for a source that holds none). */
  held? (): number
  /** Called at each heartbeat of the stream: the source may look whether what it follows still exists. */
  check? (): void
}

export interface SsePluginOptions {
  /** `server.max_streams`: open streams of this instance. */
  maxStreams: number
  /** `server.heartbeat_interval`, ms: a `: keep-alive` comment goes to a stream idle this long. */
  heartbeatMs: number
  /**
   * A consumer that takes nothing for two seconds while more than this waits for it, beyond the event being written,
   * is cut off (CONTRACT.md §7: 1 MiB).
   */
  maxQueuedBytes?: number
  /**
   * The answer budget and the write watch the streams share with the other answers (plugins/answers.ts); default: a
   * budget of this hub's own with no bound, and the default `server.write_timeout`.
   */
  answers?: HttpAnswers
  /** Open streams per principal (CONTRACT.md §9: 10 with security on, shared through Redis); no limit when absent. */
  slots?: StreamSlots
  /** Awaited in `preClose` before the streams are ended: the task drain, so streams see tasks finish. */
  beforeShutdown?: () => Promise<void>
}

/** The slots of one stream (see `StreamHub.claim`). */
export interface StreamClaim {
  own (owner: string): Promise<void>
  release (): void
}
