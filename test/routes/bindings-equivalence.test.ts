import t, { type Test } from 'tap'
import type { ServiceError } from '@grpc/grpc-js'
import { listenGrpc, parseSse, postJson, receiver, until, waitOrEcho } from '../helper.js'
import { grpcClients, statusDetails, streamAll, unary } from './grpc-client.js'

// One operation, six ways in (CONTRACT.md §11 to §13): JSON-RPC v0.3 and v1.0, REST v1.0 and v0.3, gRPC v1.0 and
// v0.3 must give the same task state, the same error class and the same webhooks. Each binding is driven over the
// wire (HTTP, HTTP/2) by a plain client that reads its wire form back into one neutral shape: states in the stored
// spelling, errors as their A2A error code.

type Outcome = { state: string } | { error: number }

interface Binding {
  name: string
  send (text: string, wait: boolean, contextId?: string): Promise<{ id: string } & Outcome>
  get (id: string): Promise<Outcome>
  cancel (id: string): Promise<Outcome>
  /** Absent where the version's binding has no such operation (v0.3 gRPC has no ListTasks). */
  list?: (contextId: string) => Promise<string[] | { error: number }>
  stream (text: string): Promise<string[] | { error: number }>
  subscribe (id: string): Promise<string[] | { error: number }>
  pushSet (taskId: string, url: string): Promise<{ ok: true } | { error: number }>
  pushIds (taskId: string): Promise<string[] | { error: number }>
}

const STORED: Record<string, string> = {
  working: 'in_progress',
  TASK_STATE_WORKING: 'in_progress',
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_CANCELLED: 'canceled',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_INPUT_REQUIRED: 'input_required',
  'input-required': 'input_required'
}
const stored = (state: string): string => STORED[state] ?? state

/** ErrorInfo reasons (v1.0) as the A2A error codes. */
const CODES: Record<string, number> = {
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  UNSUPPORTED_OPERATION: -32004,
  CONTENT_TYPE_NOT_SUPPORTED: -32005,
  INVALID_PARAMS: -32602
}

let n = 0
const id = () => `eq-${++n}`

async function get (url: string): Promise<{ status: number, json: any }> {
  const res = await fetch(url)
  const text = await res.text()
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) }
}

/** States of the SSE events of any binding, in order (a task snapshot, a status update). */
function streamStates (raw: string): string[] {
  return parseSse(raw).events.flatMap((event: any) => {
    const value = event.result ?? event
    const status = value.status ?? value.task?.status ?? value.statusUpdate?.status
    return status === undefined ? [] : [stored(status.state)]
  })
}

