import type { PushNotificationConfig } from '../../schemas/push-config.js'

/** A stored push config: always has its id. Credentials are kept (deliveries need them) but never returned. */
export type StoredPushConfig = PushNotificationConfig & { id: string, version?: '1.0' }

export interface PutResult {
  config: StoredPushConfig
  /** False when an existing config (same id, or same url without an id) was replaced. */
  created: boolean
}

export interface PutOptions {
  /** At most this many configs per task (CONTRACT.md §5: 10); one more is refused with PushConfigLimit. */
  maxPerTask: number
  /** The task's remaining lifetime in seconds: the stored configs expire with it (Redis). */
  ttlSeconds?: number
}

/**
 * Push notification configs per task (CONTRACT.md §5 and §8.1). `put` carries the whole upsert rule, so that a
 * Redis implementation can make it one atomic step:
 * - same `id` → replaces that config, in its place;
 * - no `id` and the same `url` as a stored config → replaces that config and keeps its id;
 * - otherwise a new config: the first id-less config of a task that has none gets the id `default`, later ones a UUID;
 * - a new config past `maxPerTask` → throws PushConfigLimit, and nothing is written.
 * `list` is in creation order; `latest` is the config of the last `put`, created or replaced.
 */
export interface PushConfigStore {
  put (taskId: string, config: PushNotificationConfig, opts: PutOptions): Promise<PutResult>
  get (taskId: string, id: string): Promise<StoredPushConfig | null>
  latest (taskId: string): Promise<StoredPushConfig | null>
  list (taskId: string): Promise<StoredPushConfig[]>
  /** True when the config existed. */
  remove (taskId: string, id: string): Promise<boolean>
  /**
   * Answered at once, without I/O: false when the task has no config. Backends that cannot tell without a round
   * trip leave it out (the caller then lists).
   */
  holds? (taskId: string): boolean
  /** Memory backend: drops every config of a task the task store has forgotten (Redis keys expire with the task). */
  forget? (taskId: string): void
  /** Throws when the backend does not answer (used by `/ready`). */
  ping (): Promise<void>
  close (): Promise<void>
}
