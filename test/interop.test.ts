// Interoperability: every method driven through the official @a2a-js/sdk client (0.3.x), against the standalone
// server in the `a2a` dialect over real HTTP. What the SDK parses and surfaces is what an A2A client sees.
import type { JSONRPCResponse, Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk'
import {
  A2AClient, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, TaskNotCancelableError, TaskNotFoundError
} from '@a2a-js/sdk/client'
import t, { type Test } from 'tap'
import { createServer } from '../server.js'
import { validateConfig } from '../services/config/load.js'
import { signingKey, verify } from '../services/push/signing.js'
import { logCapture, receiver, until } from './helper.js'

type Rpc<T> = { result: T } | { error: { code: number, message: string, data?: unknown } }
type StreamEvent = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent

const SECRET = 'whsec_aW50ZXJvcC1zaWduaW5nLXNlY3JldA=='
const API_KEY = 'sdk-key-0123456789'
// The built-in agent holds each task this long: long enough that only tasks/cancel ends one.
const LONG_DELAY_MS = 600_000

let n = 0
const message = (text: string, extra: Record<string, unknown> = {}) =>
  ({ kind: 'message' as const, role: 'user' as const, messageId: `interop-${++n}`, parts: [{ kind: 'text' as const, text }], ...extra })

/** The result of an A2AClient call; fails with the JSON-RPC error when there is one. */
function ok<T> (res: Rpc<T>): T {
  if ('error' in res) throw new Error(`JSON-RPC error ${res.error.code}: ${res.error.message}`)
  return res.result
}

/** The JSON-RPC error code of an A2AClient call, or undefined when it succeeded. */
function code (res: Rpc<unknown>): number | undefined {
  return 'error' in res ? res.error.code : undefined
}

/** A method outside the A2A core, through the SDK's callExtensionMethod; fails on a JSON-RPC error. */
async function extension (client: A2AClient, method: string, params: object): Promise<any> {
  return ok(await client.callExtensionMethod<object, JSONRPCResponse>(method, params) as Rpc<unknown>)
}

/** The standalone server (`createServer`) on a free 127.0.0.1 port, a2a dialect, with `config` on top. */
async function start (t: Test, config: Record<string, any> = {}): Promise<{ url: string, cardUrl: string }> {
  const full = validateConfig({
    ...config,
    agent: { name: 'Interop Agent', ...config.agent },
    protocol: { dialect: 'a2a' },
    push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], signing_secret: SECRET, retry_delay: 0.01, timeout: 2 } }
  })
  const app = await createServer(full, { logStream: logCapture().stream })
  t.teardown(() => app.close())
  const url = `${await app.listen({ host: '127.0.0.1', port: 0 })}/`
  return { url, cardUrl: `${url}.well-known/agent-card.json` }
}

/** Reads a whole SDK stream. */
async function collect (events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = []
  for await (const event of events) out.push(event)
  return out
}

/** Sends a non-blocking message to the slow agent and waits until the task is working. */
async function startLongTask (client: A2AClient): Promise<Task> {
  const task = ok(await client.sendMessage({ message: message('take your time'), configuration: { blocking: false } })) as Task
  await until(async () => (ok(await client.getTask({ id: task.id })) as Task).status.state === 'working')
  return task
}

t.test('the SDK reads the card; message/send gives a completed task with the Agent-result artifact', async t => {
  const { url, cardUrl } = await start(t)
  const client = await A2AClient.fromCardUrl(cardUrl)
  const card = await client.getAgentCard()
  t.match(card, { protocolVersion: '0.3.0', url, preferredTransport: 'JSONRPC', capabilities: { streaming: true, pushNotifications: true } })

  const task = ok(await client.sendMessage({ message: message('hello sdk') })) as Task
  t.equal(task.kind, 'task')
  t.equal(task.status.state, 'completed')
  t.equal(task.artifacts?.length, 1)
  t.match(task.artifacts?.[0], { name: 'Agent-result', parts: [{ kind: 'text', text: 'hello sdk' }] })
  t.equal(task.history?.[0].messageId, `interop-${n}`)
})

t.test('message/stream events are typed as the SDK expects, ending with one final status-update', async t => {
  const { cardUrl } = await start(t)
  const client = await A2AClient.fromCardUrl(cardUrl)
  const events = await collect(client.sendMessageStream({ message: message('stream me') }))
  const [first, ...rest] = events
  t.equal(first.kind, 'task', 'the Task comes first')
  const task = first as Task
  t.equal(task.status.state, 'submitted')
  for (const event of rest) {
    t.ok(event.kind === 'status-update' || event.kind === 'artifact-update', `event kind ${event.kind}`)
    const update = event as TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    t.equal(update.taskId, task.id)
    t.equal(update.contextId, task.contextId)
  }
  const statuses = rest.filter(e => e.kind === 'status-update') as TaskStatusUpdateEvent[]
  t.same(statuses.map(s => [s.status.state, s.final]), [['working', false], ['completed', true]])
  t.equal(events[events.length - 1], statuses[1], 'the final status-update is the last event')
  const artifacts = rest.filter(e => e.kind === 'artifact-update') as TaskArtifactUpdateEvent[]
  t.ok(artifacts.length >= 1)
  t.equal(artifacts[0].artifact.name, 'Agent-result')
  t.equal(artifacts[0].append, false, 'the first chunk creates the artifact')
  t.equal(artifacts[artifacts.length - 1].lastChunk, true)
  t.equal(artifacts.flatMap(a => a.artifact.parts).map(p => (p.kind === 'text' ? p.text : '')).join(''), 'stream me')
})

