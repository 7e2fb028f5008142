import {
  ClientFactory, ClientFactoryOptions, type CallInterceptor, type Client
} from '@a2a-js/sdk-v1/client'
import { GrpcTransportFactory } from '@a2a-js/sdk-v1/client/grpc'
import {
  CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest, ListTasksRequest, SendMessageRequest,
  SubscribeToTaskRequest, TaskPushNotificationConfig, TaskState, type StreamResponse, type Task
} from '@a2a-js/sdk-v1'
import type { Test } from 'tap'
import { until, waitOrEchoInTwo } from '../helper.js'

// The official v1.x client (@a2a-js/sdk 1.x) as the interop suites drive it: every v1.0 operation through the
// client's own API, over whichever binding the client was made for (JSON-RPC, HTTP+JSON, gRPC).

let n = 0
/** A fresh message id. */
export const nextId = (prefix: string): string => `${prefix}-${++n}`
/** A SendMessage request of a user's text. */
export const sendRequest = (text: string, extra: Record<string, unknown> = {}, configuration: Record<string, unknown> = {}): SendMessageRequest =>
  SendMessageRequest.fromJSON({ message: { messageId: `v1-${++n}`, role: 'ROLE_USER', parts: [{ text }], ...extra }, configuration })

/** The text of a part, from the client's oneof form. */
export function textOf (task: Task): string {
  return task.artifacts.flatMap(a => a.parts.map(p => p.content?.$case === 'text' ? p.content.value : '')).join('')
}

/** An executor that echoes in two chunks, or waits for cancel on "wait". */
export const executor = waitOrEchoInTwo

export async function collect (events: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = []
  for await (const event of events) out.push(event)
  return out
}

/** Headers on every call the client makes (an interceptor: the card fetch needs none). */
export function withHeaders (headers: Record<string, string>): CallInterceptor {
  return {
    async before (args) { args.options = { ...args.options, serviceParameters: { ...args.options?.serviceParameters, ...headers } } },
    async after () {}
  }
}

/** The binding a client is made for: the card's first (JSON-RPC), or the one named. */
export type Binding = 'HTTP+JSON' | 'GRPC'

/**
 * The 1.x client from the card, with default options (JSON-RPC, the card's first binding), or over HTTP+JSON or
 * gRPC (its transport is not among the defaults: it is given, as a user of it does).
 */
export async function v1Client (base: string, headers: Record<string, string> = {}, binding?: Binding): Promise<Client> {
  const clientConfig = { interceptors: [withHeaders(headers)] }
  const options = binding === undefined
    ? { clientConfig }
    : binding === 'GRPC'
      ? { clientConfig, transports: [...ClientFactoryOptions.default.transports ?? [], new GrpcTransportFactory()], preferredTransports: [binding] }
      : { clientConfig, preferredTransports: [binding] }
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, options)).createFromUrl(base)
}

/** The gRPC status of an A2A error, per HTTP status of its REST form (v1.0 §5.4). */
const GRPC_STATUS: Readonly<Record<number, number>> = { 400: 9, 404: 5 }

/** An error of the client: over JSON-RPC it carries the code (`envelopeCode`), over REST the HTTP status, over gRPC the status code. */
export const clientError = (client: Client, name: string, code: number, http: number) => {
  const transport = (client.transport as object).constructor.name
  if (transport.includes('RestTransport')) return { name, statusCode: http }
  if (isGrpc(client)) return { name, status: GRPC_STATUS[http] }
  return { name, envelopeCode: code }
}

/** Whether the client went over gRPC (its errors are the typed ones, streams' too). */
const isGrpc = (client: Client): boolean => (client.transport as object).constructor.name.includes('GrpcTransport')

