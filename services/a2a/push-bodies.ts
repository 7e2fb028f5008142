import type { Task } from '../../schemas/task.js'
import type { StoredPushConfig } from '../push/store.js'
import { encodeTask } from './codec-v10.js'
import { presentTask, type Dialect } from './codec-v03.js'

/**
 * The bodies of a task's webhook deliveries, by the wire version each config was made in: the Task in the v0.3
 * `dialect`, or the v1.0 StreamResponse `{"task": ...}`. Each is serialized once, when first asked: a task with
 * many configs of one version is serialized once for all of them.
 */
export function pushBodies (dialect: Dialect): (task: Task) => (config: StoredPushConfig) => string {
  return task => {
    let v03: string | undefined
    let v10: string | undefined
    return config => config.version === '1.0'
      ? (v10 ??= JSON.stringify({ task: encodeTask(task) }))
      : (v03 ??= JSON.stringify(presentTask(task, dialect)))
  }
}
