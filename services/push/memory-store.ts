import { newId } from '../kernel/ids.js'
import type { PushNotificationConfig } from '../../schemas/push-config.js'
import { PushConfigLimit } from '../kernel/errors.js'
import type { PushConfigStore, PutOptions, PutResult, StoredPushConfig } from './store.js'

/** The id of the first id-less config of a task that has none (CONTRACT.md §5). */
const DEFAULT_ID = 'default'

interface TaskConfigs {
  /** By id. A Map keeps insertion order, and `set` on an existing id keeps its place: creation order for free. */
  configs: Map<string, StoredPushConfig>
  /** Ids, the most recently put last: `latest` is the last one, and stays right when it is removed. */
  recent: string[]
}

/**
 * Push configs in process memory, lost on restart (`memory` and `webhook` backends, CONTRACT.md §8.1).
 * Everything goes in and out as a deep copy, so a caller never holds a reference to a stored object.
 * `ttlSeconds` is not used here: when the memory task store evicts or expires a task, `forget` drops its configs.
 */
export class MemoryPushConfigStore implements PushConfigStore {
  readonly #tasks = new Map<string, TaskConfigs>()

  async put (taskId: string, config: PushNotificationConfig, opts: PutOptions): Promise<PutResult> {
    const task = this.#tasks.get(taskId) ?? { configs: new Map<string, StoredPushConfig>(), recent: [] }
    let id = config.id
    let created = true
    if (id !== undefined) {
      created = !task.configs.has(id)
    } else {
      const sameUrl = [...task.configs.values()].find(stored => stored.url === config.url)
      if (sameUrl !== undefined) {
        id = sameUrl.id
        created = false
      } else {
        id = task.configs.size === 0 ? DEFAULT_ID : newId()
      }
    }
    if (created && task.configs.size >= opts.maxPerTask) throw new PushConfigLimit(taskId, opts.maxPerTask)

    const stored = withId(config, id)
    task.configs.set(id, stored)
    task.recent = task.recent.filter(other => other !== id)
    task.recent.push(id)
    this.#tasks.set(taskId, task)
    return { config: clone(stored), created }
  }

  async get (taskId: string, id: string): Promise<StoredPushConfig | null> {
    const stored = this.#tasks.get(taskId)?.configs.get(id)
    return stored === undefined ? null : clone(stored)
  }

  async latest (taskId: string): Promise<StoredPushConfig | null> {
    const task = this.#tasks.get(taskId)
    if (task === undefined) return null
    // Never undefined: a task with configs has a non-empty `recent` naming only stored ids.
    return clone(task.configs.get(task.recent[task.recent.length - 1]) as StoredPushConfig)
  }

  async list (taskId: string): Promise<StoredPushConfig[]> {
    return [...(this.#tasks.get(taskId)?.configs.values() ?? [])].map(clone)
  }

  async remove (taskId: string, id: string): Promise<boolean> {
    const task = this.#tasks.get(taskId)
    if (task === undefined || !task.configs.delete(id)) return false
    task.recent = task.recent.filter(other => other !== id)
    // A task with no configs left holds no memory.
    if (task.configs.size === 0) this.#tasks.delete(taskId)
    return true
  }

  forget (taskId: string): void {
    this.#tasks.delete(taskId)
  }

  holds (taskId: string): boolean {
    return this.#tasks.has(taskId)
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    this.#tasks.clear()
  }
}

/** The config with its id first, as a fresh copy. JSON, as in Redis: both backends hand back the same shapes. */
function withId (config: PushNotificationConfig, id: string): StoredPushConfig {
  const { id: _ignored, ...rest } = config
  return { id, ...clone(rest) }
}

function clone<T> (value: T): T {
  return JSON.parse(JSON.stringify(value))
}
