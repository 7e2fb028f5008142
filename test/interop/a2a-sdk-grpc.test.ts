import { ClientFactory, ClientFactoryOptions, type Client } from '@a2a-js/sdk-v1/client'
import { GrpcTransportFactory } from '@a2a-js/sdk-v1/client/grpc'
import {
  CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
  TaskState, type AgentCard, type Task
} from '@a2a-js/sdk-v1'
import t, { type Test } from 'tap'
import { WAIT_OR_ECHO_IN_TWO_MODULE, listenGrpc, serve, until } from '../helper.js'
import { freePort } from '../../scripts/redis-server.js'
import { collect, driveEverything, executor, readState, sendRequest, textOf, v1Client, withHeaders } from './sdk-v1.js'

// The official v1.x client (@a2a-js/sdk 1.x) over its gRPC transport (CONTRACT.md §13): it reads the card, picks the
// GRPC interface, hands its URL as it is to grpc-js as the channel's target, and drives every v1.0 operation as it
// does over the other bindings. Every server here lists the card's default URL (`advertised_url` empty): `host:port`.

/** The plugin with the gRPC binding on, and the card's default gRPC URL (no `advertised_url`). */
const listenDefault = (t: Test) => listenGrpc(t, { executor, config: { protocol: { grpc: { advertised_url: '' } } } })

/** The URLs of the card's GRPC entries. */
async function grpcUrls (url: string): Promise<string[]> {
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json() as AgentCard
  return card.supportedInterfaces.filter(i => i.protocolBinding === 'GRPC').map(i => i.url)
}

t.test('@a2a-js/sdk 1.x over its gRPC transport, from the card\'s default URL, drives every v1.0 operation', async t => {
  const { url, target } = await listenDefault(t)
  t.same(await grpcUrls(url), [target, target], 'the default is <host>:<port>, for both versions')
  const client = await v1Client(url, {}, 'GRPC')
  t.match((client.transport as object).constructor.name, /^GrpcTransport/, 'the gRPC transport, from the card\'s GRPC 1.0 entry')
  await driveEverything(t, client, { state: readState(client) })
})

t.test('a grpc:// URL, the old default, is one @a2a-js/sdk 1.x cannot dial: advertised_url must stay a gRPC target', async t => {
  const port = await freePort()
  const { url } = await listenGrpc(t, { executor, config: { protocol: { grpc: { port, advertised_url: `grpc://127.0.0.1:${port}` } } } })
  t.same(await grpcUrls(url), [`grpc://127.0.0.1:${port}`, `grpc://127.0.0.1:${port}`])
  const client = await v1Client(url, {}, 'GRPC')
  await t.rejects(client.getTask(GetTaskRequest.fromJSON({ id: 'nope' })),
    { message: `gRPC error for getTask: 14 Name resolution failed for target dns:grpc://127.0.0.1:${port}` }, 'the issue\'s error, though the port serves')
})

/** The 1.x client over its v0.3 gRPC transport (`legacyCompat`): the card's GRPC 0.3 entry only, so it is the one picked. */
async function legacyClient (url: string, headers: Record<string, string> = {}): Promise<Client> {
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json() as AgentCard
  const grpc03 = card.supportedInterfaces.filter(i => i.protocolBinding === 'GRPC' && i.protocolVersion === '0.3')
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    clientConfig: { interceptors: [withHeaders(headers)] },
    transports: [new GrpcTransportFactory({ legacyCompat: { enabled: true } })]
  }))
  return factory.createFromAgentCard({ ...card, supportedInterfaces: grpc03 })
}