t.test('tasks/get cuts the history with historyLength; tasks/cancel and tasks/resubscribe work on a long task', async t => {
  const { cardUrl } = await start(t, { agent: { delay_ms: LONG_DELAY_MS } })
  const client = await A2AClient.fromCardUrl(cardUrl)
  const task = await startLongTask(client)
  const joined = ok(await client.sendMessage({ message: message('one more', { taskId: task.id }), configuration: { blocking: false } })) as Task
  t.equal(joined.id, task.id, 'a message naming a running task joins it')

  const full = ok(await client.getTask({ id: task.id })) as Task
  const userIds = (full.history ?? []).filter(m => m.role === 'user').map(m => m.messageId)
  t.same(userIds.slice(-2), [`interop-${n - 1}`, `interop-${n}`])
  const last = ok(await client.getTask({ id: task.id, historyLength: 1 })) as Task
  t.same(last.history, (full.history ?? []).slice(-1))
  const none = ok(await client.getTask({ id: task.id, historyLength: 0 })) as Task
  t.same(none.history, [])

  const stream = client.resubscribeTask({ id: task.id })
  // The server subscribes before it reads the snapshot it sends first: once that arrives, no later event is missed.
  const snapshot = await stream.next()
  t.match(snapshot.value, { kind: 'task', id: task.id, status: { state: 'working' } })
  const canceled = ok(await client.cancelTask({ id: task.id })) as Task
  t.equal(canceled.status.state, 'canceled')
  const events = await collect({ [Symbol.asyncIterator]: () => stream })
  t.match(events[events.length - 1], { kind: 'status-update', taskId: task.id, final: true, status: { state: 'canceled' } })

  t.equal(code(await client.cancelTask({ id: task.id })), -32002, 'a canceled task cannot be canceled again')
  t.equal(code(await client.getTask({ id: 'no-such-task' })), -32001)
  t.equal(code(await client.cancelTask({ id: 'no-such-task' })), -32001)
  await t.rejects(collect(client.resubscribeTask({ id: 'no-such-task' })), /Code: -32001/)
})

t.test('tasks/list, status, capabilities and list_directory go through callExtensionMethod', async t => {
  const root = t.testdir({ 'notes.txt': 'hi', docs: {} })
  const { cardUrl } = await start(t, { tools: { list_directory: { root } } })
  const client = await A2AClient.fromCardUrl(cardUrl)
  const task = ok(await client.sendMessage({ message: message('listed') })) as Task

  const listed = await extension(client, 'tasks/list', { pageSize: 10 })
  t.same(listed.tasks.map((x: Task) => x.id), [task.id])
  t.equal(listed.nextPageToken, '')
  const completed = await extension(client, 'tasks/list', { state: 'completed', contextId: task.contextId })
  t.equal(completed.tasks.length, 1)

  t.match(await extension(client, 'status', {}), { status: 'ok', agent: 'Interop Agent' })
  const capabilities = await extension(client, 'capabilities', {})
  t.equal(capabilities.protocolVersion, '0.3.0')
  t.ok(capabilities.methods.some((m: any) => m.name === 'tasks/pushNotificationConfig/set' && m.allowed))
  const dir = await extension(client, 'list_directory', { path: '.' })
  t.same(dir.entries.map((e: any) => [e.name, e.type]), [['docs', 'directory'], ['notes.txt', 'file']])

  t.equal(code(await client.callExtensionMethod('list_directory', { path: '../..' })), -32602)
  t.equal(code(await client.callExtensionMethod('tasks/list', { pageSize: 0 })), -32602)
  t.equal(code(await client.callExtensionMethod('no/such/method', {})), -32601)
})