function jsonRpc (base: string, version: '0.3' | '1.0'): Binding {
  const v1 = version === '1.0'
  const headers: Record<string, string> = v1 ? { 'a2a-version': '1.0' } : {}
  const call = async (method: string, params: unknown) => (await postJson(base, { jsonrpc: '2.0', id: ++n, method, params }, headers)).json
  const outcome = (res: any): Outcome => res.error !== undefined ? { error: res.error.code } : { state: stored((res.result.task ?? res.result).status.state) }
  const message = (text: string, contextId?: string) => v1
    ? { messageId: id(), role: 'ROLE_USER', parts: [{ text }], contextId }
    : { kind: 'message', messageId: id(), role: 'user', parts: [{ kind: 'text', text }], contextId }
  const sse = async (method: string, params: unknown) => {
    const res = await postJson(base, { jsonrpc: '2.0', id: ++n, method, params }, headers)
    const first = parseSse(res.text).events[0]
    return first?.error !== undefined ? { error: first.error.code as number } : streamStates(res.text)
  }
  return {
    name: `JSON-RPC ${version}`,
    async send (text, wait, contextId) {
      const res = await call(v1 ? 'SendMessage' : 'message/send', {
        message: message(text, contextId), configuration: v1 ? { returnImmediately: !wait } : { blocking: wait }
      })
      return { id: (res.result?.task ?? res.result)?.id, ...outcome(res) }
    },
    async get (task) { return outcome(await call(v1 ? 'GetTask' : 'tasks/get', { id: task })) },
    async cancel (task) { return outcome(await call(v1 ? 'CancelTask' : 'tasks/cancel', { id: task })) },
    async list (contextId) {
      const res = await call(v1 ? 'ListTasks' : 'tasks/list', { contextId })
      return res.error !== undefined ? { error: res.error.code } : res.result.tasks.map((x: any) => x.id)
    },
    stream: text => sse(v1 ? 'SendStreamingMessage' : 'message/stream', { message: message(text) }),
    subscribe: task => sse(v1 ? 'SubscribeToTask' : 'tasks/resubscribe', { id: task }),
    async pushSet (taskId, url) {
      const res = v1
        ? await call('CreateTaskPushNotificationConfig', { taskId, id: 'hook', url })
        : await call('tasks/pushNotificationConfig/set', { taskId, pushNotificationConfig: { id: 'hook', url } })
      return res.error !== undefined ? { error: res.error.code } : { ok: true }
    },
    async pushIds (taskId) {
      const res = await call(v1 ? 'ListTaskPushNotificationConfigs' : 'tasks/pushNotificationConfig/list', v1 ? { taskId } : { id: taskId })
      if (res.error !== undefined) return { error: res.error.code }
      return v1 ? res.result.configs.map((c: any) => c.id) : res.result.map((c: any) => c.pushNotificationConfig.id)
    }
  }
}

function rest (base: string, version: '0.3' | '1.0'): Binding {
  const v1 = version === '1.0'
  const at = v1 ? base : `${base}/v1`
  const error = (json: any): number => v1 ? CODES[json.error.details[0].reason] ?? json.error.code : json.code
  const outcome = (res: { status: number, json: any }): Outcome => res.status >= 400 ? { error: error(res.json) } : { state: stored((res.json.task ?? res.json).status.state) }
  const message = (text: string, contextId?: string) => v1
    ? { messageId: id(), role: 'ROLE_USER', parts: [{ text }], contextId }
    : { messageId: id(), role: 'ROLE_USER', content: [{ text }], contextId }
  const sse = async (url: string, body?: unknown) => {
    const res = await postJson(url, body)
    return res.status >= 400 ? { error: error(res.json) } : streamStates(res.text)
  }
  return {
    name: `REST ${version}`,
    async send (text, wait, contextId) {
      const res = await postJson(`${at}/message:send`, { message: message(text, contextId), configuration: v1 ? { returnImmediately: !wait } : { blocking: wait } })
      return { id: res.json.task?.id, ...outcome(res) }
    },
    get: async task => outcome(await get(`${at}/tasks/${task}`)),
    cancel: async task => outcome(await postJson(`${at}/tasks/${task}:cancel`, {})),
    async list (contextId) {
      const res = await get(`${at}/tasks?contextId=${contextId}`)
      return res.status >= 400 ? { error: error(res.json) } : res.json.tasks.map((x: any) => x.id)
    },
    stream: text => sse(`${at}/message:stream`, { message: message(text) }),
    subscribe: task => sse(`${at}/tasks/${task}:subscribe`),
    async pushSet (taskId, url) {
      const res = await postJson(`${at}/tasks/${taskId}/pushNotificationConfigs`, v1 ? { id: 'hook', url } : { pushNotificationConfig: { id: 'hook', url } })
      return res.status >= 400 ? { error: error(res.json) } : { ok: true }
    },
    async pushIds (taskId) {
      const res = await get(`${at}/tasks/${taskId}/pushNotificationConfigs`)
      if (res.status >= 400) return { error: error(res.json) }
      return res.json.configs.map((c: any) => v1 ? c.id : c.pushNotificationConfig.id)
    }
  }
}

/** The A2A error code of a gRPC status: its ErrorInfo's reason. */
const grpcError = (error: ServiceError): { error: number } => ({ error: CODES[statusDetails(error).details[0].reason] ?? error.code })

