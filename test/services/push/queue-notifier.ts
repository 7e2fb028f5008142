// What the tests of the durable delivery queues share (durable-queue.test.ts on Redis, postgres-queue.test.ts on
// PostgreSQL): a notifier set up as the plugin sets it up, its logs captured, and the task records they notify.
import pino from 'pino'
import type { Task } from '../../../schemas/task.js'
import { pushBodies } from '../../../services/a2a/push-bodies.js'
import { WebhookNotifier } from '../../../services/push/notifier.js'
import type { PushConfigStore } from '../../../services/push/store.js'
import { createUrlPolicy } from '../../../services/push/url-policy.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { logCapture } from '../../helper.js'

export function record (state: Task['status']['state'], version: number, id = 'task-1'): StoredTask {
  const task: Task = { id, contextId: 'c', kind: 'task', status: { state, timestamp: new Date().toISOString() }, artifacts: [], history: [], metadata: null }
  return { task, owner: 'o', version, createdAt: 0, updatedAt: 0 }
}

/**
 * A notifier over `store` that allows 127.0.0.0/8, signs, retries twice 10 ms apart, and makes `maxInFlight` attempts at
 * once; its logs, at debug, in `logs`.
 */
export function queueNotifier (store: PushConfigStore, maxInFlight: number): { notifier: WebhookNotifier, logs: ReturnType<typeof logCapture>, log: pino.Logger } {
  const logs = logCapture()
  const log = pino({ level: 'debug' }, logs.stream)
  const notifier = new WebhookNotifier({
    store,
    policy: createUrlPolicy({ validateUrls: true, requireHttps: false, allowedDomains: [], allowedNetworks: ['127.0.0.0/8'] }),
    log,
    bodies: pushBodies('default'),
    timeoutSeconds: 2,
    maxRetries: 2,
    retryDelaySeconds: 0.01,
    defaultHeaders: {},
    signingSecret: 'durable-test-secret',
    maxInFlight
  })
  return { notifier, logs, log }
}