/** Every v1.0 operation, as a user of the client would drive it. */
export async function driveEverything (t: Test, client: Client, tasks: { state: (id: string) => Promise<string | undefined> }): Promise<void> {
  t.equal(client.protocolVersion, '1.0', 'the client picked the v1.0 interface of the card')
  t.ok(client.transport instanceof Object)

  const sent = await client.sendMessage(sendRequest('hi')) as Task
  t.equal(sent.status?.state, TaskState.TASK_STATE_COMPLETED)
  t.equal(textOf(sent), 'echo: hi')

  // Stream: every event the task makes.
  const events = await collect(client.sendMessageStream(sendRequest('stream')))
  t.same(events.map(e => e.payload?.$case), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  const last = events[events.length - 1].payload
  t.equal(last?.$case === 'statusUpdate' ? last.value.status?.state : undefined, TaskState.TASK_STATE_COMPLETED)
  const streamed = events[0].payload?.$case === 'task' ? events[0].payload.value.id : ''

  // Get, with historyLength.
  const got = await client.getTask(GetTaskRequest.fromJSON({ id: streamed, historyLength: 0 }))
  t.equal(got.id, streamed)
  t.same(got.history, [])
  t.equal((await client.getTask(GetTaskRequest.fromJSON({ id: streamed }))).history.length, 1)

  // List, with paging and filters.
  const ctx = `ctx-${++n}`
  for (let i = 0; i < 3; i++) await client.sendMessage(sendRequest(`list ${i}`, { contextId: ctx }))
  const page = await client.listTasks(ListTasksRequest.fromJSON({ contextId: ctx, pageSize: 2 }))
  t.equal(page.tasks.length, 2)
  t.equal(page.pageSize, 2)
  t.equal(page.totalSize, 3)
  t.not(page.nextPageToken, '')
  const rest = await client.listTasks(ListTasksRequest.fromJSON({ contextId: ctx, pageSize: 2, pageToken: page.nextPageToken, includeArtifacts: true }))
  t.equal(rest.tasks.length, 1)
  t.equal(rest.nextPageToken, '')
  t.equal(textOf(rest.tasks[0]), 'echo: list 0')
  const done = await client.listTasks(ListTasksRequest.fromJSON({ contextId: ctx, status: 'TASK_STATE_COMPLETED' }))
  t.equal(done.totalSize, 3)

  // Subscribe (live), then cancel; subscribe to the now terminal task.
  const waiting = await client.sendMessage(sendRequest('wait', {}, { returnImmediately: true })) as Task
  await until(async () => await tasks.state(waiting.id) === 'in_progress')
  const subscription = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: waiting.id }))
  // The first event, the task as it stands, says the subscription is live: nothing after it can be missed.
  const first = await subscription.next()
  t.equal(first.value?.payload?.$case, 'task')
  const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: waiting.id }))
  t.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED)
  const followed = [first.value as StreamResponse, ...await collect(subscription)]
  const end = followed[followed.length - 1].payload
  t.equal(end?.$case === 'statusUpdate' ? end.value.status?.state : end?.$case === 'task' ? end.value.status?.state : undefined,
    TaskState.TASK_STATE_CANCELED)
  const terminal = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: waiting.id }))).then(() => null, (err: Error) => err)
  // Over JSON-RPC the error is an SSE event (the client wraps it as the cause); over REST a plain HTTP error; over
  // gRPC the stream's status.
  const refusal = isGrpc(client) ? terminal : (terminal as Error & { cause?: unknown })?.cause ?? terminal
  t.match(refusal, clientError(client, 'UnsupportedOperationError', -32004, 400), 'a terminal task: UnsupportedOperation')
  await t.rejects(client.cancelTask(CancelTaskRequest.fromJSON({ id: waiting.id })), clientError(client, 'TaskNotCancelableError', -32002, 400))
  await t.rejects(client.getTask(GetTaskRequest.fromJSON({ id: 'nope' })), clientError(client, 'TaskNotFoundError', -32001, 404))

  // The four push config operations.
  const created = await client.createTaskPushNotificationConfig(TaskPushNotificationConfig.fromJSON({
    taskId: sent.id, url: 'https://hooks.example.com/a', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' }
  }))
  t.equal(created.id, 'default')
  t.equal(created.authentication?.scheme, 'Bearer')
  t.equal(created.authentication?.credentials, '', 'credentials are never returned')
  await client.createTaskPushNotificationConfig(TaskPushNotificationConfig.fromJSON({ taskId: sent.id, id: 'mine', url: 'https://hooks.example.com/b' }))
  const one = await client.getTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'mine' })
  t.equal(one.url, 'https://hooks.example.com/b')
  const listed = await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: sent.id }))
  t.same(listed.configs.map(c => c.id), ['default', 'mine'])
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'mine' })
  const after = await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: sent.id }))
  t.same(after.configs.map(c => c.id), ['default'])
}

/** A task's state as the v1.0 client reads it, in the stored spelling `driveEverything` waits for. */
export const readState = (client: Client) => async (id: string) => {
  const task = await client.getTask(GetTaskRequest.fromJSON({ id }))
  return task.status?.state === TaskState.TASK_STATE_WORKING ? 'in_progress' : String(task.status?.state)
}
