import { status as Status } from '@grpc/grpc-js'
import t from 'tap'
import type { AgentExecutor } from '../../index.js'
import { listenGrpc, logCapture, receiver, until, waitOrEchoInTwo } from '../helper.js'
import { grpcClients, metadataOf, rawUnary, statusDetails, streamAll, unary } from './grpc-client.js'
import { freePort } from '../../scripts/redis-server.js'

// The gRPC binding (CONTRACT.md §13) with a plain grpc-js client: auth from metadata with the HTTP bindings' schemes,
// scopes, limits and audit; a2a-version; errors as google.rpc.Status; bad input; health; the card; drain.

const executor = waitOrEchoInTwo

/** A stream's first message; the client then stops reading until it resumes (a listener of its own first). */
function firstThenPause (call: { once: (event: 'data', listener: (message: any) => void) => unknown, pause: () => unknown }): Promise<any> {
  return new Promise(resolve => call.once('data', message => { call.pause(); resolve(message) }))
}
const user = (text: string, extra: Record<string, unknown> = {}) => ({ messageId: `g-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }], ...extra })

t.test('errors are google.rpc.Status with ErrorInfo (and BadRequest for bad params) in grpc-status-details-bin', async t => {
  const { target } = await listenGrpc(t, { executor })
  const { v1, v03 } = grpcClients(t, target)
  const missing = await unary(v1, 'GetTask', { id: 'nope' })
  t.equal(missing.error?.code, Status.NOT_FOUND)
  t.match(missing.error?.details, /^Task not found/)
  t.match(statusDetails(missing.error as any), {
    code: Status.NOT_FOUND,
    details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }]
  })
  const bad = await unary(v1, 'GetTask', { id: 'x', historyLength: -1 })
  t.equal(bad.error?.code, Status.INVALID_ARGUMENT)
  t.match(statusDetails(bad.error as any).details, [{ reason: 'INVALID_PARAMS' }, { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'historyLength' }] }])
  // v0.3 names resources: a name that is not `tasks/{id}` is bad params, naming the field.
  const badName = await unary(v03, 'GetTask', { name: 'task/x' })
  t.equal(badName.error?.code, Status.INVALID_ARGUMENT)
  t.match(statusDetails(badName.error as any).details[1], { fieldViolations: [{ field: 'name', description: /tasks\/\{id\}/ }] })
  const v03Missing = await unary(v03, 'GetTask', { name: 'tasks/nope' })
  t.equal(v03Missing.error?.code, Status.NOT_FOUND)
  const noName = await unary(v03, 'GetTask', {})
  t.match(statusDetails(noName.error as any).details[1], { fieldViolations: [{ field: 'name' }] })
  t.equal((await unary(v03, 'DeleteTaskPushNotificationConfig', {})).error?.code, Status.INVALID_ARGUMENT, 'no name')
  const badConfig = await unary(v03, 'GetTaskPushNotificationConfig', { name: 'tasks/x/configs/y' })
  t.match(statusDetails(badConfig.error as any).details[1], { fieldViolations: [{ field: 'name', description: /pushNotificationConfigs/ }] })
  // historyLength: 0 is the proto's unset (all of it); N the last N.
  const sent = await unary(v03, 'SendMessage', { request: { messageId: 'h1', role: 'ROLE_USER', content: [{ text: 'hist' }] } })
  const name = `tasks/${sent.value.task.id}`
  t.same((await unary(v03, 'GetTask', { name, historyLength: 0 })).value?.history.map((m: any) => m.messageId), ['h1'])
  t.same((await unary(v03, 'GetTask', { name, historyLength: 1 })).value?.history.map((m: any) => m.messageId), ['h1'])
})

t.test('a2a-version metadata: an unknown version and the other service\'s version are refused; the right one passes', async t => {
  const { target } = await listenGrpc(t, { executor })
  const { v1, v03 } = grpcClients(t, target)
  const unknown = await unary(v1, 'SendMessage', { message: user('x') }, { 'a2a-version': '0.5' })
  t.equal(unknown.error?.code, Status.FAILED_PRECONDITION)
  t.match(statusDetails(unknown.error as any).details, [{ reason: 'VERSION_NOT_SUPPORTED' }])
  const crossed = await unary(v1, 'GetTask', { id: 'x' }, { 'a2a-version': '0.3' })
  t.equal(crossed.error?.code, Status.FAILED_PRECONDITION)
  t.match(crossed.error?.details, /a2a\.v1\.A2AService/, 'names the v0.3 service')
  const crossed03 = await unary(v03, 'GetTask', { name: 'tasks/x' }, { 'a2a-version': '1.0' })
  t.match(crossed03.error?.details, /lf\.a2a\.v1\.A2AService/)
  const ok = await unary(v1, 'SendMessage', { message: user('versioned') }, { 'a2a-version': '1.0.1' })
  t.equal(ok.value?.task?.status?.state, 'TASK_STATE_COMPLETED')
  const ok03 = await unary(v03, 'SendMessage', { request: { messageId: 'm03', role: 'ROLE_USER', content: [{ text: 'old' }] } }, { 'a2a-version': '0.3' })
  t.equal(ok03.value?.task?.status?.state, 'TASK_STATE_COMPLETED')
})

t.test('bad input: malformed protobuf, oversized messages, unknown enum numbers, missing fields; nothing is stored', async t => {
  const { app, target } = await listenGrpc(t, { executor, config: { server: { max_request_size: 4096 } } })
  const { v1, raw } = grpcClients(t, target)
  const garbage = await rawUnary(raw, '/lf.a2a.v1.A2AService/SendMessage', Buffer.from([0x12, 0x10, 0x01]))
  t.equal(garbage.error?.code, Status.INVALID_ARGUMENT)
  t.match(garbage.error?.details, /not a lf\.a2a\.v1\.SendMessageRequest message/)
  t.match(statusDetails(garbage.error as any).details, [{ reason: 'INVALID_PARAMS' }])
  const huge = await unary(v1, 'SendMessage', { message: user('x'.repeat(8192)) })
  t.equal(huge.error?.code, Status.RESOURCE_EXHAUSTED, 'above server.max_request_size')
  const role = await unary(v1, 'SendMessage', { message: { ...user('x'), role: 7 } })
  t.equal(role.error?.code, Status.INVALID_ARGUMENT, 'an enum number the proto does not define')
  t.match(statusDetails(role.error as any).details[0], { reason: 'INVALID_PARAMS', metadata: { detail: /role/ } })
  const state = await unary(v1, 'ListTasks', { status: 42 })
  t.equal(state.error?.code, Status.INVALID_ARGUMENT)
  const none = await unary(v1, 'SendMessage', {})
  t.equal(none.error?.code, Status.INVALID_ARGUMENT)
  t.match(statusDetails(none.error as any).details[1], { fieldViolations: [{ field: 'message' }] })
  const stream = await streamAll(v1, 'SendStreamingMessage', { message: { ...user('x'), parts: [] } })
  t.equal(stream.error?.code, Status.INVALID_ARGUMENT, 'a stream refused before its first message')
  t.same(stream.messages, [])
  t.equal((await app.a2aTasks.store.list({ pageSize: 10 })).tasks.length, 0, 'no task was made')
  const fine = await unary(v1, 'SendMessage', { message: user('still fine') })
  t.equal(fine.value?.task?.status?.state, 'TASK_STATE_COMPLETED', 'the server goes on')
})

t.test('with security on: metadata credentials, scopes by the twin, limits and the audit log, as over HTTP', async t => {
  const key = 'key-grpc-0123456789'
  const logs = logCapture()
  const { target, url } = await listenGrpc(t, {
    executor,
    config: {
      security: {
        enabled: true,
        auth: {
          api_key: { keys: [{ key, scopes: ['agent:read'], id: 'grpc-key' }] },
          bearer: { tokens: [{ token: 'tok-grpc-0123456789', user: 'bearer-user', scopes: [] }] }
        },
        method_scopes: { 'tasks/list': ['tasks:read'] },
        rate_limit: { requests_per_minute: 60, burst: 6, max_streams_per_principal: 1 }
      }
    }
  }, logs.stream)
  const { v1, v03 } = grpcClients(t, target)
  const none = await unary(v1, 'GetTask', { id: 'x' })
  t.equal(none.error?.code, Status.UNAUTHENTICATED)
  t.match(statusDetails(none.error as any).details, [{ reason: 'UNAUTHENTICATED' }])
  const wrong = await unary(v1, 'GetTask', { id: 'x' }, { 'x-api-key': 'key-wrong-0123456789' })
  t.equal(wrong.error?.code, Status.UNAUTHENTICATED)
  const sent = await unary(v1, 'SendMessage', { message: user('authed') }, { 'x-api-key': key })
  t.equal(sent.value?.task?.status?.state, 'TASK_STATE_COMPLETED')
  const bearer = await unary(v1, 'GetTask', { id: sent.value.task.id }, { authorization: 'Bearer tok-grpc-0123456789' })
  t.equal(bearer.error?.code, Status.NOT_FOUND, 'another principal\'s task is not found')
  const denied = await unary(v1, 'ListTasks', {}, { 'x-api-key': key })
  t.equal(denied.error?.code, Status.PERMISSION_DENIED, 'ListTasks needs tasks/list\'s scopes')
  t.match(statusDetails(denied.error as any).details, [{ reason: 'PERMISSION_DENIED' }])
  // v0.3 GetAgentCard: the public card without credentials, the extended one with them.
  const card = await unary(v03, 'GetAgentCard', {})
  const served = await (await fetch(`${url}/.well-known/agent-card.json`)).json() as any
  t.equal(card.value?.name, served.name)
  // (proto-loader's objects leave out an empty list: no scopes.)
  t.same(card.value?.security, [{ schemes: { apiKey: {} } }, { schemes: { bearer: {} } }], 'requirements as the proto\'s Security')
  t.notOk(card.value?.skills.some((s: any) => s.id.startsWith('tool-')))
  t.match(card.value?.securitySchemes, {
    apiKey: { scheme: 'apiKeySecurityScheme', apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
    bearer: { scheme: 'httpAuthSecurityScheme', httpAuthSecurityScheme: { scheme: 'bearer' } }
  }, 'its security schemes, as the proto\'s oneof')
  const extended = await unary(v03, 'GetAgentCard', {}, { 'x-api-key': key })
  t.ok(extended.value?.skills.some((s: any) => s.id === 'tool-capabilities'), 'the skills the key allows')
  const v1Card = await unary(v1, 'GetExtendedAgentCard', {}, { 'x-api-key': key })
  t.ok(v1Card.value?.supportedInterfaces.some((i: any) => i.protocolBinding === 'GRPC'))

  // One stream per principal: a second one is refused while the first is open.
  const waiting = await unary(v1, 'SendMessage', { message: user('wait'), configuration: { returnImmediately: true } }, { authorization: 'Bearer tok-grpc-0123456789' })
  const first = v1.SubscribeToTask({ id: waiting.value.task.id }, metadataOf({ authorization: 'Bearer tok-grpc-0123456789' }))
  first.on('error', () => {})
  await new Promise(resolve => first.once('data', resolve))
  const second = await streamAll(v1, 'SubscribeToTask', { id: waiting.value.task.id }, { authorization: 'Bearer tok-grpc-0123456789' })
  t.equal(second.error?.code, Status.RESOURCE_EXHAUSTED, 'max_streams_per_principal')
  first.cancel()
  await unary(v1, 'CancelTask', { id: waiting.value.task.id }, { authorization: 'Bearer tok-grpc-0123456789' })

  // The key's bucket (burst 6) runs out: RESOURCE_EXHAUSTED with retry-after.
  let limited
  for (let i = 0; i < 10 && limited === undefined; i++) {
    const r = await unary(v1, 'GetTask', { id: sent.value.task.id }, { 'x-api-key': key })
    if (r.error?.code === Status.RESOURCE_EXHAUSTED) limited = r.error
  }
  t.ok(limited, 'rate limited')
  t.match(limited?.metadata.get('retry-after'), [/^\d+$/])
  t.match(statusDetails(limited as any).details, [{ reason: 'RATE_LIMITED' }])

  const audit = logs.lines().filter(l => l.audit === true)
  t.ok(audit.some(l => l.msg === 'auth success' && l.principal === 'grpc-key' && l.method === 'lf.a2a.v1.A2AService/SendMessage' && l.ip === '127.0.0.1'))
  t.ok(audit.some(l => l.msg === 'scope denied' && l.method === 'lf.a2a.v1.A2AService/ListTasks'))
  t.ok(audit.some(l => l.msg === 'auth failure' && l.reason === 'credentials required'))
})

t.test('push notifications set over gRPC reach a real webhook receiver', async t => {
  const hook = await receiver(t)
  const { target } = await listenGrpc(t, { executor, config: { push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } } } })
  const { v1, v03 } = grpcClients(t, target)
  const sent = await unary(v1, 'SendMessage', { message: user('hook'), configuration: { taskPushNotificationConfig: { url: `${hook.url}/v1`, token: 't1' } } })
  t.equal(sent.value?.task?.status?.state, 'TASK_STATE_COMPLETED')
  await until(() => hook.received.some(r => r.body?.task?.status?.state === 'TASK_STATE_COMPLETED' || r.body?.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED'))
  t.equal(hook.received[0].headers['content-type'], 'application/a2a+json', 'a v1.0 config: v1.0 deliveries')
  // A v0.3 config made over the v0.3 service gets the v0.3 Task.
  const other = await unary(v03, 'SendMessage', { request: { messageId: 'm-hook', role: 'ROLE_USER', content: [{ text: 'wait' }] }, configuration: { blocking: false } })
  const id = other.value.task.id
  const made = await unary(v03, 'CreateTaskPushNotificationConfig', { parent: `tasks/${id}`, config: { pushNotificationConfig: { id: 'c03', url: `${hook.url}/v03` } } })
  t.equal(made.value?.name, `tasks/${id}/pushNotificationConfigs/c03`)
  await unary(v03, 'CancelTask', { name: `tasks/${id}` })
  await until(() => hook.received.some(r => r.path.endsWith('/v03') && r.body?.status?.state === 'canceled'))
  t.equal(hook.received.find(r => r.path.endsWith('/v03'))?.headers['content-type'], 'application/json')
})

t.test('health: grpc.health.v1 says SERVING for the server and both services once ready, NOT_FOUND for others', async t => {
  const { target } = await listenGrpc(t, { executor })
  const { health } = grpcClients(t, target)
  for (const service of ['', 'lf.a2a.v1.A2AService', 'a2a.v1.A2AService']) {
    t.same((await unary(health, 'Check', { service })).value, { status: 'SERVING' }, service || 'the server')
  }
  t.equal((await unary(health, 'Check', { service: 'other.Service' })).error?.code, Status.NOT_FOUND)
})

t.test('the card lists GRPC at both versions in supportedInterfaces only; advertised_url defaults to <host>:<port>', async t => {
  const { url, target } = await listenGrpc(t, { executor })
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json() as any
  t.same(card.supportedInterfaces.filter((i: any) => i.protocolBinding === 'GRPC'),
    [{ url: target, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { url: target, protocolBinding: 'GRPC', protocolVersion: '0.3' }])
  t.notOk(card.additionalInterfaces.some((i: any) => i.transport === 'GRPC'), 'never for v0.3 clients')
  const port = await freePort()
  const defaulted = await listenGrpc(t, { executor, config: { protocol: { grpc: { port, advertised_url: '' } } } })
  const defaultCard = await (await fetch(`${defaulted.url}/.well-known/agent-card.json`)).json() as any
  t.equal(defaultCard.supportedInterfaces.find((i: any) => i.protocolBinding === 'GRPC').url, `127.0.0.1:${port}`)
})

t.test('a client that goes away ends only its stream: the task goes on and the slot is given back', async t => {
  const { app, target } = await listenGrpc(t, { executor, config: { server: { max_streams: 1 } } })
  const { v1 } = grpcClients(t, target)
  const call = v1.SendStreamingMessage({ message: user('wait') })
  call.on('error', () => {})
  const first: any = await new Promise(resolve => call.once('data', resolve))
  const id = first.task.id
  const refused = await streamAll(v1, 'SubscribeToTask', { id })
  t.equal(refused.error?.code, Status.RESOURCE_EXHAUSTED, 'server.max_streams: 1 is taken')
  call.cancel()
  await until(() => app.a2aGrpc?.binding?.size === 0)
  t.equal((await app.a2aTasks.store.get(id))?.task.status.state, 'in_progress', 'the task goes on')
  // The one stream slot is free again.
  const again = streamAll(v1, 'SubscribeToTask', { id })
  await until(async () => app.a2aGrpc?.binding?.size === 1)
  t.same((await unary(v1, 'CancelTask', { id })).value?.status?.state, 'TASK_STATE_CANCELED')
  const { messages, error } = await again
  t.equal(error, undefined)
  t.equal(messages[0].task.id, id)
  t.equal(messages[messages.length - 1].statusUpdate?.status?.state, 'TASK_STATE_CANCELED')
})

t.test('shutdown drains: open streams get their task as it ended, then the server takes no calls', async t => {
  const { app, target } = await listenGrpc(t, { executor, config: { server: { shutdown_timeout: 1 } } })
  const { v1 } = grpcClients(t, target)
  const call = v1.SendStreamingMessage({ message: user('wait') })
  const messages: any[] = []
  const ended = new Promise<void>(resolve => { call.on('data', (m: any) => messages.push(m)); call.on('end', resolve); call.on('error', () => resolve()) })
  await until(() => messages.length >= 2)
  await app.close()
  await ended
  const last = messages[messages.length - 1]
  t.equal((last.task ?? last.statusUpdate)?.status?.state, 'TASK_STATE_FAILED', 'the drain failed the task, and the stream says so')
  const after = await unary(v1, 'GetTask', { id: messages[0].task.id })
  t.equal(after.error?.code, Status.UNAVAILABLE)
})

t.test('a client that stops reading is cut off past 1 MiB waiting for it, its HTTP/2 stream reset (RESOURCE_EXHAUSTED); the task completes', async t => {
  const chunk = 'x'.repeat(64 * 1024)
  const big: AgentExecutor = async function * () {
    for (let i = 0; i < 200; i++) yield { kind: 'artifact', parts: [{ kind: 'text', text: chunk }] }
  }
  const { app, target } = await listenGrpc(t, { executor: big })
  const { v1 } = grpcClients(t, target)
  const call = v1.SendStreamingMessage({ message: user('big') })
  const ended = new Promise<any>(resolve => { call.on('error', resolve); call.on('end', () => resolve(undefined)) })
  const got: unknown[] = [await firstThenPause(call)]
  await until(async () => (await app.a2aTasks.store.list({ pageSize: 1 })).tasks[0]?.task.status.state === 'completed', 1000)
  await until(() => app.a2aGrpc?.binding?.size === 0, 1000)
  t.pass('the server let the stream go')
  call.on('data', (message: unknown) => got.push(message))
  call.resume()
  const error = await ended
  t.equal(error?.code, Status.RESOURCE_EXHAUSTED)
  t.match(error?.details, /Bandwidth exhausted/, 'the stream was reset (ENHANCE_YOUR_CALM), dropping what it held')
  t.ok(got.length < 200, `${got.length} messages of the 200 artifacts' reached it`)
  const [task] = (await app.a2aTasks.store.list({ pageSize: 1 })).tasks
  t.equal(task.task.artifacts.length, 200)
})