t.test('push configs: set, get, list and delete through the SDK, and a signed delivery reaches the receiver', async t => {
  const hook = await receiver(t)
  const { cardUrl } = await start(t, { agent: { delay_ms: LONG_DELAY_MS } })
  const client = await A2AClient.fromCardUrl(cardUrl)
  const task = await startLongTask(client)

  const first = ok(await client.setTaskPushNotificationConfig({
    taskId: task.id, pushNotificationConfig: { url: `${hook.url}/first`, token: 'tok-first' }
  }))
  t.same(first, { taskId: task.id, pushNotificationConfig: { id: 'default', url: `${hook.url}/first`, token: 'tok-first' } })
  const second = ok(await client.setTaskPushNotificationConfig({
    taskId: task.id,
    pushNotificationConfig: { id: 'second', url: `${hook.url}/second`, authentication: { schemes: ['Bearer'], credentials: 'cred-SECRET' } }
  }))
  t.same(second.pushNotificationConfig.authentication, { schemes: ['Bearer'] }, 'credentials are never returned')

  t.equal(ok(await client.getTaskPushNotificationConfig({ id: task.id })).pushNotificationConfig.id, 'second', 'the most recently set')
  // The SDK types get's params as TaskIdParams; the A2A schema also allows the config id.
  const byId = await client.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'default' } as { id: string })
  t.equal(ok(byId).pushNotificationConfig.url, `${hook.url}/first`)
  t.same(ok(await client.listTaskPushNotificationConfig({ id: task.id })).map(c => c.pushNotificationConfig.id), ['default', 'second'])
  t.equal(ok(await client.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'second' })), null)
  t.same(ok(await client.listTaskPushNotificationConfig({ id: task.id })).map(c => c.pushNotificationConfig.id), ['default'])
  t.equal(code(await client.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'second' })), -32001)
  t.equal(code(await client.listTaskPushNotificationConfig({ id: 'no-such-task' })), -32001)
  t.equal(code(await client.setTaskPushNotificationConfig({ taskId: task.id, pushNotificationConfig: { url: 'ftp://example.com/' } })), -32602)

  t.equal((ok(await client.cancelTask({ id: task.id })) as Task).status.state, 'canceled')
  await until(() => hook.received.some(r => r.body?.status?.state === 'canceled'))
  const delivery = hook.received.find(r => r.body?.status?.state === 'canceled')
  t.equal(delivery?.path, '/first')
  t.equal(delivery?.body.id, task.id)
  t.equal(delivery?.headers['x-a2a-notification-token'], 'tok-first')
  t.ok(delivery !== undefined && verify(signingKey(SECRET), delivery.headers, delivery.raw), 'the signature verifies')
  t.notOk(hook.received.some(r => r.path === '/second'), 'the deleted config gets nothing')
})

t.test('a push config given with message/send gets the task states as they happen', async t => {
  const hook = await receiver(t)
  const { cardUrl } = await start(t)
  const client = await A2AClient.fromCardUrl(cardUrl)
  const task = ok(await client.sendMessage({
    message: message('notify me'),
    configuration: { pushNotificationConfig: { url: `${hook.url}/inline`, token: 'tok-inline' } }
  })) as Task
  t.equal(task.status.state, 'completed')
  await until(() => hook.received.some(r => r.body?.status?.state === 'completed'))
  t.same(hook.received.map(r => r.body.status.state), ['working', 'completed'], 'in order, in the a2a dialect')
  for (const r of hook.received) {
    t.equal(r.headers['x-a2a-notification-token'], 'tok-inline')
    t.ok(verify(signingKey(SECRET), r.headers, r.raw))
  }
})

t.test('the SDK ClientFactory client works too, and surfaces the A2A errors as its typed errors', async t => {
  const { url } = await start(t, { agent: { delay_ms: LONG_DELAY_MS } })
  const client = await new ClientFactory().createFromUrl(url)
  const task = await client.sendMessage({ message: message('factory'), configuration: { blocking: false } }) as Task
  t.equal(task.kind, 'task')
  await until(async () => (await client.getTask({ id: task.id })).status.state === 'working')
  t.equal((await client.cancelTask({ id: task.id })).status.state, 'canceled')
  await t.rejects(client.cancelTask({ id: task.id }), TaskNotCancelableError)
  await t.rejects(client.getTask({ id: 'no-such-task' }), TaskNotFoundError)
})

t.test('with API keys on, the SDK client sends the key through a custom fetch; without one it gets -32010', async t => {
  const { url, cardUrl } = await start(t, {
    security: { enabled: true, auth: { api_key: { keys: [{ key: API_KEY, scopes: ['agent:read'], id: 'sdk' }] } } }
  })
  const withKey: typeof fetch = async (input, init) =>
    await fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), 'X-API-Key': API_KEY } })
  const client = await A2AClient.fromCardUrl(cardUrl, { fetchImpl: withKey })
  t.match(await client.getAgentCard(), { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } })

  t.equal((ok(await client.sendMessage({ message: message('keyed') })) as Task).status.state, 'completed')
  const events = await collect(client.sendMessageStream({ message: message('keyed stream') }))
  t.match(events[events.length - 1], { kind: 'status-update', final: true, status: { state: 'completed' } })
  t.equal((await extension(client, 'capabilities', {})).agent, 'Interop Agent', 'agent:read allows capabilities')
  t.equal(code(await client.callExtensionMethod('list_directory', { path: '.' })), -32011, 'files:read is missing')

  const anonymous = await A2AClient.fromCardUrl(cardUrl)
  t.equal(code(await anonymous.sendMessage({ message: message('no key') })), -32010)
  await t.rejects(collect(anonymous.sendMessageStream({ message: message('no key') })), /401[\s\S]*Code: -32010/)

  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })]
  }))
  const modern = await factory.createFromUrl(url)
  t.equal((await modern.sendMessage({ message: message('factory keyed') }) as Task).status.state, 'completed')
})
