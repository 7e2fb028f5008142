// The v0.3 answers against the A2A v0.3.0 JSON schema (test/fixtures/spec), the one the Python a2a-sdk 0.3.x
// generates its pydantic types from: what that client accepts, checked without a Python package index. In the
// `a2a` dialect every answer and stream event validates; in the default (seed) dialect a stream's `in_progress`
// does not, which is why docs/clients.md tells those clients to set `protocol.dialect: a2a`.
import { readFileSync } from 'node:fs'
import { Ajv, type ValidateFunction } from 'ajv'
import t, { type Test } from 'tap'
import { listen, postStream, receiver, rpc, userMessage, waitOrEchoInTwo } from '../helper.js'

const SCHEMA = JSON.parse(readFileSync(new URL('../fixtures/spec/a2a-v0.3.0.json', import.meta.url), 'utf8'))
const ajv = new Ajv({ strict: false, allErrors: true })
ajv.addSchema(SCHEMA, 'a2a')
const validator = (name: string): ValidateFunction => ajv.getSchema(`a2a#/definitions/${name}`)!

/** Fails the test with ajv's errors when `value` is not a `name` of the schema. */
function conforms (t: Test, name: string, value: unknown, what: string): void {
  const validate = validator(name)
  t.ok(validate(value), `${what} is a ${name}`, { errors: validate.errors, value })
}

async function post (url: string, body: unknown): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return await res.json()
}

t.test('the a2a dialect: every answer and stream event is what the v0.3.0 schema describes', async t => {
  const hook = await receiver(t)
  const { url } = await listen(t, {
    config: { protocol: { dialect: 'a2a' }, push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1 } } },
    executor: waitOrEchoInTwo
  })
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json()
  conforms(t, 'AgentCard', card, 'the agent card')

  const sent = await post(url, rpc('message/send', { message: userMessage('hi') }))
  t.equal(sent.result.status.state, 'completed')
  conforms(t, 'SendMessageResponse', sent, 'message/send')

  const stream = await postStream(url, rpc('message/stream', { message: userMessage('hi') }))
  t.same(stream.events.map(e => e.result.kind), ['task', 'status-update', 'artifact-update', 'artifact-update', 'status-update'])
  for (const [i, event] of stream.events.entries()) conforms(t, 'SendStreamingMessageResponse', event, `stream event ${i}`)

  const waiting = await post(url, rpc('message/send', { message: userMessage('wait'), configuration: { blocking: false } }))
  conforms(t, 'SendMessageResponse', waiting, 'a non-blocking message/send')
  const id = waiting.result.id
  await t.resolves(async () => {
    const resubscribed = postStream(url, rpc('tasks/resubscribe', { id }))
    const got = await post(url, rpc('tasks/get', { id }))
    conforms(t, 'GetTaskResponse', got, 'tasks/get')
    const set = await post(url, rpc('tasks/pushNotificationConfig/set', { taskId: id, pushNotificationConfig: { id: 'hook', url: `${hook.url}/hook`, token: 'tok' } }))
    conforms(t, 'SetTaskPushNotificationConfigResponse', set, 'pushNotificationConfig/set')
    conforms(t, 'GetTaskPushNotificationConfigResponse', await post(url, rpc('tasks/pushNotificationConfig/get', { id, pushNotificationConfigId: 'hook' })), 'pushNotificationConfig/get')
    conforms(t, 'ListTaskPushNotificationConfigResponse', await post(url, rpc('tasks/pushNotificationConfig/list', { id })), 'pushNotificationConfig/list')
    const canceled = await post(url, rpc('tasks/cancel', { id }))
    t.equal(canceled.result.status.state, 'canceled')
    conforms(t, 'CancelTaskResponse', canceled, 'tasks/cancel')
    const events = (await resubscribed).events
    t.equal(events.at(-1).result.status.state, 'canceled')
    for (const [i, event] of events.entries()) conforms(t, 'SendStreamingMessageResponse', event, `resubscribe event ${i}`)
    conforms(t, 'DeleteTaskPushNotificationConfigResponse', await post(url, rpc('tasks/pushNotificationConfig/delete', { id, pushNotificationConfigId: 'hook' })), 'pushNotificationConfig/delete')
  })

  const missing = await post(url, rpc('tasks/get', { id: 'no-such-task' }))
  t.equal(missing.error.code, -32001)
  conforms(t, 'GetTaskResponse', missing, 'a TaskNotFoundError')
  const notCancelable = await post(url, rpc('tasks/cancel', { id }))
  t.equal(notCancelable.error.code, -32002)
  conforms(t, 'CancelTaskResponse', notCancelable, 'a TaskNotCancelableError')
})

t.test('the default dialect: a stream says in_progress, which a v0.3 client that validates refuses', async t => {
  const { url } = await listen(t, { executor: waitOrEchoInTwo })
  const stream = await postStream(url, rpc('message/stream', { message: userMessage('hi') }))
  const validate = validator('SendStreamingMessageResponse')
  t.equal(stream.events[0].result.status.state, 'in_progress')
  t.notOk(validate(stream.events[0]), 'the first stream event is not a v0.3.0 SendStreamingMessageResponse')
  t.ok(validate.errors?.some(e => e.instancePath === '/result/status/state' && e.keyword === 'enum'), 'because of its state')
})