function grpc (t: Test, target: string, version: '0.3' | '1.0'): Binding {
  const v1 = version === '1.0'
  const { v1: v1Stub, v03 } = grpcClients(t, target)
  const stub = v1 ? v1Stub : v03
  const task = (value: string) => v1 ? { id: value } : { name: `tasks/${value}` }
  const outcome = (res: { value?: any, error?: ServiceError }): Outcome => res.error !== undefined
    ? grpcError(res.error)
    : { state: stored((res.value.task ?? res.value).status.state) }
  const message = (text: string, contextId?: string) => v1
    ? { message: { messageId: id(), role: 'ROLE_USER', parts: [{ text }], contextId } }
    : { request: { messageId: id(), role: 'ROLE_USER', content: [{ text }], contextId } }
  const stream = async (method: string, request: unknown) => {
    const { messages, error } = await streamAll(stub, method, request)
    if (error !== undefined) return grpcError(error)
    return messages.flatMap((m: any) => {
      const status = m.task?.status ?? m.statusUpdate?.status
      return status === undefined ? [] : [stored(status.state)]
    })
  }
  return {
    name: `gRPC ${version}`,
    async send (text, wait, contextId) {
      const res = await unary(stub, 'SendMessage', { ...message(text, contextId), configuration: v1 ? { returnImmediately: !wait } : { blocking: wait } })
      return { id: res.value?.task?.id, ...outcome(res) }
    },
    get: async value => outcome(await unary(stub, 'GetTask', task(value))),
    cancel: async value => outcome(await unary(stub, 'CancelTask', task(value))),
    list: v1
      ? async contextId => {
        const res = await unary(stub, 'ListTasks', { contextId })
        return res.error !== undefined ? grpcError(res.error) : res.value.tasks.map((x: any) => x.id)
      }
      : undefined,
    stream: text => stream('SendStreamingMessage', message(text)),
    subscribe: value => stream(v1 ? 'SubscribeToTask' : 'TaskSubscription', task(value)),
    async pushSet (taskId, url) {
      const res = v1
        ? await unary(stub, 'CreateTaskPushNotificationConfig', { taskId, id: 'hook', url })
        : await unary(stub, 'CreateTaskPushNotificationConfig', { parent: `tasks/${taskId}`, config: { pushNotificationConfig: { id: 'hook', url } } })
      return res.error !== undefined ? grpcError(res.error) : { ok: true }
    },
    async pushIds (taskId) {
      const res = v1
        ? await unary(stub, 'ListTaskPushNotificationConfigs', { taskId })
        : await unary(stub, 'ListTaskPushNotificationConfig', { parent: `tasks/${taskId}` })
      if (res.error !== undefined) return grpcError(res.error)
      return res.value.configs.map((c: any) => v1 ? c.id : c.pushNotificationConfig.id)
    }
  }
}