t.test('a client that reads slowly gets every event: the stream waits for it, then goes on', async t => {
  const chunk = 'y'.repeat(64 * 1024)
  const some: AgentExecutor = async function * () {
    for (let i = 0; i < 8; i++) yield { kind: 'artifact', parts: [{ kind: 'text', text: chunk }] }
  }
  const { app, target } = await listenGrpc(t, { executor: some })
  const { v1 } = grpcClients(t, target)
  const call = v1.SendStreamingMessage({ message: user('some') })
  const ended = new Promise<any>(resolve => { call.on('error', resolve); call.on('end', () => resolve(undefined)) })
  const got: any[] = [await firstThenPause(call)]
  await until(async () => (await app.a2aTasks.store.list({ pageSize: 1 })).tasks[0]?.task.status.state === 'completed', 1000)
  call.on('data', (message: unknown) => got.push(message))
  call.resume()
  t.equal(await ended, undefined, 'ended with OK')
  t.equal(got.filter(m => m.artifactUpdate !== undefined).length, 8, 'every artifact')
  t.equal(got[got.length - 1].statusUpdate?.status?.state, 'TASK_STATE_COMPLETED')
})

t.test('tenancy: the card\'s tenant on the GRPC entries; a v1.0 request naming another tenant is INVALID_ARGUMENT naming `tenant`', async t => {
  const { url, target } = await listenGrpc(t, { executor, config: { protocol: { tenant: 'acme' } } })
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json() as any
  t.same(card.supportedInterfaces.filter((i: any) => i.protocolBinding === 'GRPC').map((i: any) => i.tenant), ['acme', 'acme'])
  const { v1 } = grpcClients(t, target)
  const other = await unary(v1, 'SendMessage', { tenant: 'other', message: user('x') })
  t.equal(other.error?.code, Status.INVALID_ARGUMENT)
  t.match(statusDetails(other.error as any).details[1], { fieldViolations: [{ field: 'tenant' }] })
  const ours = await unary(v1, 'SendMessage', { tenant: 'acme', message: user('mine') })
  t.equal(ours.value?.task?.status?.state, 'TASK_STATE_COMPLETED')
  t.equal((await unary(v1, 'GetTask', { tenant: 'acme', id: ours.value.task.id })).value?.id, ours.value.task.id)
})
