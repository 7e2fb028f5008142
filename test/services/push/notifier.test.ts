import { pushBodies } from '../../../services/a2a/push-bodies.js'
import pino from 'pino'
import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import { MemoryPushConfigStore } from '../../../services/push/memory-store.js'
import { WebhookNotifier, parseRetryAfter, type NotifierOptions } from '../../../services/push/notifier.js'
import type { PushConfigStore } from '../../../services/push/store.js'
import { createUrlPolicy } from '../../../services/push/url-policy.js'
import type { StoredTask } from '../../../services/tasks/store.js'
import { logCapture, receiver, until } from '../../helper.js'

const PUT = { maxPerTask: 10 }
let n = 0

function record (state: Task['status']['state'], id = 'task-1'): StoredTask {
  const task: Task = { id, contextId: 'c', kind: 'task', status: { state, timestamp: new Date().toISOString() }, artifacts: [], history: [], metadata: null }
  return { task, owner: 'o', version: ++n, createdAt: 0, updatedAt: 0 }
}

function notifier (t: { teardown (fn: () => unknown): void }, store: PushConfigStore, extra: Partial<NotifierOptions> = {}) {
  const logs = logCapture()
  const opts: NotifierOptions = {
    store,
    policy: createUrlPolicy({ validateUrls: true, requireHttps: false, allowedDomains: [], allowedNetworks: ['127.0.0.0/8'] }),
    log: pino({ level: 'debug' }, logs.stream),
    bodies: pushBodies('default'),
    timeoutSeconds: 2,
    maxRetries: 2,
    retryDelaySeconds: 0.01,
    defaultHeaders: {},
    signingSecret: '',
    maxInFlight: 64,
    random: () => 0.5,
    ...extra
  }
  const instance = new WebhookNotifier(opts)
  t.teardown(() => instance.close(0))
  return { notifier: instance, logs }
}

/** The store with some methods replaced. */
function wrap (store: PushConfigStore, over: Partial<PushConfigStore>): PushConfigStore {
  return {
    put: (...a) => store.put(...a),
    get: (...a) => store.get(...a),
    latest: (...a) => store.latest(...a),
    list: (...a) => store.list(...a),
    remove: (...a) => store.remove(...a),
    ping: () => store.ping(),
    close: () => store.close(),
    ...over
  }
}

t.test('Retry-After is read in seconds or as a date, and ignored past 60 s or when invalid', async t => {
  const now = Date.UTC(2030, 0, 1)
  t.equal(parseRetryAfter(undefined), undefined)
  t.equal(parseRetryAfter('  '), undefined)
  t.equal(parseRetryAfter('5'), 5)
  t.equal(parseRetryAfter('60'), 60)
  t.equal(parseRetryAfter('61'), undefined)
  t.equal(parseRetryAfter(new Date(now + 10_000).toUTCString(), now), 10)
  t.equal(parseRetryAfter(new Date(now - 5_000).toUTCString(), now), 0)
  t.equal(parseRetryAfter('soon'), undefined)
})

t.test('a Retry-After of 0 is honoured, and retries stop after max_retries', async t => {
  const hook = await receiver(t)
  hook.script(async () => ({ status: 503, headers: { 'retry-after': '0' } }))
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: hook.url }, PUT)
  const { notifier: n1, logs } = notifier(t, store)
  n1.notify(record('completed'))
  await until(async () => hook.received.length === 3 && (await n1.backlog()) === 0)
  const lines = logs.lines().filter(l => l.msg.startsWith('webhook delivery failed'))
  t.same(lines.map(l => [l.msg, l.attempt, l.status]), [
    ['webhook delivery failed, will retry', 1, 503],
    ['webhook delivery failed, will retry', 2, 503],
    ['webhook delivery failed', 3, 503]
  ])
})

t.test('with max_in_flight 1, deliveries wait their turn and all arrive', async t => {
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  for (let i = 0; i < 5; i++) await store.put('task-1', { url: `${hook.url}/${i}` }, PUT)
  const { notifier: n1 } = notifier(t, store, { maxInFlight: 1 })
  n1.notify(record('in_progress'))
  n1.notify(record('completed'))
  await until(() => hook.received.length === 10)
  for (let i = 0; i < 5; i++) {
    t.same(hook.received.filter(r => r.path === `/${i}`).map(r => r.body.status.state), ['in_progress', 'completed'], `config ${i} in order`)
  }
})

