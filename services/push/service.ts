import type { PushNotificationConfig, TaskPushNotificationConfig } from '../../schemas/push-config.js'
import { JsonRpcError, RpcCode, invalidParams } from '../kernel/errors.js'
import type { PushConfigStore, StoredPushConfig } from './store.js'
import type { UrlPolicy } from './url-policy.js'

/** CONTRACT.md §5: at most this many push configs per task. */
export const MAX_CONFIGS_PER_TASK = 10

/** What Node accepts in a header value: tab, visible ASCII and space, and the bytes 0x80-0xFF. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

/** The authentication schemes a v0.3 delivery can carry (the seed: `Bearer`, `ApiKey`), matched without case. */
const SCHEMES = new Set(['bearer', 'apikey'])

/** A v1.0 config's scheme goes out as `Authorization: <scheme> <credentials>`: an HTTP auth-scheme token. */
const HTTP_SCHEME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/

export interface PushServiceOptions {
  store: PushConfigStore
  policy: UrlPolicy
  /** `tasks.ttl`: stored configs expire this long after their last change (Redis). */
  ttlSeconds: number
}

/**
 * The rules of the push config methods (CONTRACT.md §5 and §8.2) over a store: URL policy at `set`, the per-task
 * cap, unknown configs as -32001, and results that never carry credentials.
 */
export class PushService {
  readonly store: PushConfigStore
  readonly #policy: UrlPolicy
  readonly #ttlSeconds: number

  constructor (opts: PushServiceOptions) {
    this.store = opts.store
    this.#policy = opts.policy
    this.#ttlSeconds = opts.ttlSeconds
  }

  /**
   * Throws -32602 with the reason when a config may not be stored. `field` is its params path; `version` the wire
   * version it was made in (CONTRACT.md §11.6).
   */
  check (config: PushNotificationConfig, field: string, version?: '1.0'): void {
    const url = this.#policy.checkUrl(config.url)
    if (!url.ok) throw invalidParams(`${field}.${url.reason}`)
    // Each is sent as a header value on every delivery: one that cannot be (CR, LF, other control characters)
    // would fail every attempt, so it is refused here, where the client learns of it.
    if (config.token !== undefined && !HEADER_VALUE.test(config.token)) {
      throw invalidParams(`${field}.token: must be a valid header value (no CR, LF or other control characters)`)
    }
    const credentials = config.authentication?.credentials
    if (credentials !== undefined && !HEADER_VALUE.test(credentials)) {
      throw invalidParams(`${field}.authentication.credentials: must be a valid header value (no CR, LF or other control characters)`)
    }
    const schemes = config.authentication?.schemes
    if (version === '1.0') {
      if (schemes !== undefined && !HTTP_SCHEME.test(schemes[0])) {
        throw invalidParams(`${field}.authentication.scheme: must be an HTTP authentication scheme, such as Bearer`)
      }
    } else if (schemes !== undefined) {
      const unknown = schemes.filter(s => !SCHEMES.has(s.toLowerCase()))
      if (unknown.length > 0) {
        throw invalidParams(`${field}.authentication.schemes: ${unknown.join(', ')} not supported (use Bearer or ApiKey)`)
      }
    }
  }

  /** Stores a config (already checked), made in wire `version` (0.3 when absent), and answers as `set` does. */
  async set (taskId: string, config: PushNotificationConfig, version?: '1.0'): Promise<TaskPushNotificationConfig> {
    try {
      const made = version === undefined ? config : { ...config, version }
      const { config: stored } = await this.store.put(taskId, made, { maxPerTask: MAX_CONFIGS_PER_TASK, ttlSeconds: this.#ttlSeconds })
      return present(taskId, stored)
    } catch (err) {
      if ((err as { code?: string }).code === 'A2A_ERR_PUSH_CONFIG_LIMIT') {
        throw invalidParams(`params.pushNotificationConfig: a task has at most ${MAX_CONFIGS_PER_TASK} push configs`)
      }
      throw err
    }
  }

  /** The config with that id, or the most recently set one; -32001 when there is none. */
  async get (taskId: string, configId?: string): Promise<TaskPushNotificationConfig> {
    const stored = configId === undefined ? await this.store.latest(taskId) : await this.store.get(taskId, configId)
    if (stored === null) throw configNotFound(taskId, configId)
    return present(taskId, stored)
  }

  async list (taskId: string): Promise<TaskPushNotificationConfig[]> {
    return (await this.store.list(taskId)).map(config => present(taskId, config))
  }

  async remove (taskId: string, configId: string): Promise<null> {
    if (!await this.store.remove(taskId, configId)) throw configNotFound(taskId, configId)
    return null
  }
}

/** A config as results show it: credentials are never returned (CONTRACT.md §5). */
function present (taskId: string, config: StoredPushConfig): TaskPushNotificationConfig {
  const out: PushNotificationConfig = { id: config.id, url: config.url }
  if (config.token !== undefined) out.token = config.token
  if (config.authentication !== undefined) out.authentication = { schemes: [...config.authentication.schemes] }
  return { taskId, pushNotificationConfig: out }
}

function configNotFound (taskId: string, configId?: string): JsonRpcError {
  const data = configId === undefined
    ? `task "${taskId}" has no push notification config`
    : `push notification config "${configId}" was not found for task "${taskId}"`
  return new JsonRpcError(RpcCode.taskNotFound, 'Task not found', data)
}
