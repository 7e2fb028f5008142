import { A2AClient, ClientFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import a2a, { type AgentExecutor } from '../../index.js'
import { WAIT_OR_ECHO_IN_TWO_MODULE, listen, receiver, serve, until, waitOrEchoInTwo } from '../helper.js'

let n = 0
const message = (text: string, extra: Record<string, unknown> = {}) =>
  ({ kind: 'message' as const, role: 'user' as const, messageId: `sdk-${++n}`, parts: [{ kind: 'text' as const, text }], ...extra })

t.test('the @a2a-js/sdk client drives message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe', async t => {
  const executor: AgentExecutor = async function * (ctx) {
    const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
    if (text === 'wait') {
      await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
      return
    }
    yield 'echo: '
    yield text
  }
  const { app, url } = await listen(t, { executor, config: { protocol: { dialect: 'a2a' } } })
  const client = await A2AClient.fromCardUrl(`${url}/.well-known/agent-card.json`)

  const sent = await client.sendMessage({ message: message('hi') }) as any
  t.notOk(sent.error)
  t.equal(sent.result.kind, 'task')
  t.equal(sent.result.status.state, 'completed')
  t.same(sent.result.artifacts[0].parts.map((p: any) => p.text), ['echo: ', 'hi'])

  const events: any[] = []
  for await (const event of client.sendMessageStream({ message: message('stream') })) events.push(event)
  t.same(events.map(e => e.kind), ['task', 'status-update', 'artifact-update', 'artifact-update', 'status-update'])
  const final = events[events.length - 1]
  t.equal(final.final, true)
  t.equal(final.status.state, 'completed')

  const got = await client.getTask({ id: final.taskId }) as any
  t.equal(got.result.id, final.taskId)
  t.equal(got.result.status.state, 'completed')

  const waiting = await client.sendMessage({ message: message('wait'), configuration: { blocking: false } }) as any
  const id = waiting.result.id
  await until(async () => (await app.a2aTasks.store.get(id))?.task.status.state === 'in_progress')
  const resubscribed: any[] = []
  const following = (async () => {
    for await (const event of client.resubscribeTask({ id })) resubscribed.push(event)
  })()
  await until(() => app.a2aStreams.size === 1)
  const canceled = await client.cancelTask({ id }) as any
  t.equal(canceled.result.status.state, 'canceled')
  await following
  t.equal(resubscribed[0].kind, 'task')
  t.match(resubscribed[resubscribed.length - 1], { kind: 'status-update', final: true, status: { state: 'canceled' } })

  const again = await client.cancelTask({ id }) as any
  t.equal(again.error.code, -32002)
  const missing = await client.getTask({ id: 'nope' }) as any
  t.equal(missing.error.code, -32001)
})

const echoOrWait = waitOrEchoInTwo

/** The 0.3.14 client over its HTTP+JSON transport, chosen from the card's additionalInterfaces (`/v1/...` routes). */
async function restClient (base: string): Promise<Client> {
  return new ClientFactory({ transports: [new RestTransportFactory()] }).createFromUrl(base)
}

/** Every v0.3 operation the 0.3.14 REST transport has, through the client's own API (CONTRACT.md §12, `/v1`). */
async function driveRest (t: Test, client: Client, state: (id: string) => Promise<string | undefined>): Promise<void> {
  t.match((client as unknown as { transport: object }).transport.constructor.name, /RestTransport/)
  const sent = await client.sendMessage({ message: message('hi') }) as any
  t.equal(sent.kind, 'task')
  t.equal(sent.status.state, 'completed')
  t.same(sent.artifacts[0].parts.map((p: any) => p.text), ['echo: ', 'hi'])

  const events: any[] = []
  for await (const event of client.sendMessageStream({ message: message('stream') })) events.push(event)
  t.same(events.map(e => e.kind), ['task', 'status-update', 'artifact-update', 'artifact-update', 'status-update'])
  t.match(events[events.length - 1], { final: true, status: { state: 'completed' } })

  const got = await client.getTask({ id: sent.id, historyLength: 1 })
  t.equal(got.id, sent.id)
  t.equal(got.history?.length, 1)

  const waiting = await client.sendMessage({ message: message('wait'), configuration: { blocking: false } }) as any
  await until(async () => await state(waiting.id) === 'working')
  const resubscribed: any[] = []
  const following = (async () => {
    for await (const event of client.resubscribeTask({ id: waiting.id })) resubscribed.push(event)
  })()
  await until(() => resubscribed.length > 0)
  const canceled = await client.cancelTask({ id: waiting.id })
  t.equal(canceled.status.state, 'canceled')
  await following
  t.equal(resubscribed[0].kind, 'task')
  t.match(resubscribed[resubscribed.length - 1], { kind: 'status-update', final: true, status: { state: 'canceled' } })
  await t.rejects(client.cancelTask({ id: waiting.id }), { name: 'TaskNotCancelableError' })
  await t.rejects(client.getTask({ id: 'nope' }), { name: 'TaskNotFoundError' })

  const set = await client.setTaskPushNotificationConfig({
    taskId: sent.id, pushNotificationConfig: { id: 'a', url: 'https://hooks.example.com/a', token: 'tok' }
  })
  t.same(set, { taskId: sent.id, pushNotificationConfig: { id: 'a', url: 'https://hooks.example.com/a', token: 'tok' } })
  await client.setTaskPushNotificationConfig({ taskId: sent.id, pushNotificationConfig: { id: 'b', url: 'https://hooks.example.com/b' } })
  t.equal((await client.getTaskPushNotificationConfig({ id: sent.id, pushNotificationConfigId: 'b' } as { id: string })).pushNotificationConfig.url, 'https://hooks.example.com/b')
  t.same((await client.listTaskPushNotificationConfig({ id: sent.id })).map(c => c.pushNotificationConfig.id), ['a', 'b'])
  await client.deleteTaskPushNotificationConfig({ id: sent.id, pushNotificationConfigId: 'b' })
  t.same((await client.listTaskPushNotificationConfig({ id: sent.id })).map(c => c.pushNotificationConfig.id), ['a'])
}

/** A task's state, read over the same client. */
const stateOf = (client: Client) => async (id: string) => (await client.getTask({ id })).status.state

t.test('@a2a-js/sdk 0.3.14 over its HTTP+JSON transport drives every operation (the /v1 routes)', async t => {
  const { url } = await listen(t, { executor: echoOrWait })
  const client = await restClient(url)
  await driveRest(t, client, stateOf(client))
})

t.test('@a2a-js/sdk 0.3.14 over HTTP+JSON: the plugin under a prefix in a host app, and the standalone server', async t => {
  const host = Fastify({ logger: false })
  host.get('/v1/mine', async () => 'host')
  await host.register(a2a, { prefix: '/agent', executor: echoOrWait })
  const base = await host.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => host.close())
  const client = await restClient(`${base}/agent/`)
  await driveRest(t, client, stateOf(client))
  t.equal(await (await fetch(`${base}/v1/mine`)).text(), 'host', 'the host\'s own /v1 route is untouched')

  t.testdir({ 'agent.yml': 'agent:\n  name: Standalone\n  executor: ./echo.js\n', 'echo.js': WAIT_OR_ECHO_IN_TWO_MODULE })
  const served = await serve(t, ['--config', 'agent.yml'])
  const standalone = await restClient(served.url)
  await driveRest(t, standalone, stateOf(standalone))
})