t.test('a store that cannot be read or written is logged, never thrown', async t => {
  const hook = await receiver(t)
  hook.script(410)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: hook.url }, PUT)
  const failing = wrap(store, { remove: async () => { throw new Error('redis gone') } })
  const { notifier: n1, logs } = notifier(t, failing)
  n1.notify(record('completed'))
  await until(() => logs.lines().some(l => l.msg === 'push config could not be removed'))
  const unreadable = wrap(store, { list: async () => { throw new Error('redis gone') } })
  const { notifier: n2, logs: logs2 } = notifier(t, unreadable)
  n2.notify(record('completed'))
  await until(() => logs2.lines().some(l => l.msg === 'push configs could not be read'))
  t.equal(hook.received.length, 1)
})

t.test('a url the policy now refuses is not delivered', async t => {
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: 'http://10.0.0.1/hook' }, PUT)
  const { notifier: n1, logs } = notifier(t, store)
  n1.notify(record('completed'))
  await until(() => logs.lines().some(l => l.msg === 'webhook url refused at delivery'))
  t.match(logs.lines().find(l => l.msg === 'webhook url refused at delivery'), { reason: /private address 10\.0\.0\.1/ })
})

t.test('close abandons waiting retries, and a closed notifier queues nothing', async t => {
  const hook = await receiver(t)
  hook.script(500)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: hook.url }, PUT)
  const { notifier: n1 } = notifier(t, store, { retryDelaySeconds: 3600 })
  n1.notify(record('completed'))
  await until(() => hook.received.length === 1)
  await n1.close(10)
  n1.notify(record('failed'))
  t.equal(hook.received.length, 1)
})

t.test('an attempt cut short by close is not retried: the delivery ends', async t => {
  const hook = await receiver(t)
  let answer = (): void => {}
  const held = new Promise<void>(resolve => { answer = resolve })
  t.teardown(() => answer())
  hook.script(async () => {
    await held
    return { status: 500 }
  })
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: hook.url }, PUT)
  const { notifier: n1, logs } = notifier(t, store, { retryDelaySeconds: 0.01 })
  n1.notify(record('completed'))
  await until(() => hook.received.length === 1)
  // The receiver has not answered: close drops the connection under the attempt, which counts as retryable.
  await n1.close(10)
  await until(() => logs.lines().some(l => l.msg === 'webhook delivery failed, will retry'))
  // The retry's wait ends after close: the loop sees the notifier closed and stops.
  await new Promise(resolve => setTimeout(resolve, 100))
  t.equal(hook.received.length, 1, 'no attempt after close')
})

t.test('default headers are sent, but never over the notifier\'s own', async t => {
  const hook = await receiver(t)
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: hook.url, token: 'real' }, PUT)
  const { notifier: n1 } = notifier(t, store, { defaultHeaders: { 'X-Env': 'test', 'x-a2a-notification-token': 'fake', 'Content-Type': 'text/plain' } })
  n1.notify(record('completed'))
  await until(() => hook.received.length === 1)
  t.equal(hook.received[0].headers['x-env'], 'test')
  t.equal(hook.received[0].headers['x-a2a-notification-token'], 'real')
  t.equal(hook.received[0].headers['content-type'], 'application/json')
})

t.test('deliveries waiting for a slot when the notifier closes are dropped, not sent', async t => {
  let release!: () => void
  const held = new Promise<void>(resolve => { release = resolve })
  const hook = await receiver(t)
  hook.script(async () => { await held; return { status: 200 } })
  const store = new MemoryPushConfigStore()
  await store.put('task-1', { url: `${hook.url}/a` }, PUT)
  await store.put('task-1', { url: `${hook.url}/b` }, PUT)
  const { notifier: n1, logs } = notifier(t, store, { maxInFlight: 1 })
  n1.notify(record('completed'))
  await until(() => hook.received.length === 1)
  await n1.close(0)
  release()
  await until(() => logs.lines().some(l => l.code === 'A2A_ERR_CLOSED'))
  t.equal(hook.received.length, 1)
})