t.test('@a2a-js/sdk 1.x over its v0.3 gRPC transport (legacyCompat), from the card\'s default URL, drives every v0.3 operation of a2a.v1.A2AService', async t => {
  const { app, url } = await listenDefault(t)
  const client = await legacyClient(url)
  t.match((client.transport as object).constructor.name, /LegacyGrpcTransport/)
  t.equal(client.protocolVersion, '0.3')

  const sent = await client.sendMessage(sendRequest('hi')) as Task
  t.equal(sent.status?.state, TaskState.TASK_STATE_COMPLETED)
  t.equal(textOf(sent), 'echo: hi')
  t.ok(sent.status?.timestamp, 'the status timestamp travels as a Timestamp')

  const events = await collect(client.sendMessageStream(sendRequest('stream')))
  t.same(events.map(e => e.payload?.$case), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  const streamed = events[0].payload?.$case === 'task' ? events[0].payload.value.id : ''
  t.equal((await client.getTask(GetTaskRequest.fromJSON({ id: streamed }))).status?.state, TaskState.TASK_STATE_COMPLETED)

  // Subscribe (TaskSubscription) to a waiting task, then cancel it.
  const waiting = await client.sendMessage(sendRequest('wait', {}, { returnImmediately: true })) as Task
  await until(async () => (await app.a2aTasks.store.get(waiting.id))?.task.status.state === 'in_progress')
  const subscription = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: waiting.id }))
  t.equal((await subscription.next()).value?.payload?.$case, 'task', 'the subscription is live')
  const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: waiting.id }))
  t.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED)
  const rest = await collect(subscription)
  const end = rest[rest.length - 1].payload
  t.equal(end?.$case === 'statusUpdate' ? end.value.status?.state : undefined, TaskState.TASK_STATE_CANCELED)
  await t.rejects(client.cancelTask(CancelTaskRequest.fromJSON({ id: waiting.id })), { name: 'TaskNotCancelableError', status: 9 })
  await t.rejects(client.getTask(GetTaskRequest.fromJSON({ id: 'nope' })), { name: 'TaskNotFoundError', status: 5 })

  // The push config operations, named as the v0.3 proto names them.
  const created = await client.createTaskPushNotificationConfig(TaskPushNotificationConfig.fromJSON({
    taskId: sent.id, id: 'mine', url: 'https://hooks.example.com/a', token: 'tok'
  }))
  t.equal(created.id, 'mine')
  t.equal(created.taskId, sent.id)
  const one = await client.getTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'mine' })
  t.equal(one.url, 'https://hooks.example.com/a')
  t.same((await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: sent.id }))).configs.map(c => c.id), ['mine'])
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'mine' })
  t.same((await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: sent.id }))).configs, [])
})

t.test('the standalone server serves gRPC from its config file at the card\'s default URL, and drains it on SIGTERM', async t => {
  const port = await freePort()
  t.testdir({
    'agent.yml': `agent:\n  name: Standalone\n  executor: ./echo.js\nserver:\n  shutdown_timeout: 2\nprotocol:\n  grpc:\n    enabled: true\n    port: ${port}\n`,
    'echo.js': WAIT_OR_ECHO_IN_TWO_MODULE
  })
  const served = await serve(t, ['--config', 'agent.yml'])
  t.ok(served.logs.some(line => line.includes('gRPC binding listening')), 'the start says where gRPC listens')
  t.same(await grpcUrls(served.url), [`127.0.0.1:${port}`, `127.0.0.1:${port}`], 'no advertised_url: server.host and the port')
  const client = await v1Client(served.url, {}, 'GRPC')
  t.match((client.transport as object).constructor.name, /^GrpcTransport/)
  await driveEverything(t, client, { state: readState(client) })
  // A stream open when the server is told to stop ends with its task's last state.
  const waiting = await client.sendMessage(sendRequest('wait', {}, { returnImmediately: true })) as Task
  const subscription = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: waiting.id }))
  t.equal((await subscription.next()).value?.payload?.$case, 'task')
  served.child.kill('SIGTERM')
  const rest = await collect(subscription)
  const last = rest[rest.length - 1]?.payload
  t.equal(last?.$case === 'task' ? last.value.status?.state : last?.$case === 'statusUpdate' ? last.value.status?.state : undefined,
    TaskState.TASK_STATE_FAILED, 'the drain failed the task and the stream said so')
  t.equal(await served.exited, 0)
  await t.rejects(client.getTask(GetTaskRequest.fromJSON({ id: waiting.id }), { signal: AbortSignal.timeout(2000) } as any), 'the gRPC port is closed')
})