t.test('@a2a-js/sdk 0.3.14 over HTTP+JSON with security on: the extended card at /v1/card, and a v0.3 webhook', async t => {
  const hook = await receiver(t)
  const key = 'key-sdk03-rest-0123456789'
  const { url } = await listen(t, {
    executor: echoOrWait,
    config: {
      security: { enabled: true, auth: { api_key: { keys: [{ key, scopes: ['files:read'] }] } } },
      push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } }
    }
  })
  const fetchImpl: typeof fetch = async (input, init) => fetch(input, { ...init, headers: { ...init?.headers as Record<string, string>, 'x-api-key': key } })
  const client = await new ClientFactory({ transports: [new RestTransportFactory({ fetchImpl })] }).createFromUrl(url)
  const card = await client.getAgentCard()
  t.ok(card.skills.some(s => s.name === 'list_directory'), 'the extended card, with the tools the caller may use')
  const waiting = await client.sendMessage({ message: message('wait'), configuration: { blocking: false } }) as any
  await client.setTaskPushNotificationConfig({ taskId: waiting.id, pushNotificationConfig: { url: `${hook.url}/h`, token: 't03' } })
  await client.cancelTask({ id: waiting.id })
  await until(() => hook.received.some(r => r.body?.status?.state === 'canceled'))
  const delivery = hook.received[hook.received.length - 1]
  t.equal(delivery.body.kind, 'task', 'a v0.3 delivery: the Task')
  t.equal(delivery.headers['x-a2a-notification-token'], 't03')
})
