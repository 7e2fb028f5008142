import type { PushNotificationConfig } from '../../schemas/push-config.js'
import type { StoredTask } from '../tasks/store.js'

/**
 * A stored push config: always has its id. `version: '1.0'` marks a config made through a v1.0 method (docs/push-notifications.md, "Push
 * notifications"). Credentials are kept, as deliveries need them; the push service strips them from results.
 */
export type StoredPushConfig = PushNotificationConfig & { id: string, version?: '1.0' }

export interface PutResult {
  /** The config as stored, with its id. */
  config: StoredPushConfig
  /** False when an existing config (same id, or same url without an id) was replaced. */
  created: boolean
}

export interface PutOptions {
  /** At most this many configs per task (the push service passes 10); one more is refused with PushConfigLimit. */
  maxPerTask: number
  /**
   * `tasks.ttl`, as the push service passes it: a store whose configs do not go with their task (it has no `forget`)
   * expires all of a task's configs this long after its last `put` (RedisPushConfigStore). A store with `forget` may
   * ignore it.
   */
  ttlSeconds?: number
}

/**
 * Push notification configs per task: the contract a push config store backend implements. MemoryPushConfigStore
 * (`push_notifications.backend: memory` or `webhook`) keeps them in this process; RedisPushConfigStore (`kvcache`)
 * shares them between instances. `pushStoreContract` (test/services/push/store-contract.ts) is the acceptance test
 * every backend must pass, and docs/stores.md says how to run it against a new one. The obligations, in order:
 *
 * Upsert. `put` carries the whole upsert rule, so that a backend can make it one atomic step (RedisPushConfigStore:
 * one script), and concurrent puts on any number of instances never pass the limit or leave half a change:
 * - a config with an `id` replaces the task's config of that id, in its place, or else is created under that id;
 * - a config without an `id` and with the `url` of a stored config replaces that one and keeps its id;
 * - otherwise it is a new config: the first id-less config of a task that has none gets the id `default`, later ones
 *   a fresh UUID;
 * - a new config past `maxPerTask` throws PushConfigLimit and writes nothing; a replacement is never refused.
 * A replacement replaces the whole config: fields it lacks (a token, credentials) are gone.
 *
 * Values. Every field of a config is stored as given (also fields the schema does not name, such as `version`) and
 * handed back as plain JSON values: an empty array stays an array. Nothing handed in or out shares objects with what
 * is stored, so a caller that changes one changes nothing stored.
 *
 * Reads. `get` is the config of that id; `latest` is the config of the task's last `put`, created or replaced (once
 * it is removed, the one put before it); `list` is every config of the task in creation order, a replacement in its
 * place and a config removed and put again at the end. Each is null or [] for a task with none. Tasks never see each
 * other's configs.
 *
 * Lifetime. A task's configs go when it does: a store with `forget` drops them when the task store evicts or expires
 * the task (`TaskStore.onDelete`); one without expires them after `PutOptions.ttlSeconds`.
 *
 * Failures. A backend it cannot reach makes every method throw StorageUnavailable with a short fixed reason, never
 * the driver's error, which may carry a config's token and credentials.
 */
export interface PushConfigStore {
  /** Stores a config by the upsert rule above. */
  put (taskId: string, config: PushNotificationConfig, opts: PutOptions): Promise<PutResult>
  get (taskId: string, id: string): Promise<StoredPushConfig | null>
  latest (taskId: string): Promise<StoredPushConfig | null>
  list (taskId: string): Promise<StoredPushConfig[]>
  /** True when the config existed. */
  remove (taskId: string, id: string): Promise<boolean>
  /**
   * Optional: whether the task has a config, answered at once, without I/O. The notifier asks it at each state change
   * of a task (unless the task store `recordsPush`) and skips a task without one. Without it, the notifier lists the
   * task's configs at each state change.
   */
  holds? (taskId: string): boolean
  /**
   * Optional: drops every config of a task the task store has forgotten (wired to `TaskStore.onDelete`). Without it,
   * configs expire by `PutOptions.ttlSeconds`.
   */
  forget? (taskId: string): void
  /** Throws when the backend does not answer. */
  ping (): Promise<void>
  /** Releases what the store holds; a client it was given stays open for its owner to close. */
  close (): Promise<void>
}

/**
 * The push outbox: the state changes of tasks with push configs whose deliveries may not be queued yet, recorded by
 * the task store with the change (`TaskStore.recordsPush`): RedisPushOutbox, PostgresPushOutbox.
 */
export interface PushOutbox {
  /** Entries that waited past their grace period (their writer died, or could not queue them): the records. */
  claim (): Promise<StoredTask[]>
  /** The change's deliveries are queued (or it has no config left). Never rejects: an entry left is claimed again. */
  ack (taskId: string, version: number): Promise<void>
}