t.test('§11 to §13 each operation through each binding and version: the same state, error class and webhooks', async t => {
  const hook = await receiver(t)
  const { app, url, target } = await listenGrpc(t, {
    executor: waitOrEcho,
    config: { protocol: { dialect: 'a2a' }, push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } } }
  })
  const bindings = [jsonRpc(url, '0.3'), jsonRpc(url, '1.0'), rest(url, '1.0'), rest(url, '0.3'), grpc(t, target, '1.0'), grpc(t, target, '0.3')]
  const state = async (task: string) => (await app.a2aTasks.store.get(task))?.task.status.state

  /** Runs `op` through every binding (of `among`) and checks they agree; answers the results. */
  async function same<T> (what: string, op: (b: Binding) => Promise<T>, among = bindings): Promise<T[]> {
    const results: T[] = []
    for (const binding of among) results.push(await op(binding))
    for (let i = 1; i < among.length; i++) t.same(results[i], results[0], `${what}: ${among[i].name} as ${among[0].name}`)
    return results
  }

  // Send, blocking: completed; the task each one made is readable through every other.
  const sent = await same('send', async b => { const { id: _id, ...rest } = await b.send('hi', true); return rest })
  t.same(sent[0], { state: 'completed' })
  const made: string[] = []
  for (const binding of bindings) made.push((await binding.send('x', true)).id)
  for (const task of made) await same(`get ${task}`, b => b.get(task))

  // Send without waiting, then cancel: canceled; a second cancel: -32002 everywhere.
  const waiting: string[] = []
  for (const binding of bindings) {
    const started = await binding.send('wait', false)
    t.match(started, { state: /^(submitted|in_progress)$/ }, `${binding.name}: an immediate answer`)
    waiting.push(started.id)
  }
  for (const task of waiting) await until(async () => await state(task) === 'in_progress')
  const canceled = await Promise.all(bindings.map((b, i) => b.cancel(waiting[i])))
  t.same(canceled, bindings.map(() => ({ state: 'canceled' })), 'cancel: canceled, through each')
  await same('cancel again', b => b.cancel(waiting[0]))
  t.same(await bindings[0].cancel(waiting[0]), { error: -32002 })

  // Errors: an unknown task, and a bad message, are the same class everywhere.
  t.same((await same('get unknown', b => b.get('nope')))[0], { error: -32001 })
  t.same((await same('cancel unknown', b => b.cancel('nope')))[0], { error: -32001 })
  t.same((await same('subscribe unknown', b => b.subscribe('nope')))[0], { error: -32001 })
  t.same((await same('push on unknown', b => b.pushSet('nope', `${hook.url}/n`)))[0], { error: -32001 })

  // List by context: the same ids, newest first (every binding that has the operation).
  const ctx = `ctx-${++n}`
  for (let i = 0; i < 3; i++) await bindings[i].send(`l${i}`, true, ctx)
  const listing = bindings.filter(b => b.list !== undefined)
  t.equal(listing.length, 5)
  t.equal(((await same('list', b => (b.list as NonNullable<Binding['list']>)(ctx), listing))[0] as string[]).length, 3)

  // Streams: the same states in the same order.
  t.same((await same('stream', b => b.stream('s')))[0], ['submitted', 'in_progress', 'completed'])
  // Subscribe to an ended task: v0.3 answers its snapshot and ends, v1.0 refuses it (-32004): per version, alike per binding.
  const ended = waiting[0]
  const subscribed = await Promise.all(bindings.map(b => b.subscribe(ended)))
  t.same(subscribed[0], ['canceled'])
  t.same(subscribed[3], subscribed[0], 'REST v0.3 as JSON-RPC v0.3')
  t.same(subscribed[5], subscribed[0], 'gRPC v0.3 as JSON-RPC v0.3')
  t.same(subscribed[1], { error: -32004 })
  t.same(subscribed[2], subscribed[1], 'REST v1.0 as JSON-RPC v1.0')
  t.same(subscribed[4], subscribed[1], 'gRPC v1.0 as JSON-RPC v1.0')

  // Webhooks: a config made through each binding on its own task, the same life cycle, the same deliveries.
  const tasks: string[] = []
  for (const [i, binding] of bindings.entries()) {
    const task = (await binding.send('wait', false)).id
    tasks.push(task)
    t.same(await binding.pushSet(task, `${hook.url}/b${i}`), { ok: true })
    t.same(await binding.pushIds(task), ['hook'])
  }
  for (const task of tasks) await until(async () => await state(task) === 'in_progress')
  for (const [i, binding] of bindings.entries()) await binding.cancel(tasks[i])
  await until(() => bindings.every((_b, i) => hook.received.some(r => r.path === `/b${i}` && /cancel/i.test(r.raw))))
  const delivered = bindings.map((_b, i) => hook.received.filter(r => r.path === `/b${i}`)
    .map(r => stored((r.body.task ?? r.body).status.state)))
  for (let i = 1; i < bindings.length; i++) t.same(delivered[i], delivered[0], `webhooks: ${bindings[i].name} as ${bindings[0].name}`)
  t.equal(delivered[0][delivered[0].length - 1], 'canceled')
})
