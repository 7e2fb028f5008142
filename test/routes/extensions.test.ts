import { status as Status, type Metadata, type ServiceError } from '@grpc/grpc-js'
import t from 'tap'
import type { A2AOptions, AgentExecutor } from '../../index.js'
import { IDEMPOTENT_SEND_EXTENSION } from '../../services/a2a/extensions.js'
import { build, listen, listenGrpc, postStream, restCall, rpc, userMessage } from '../helper.js'
import { grpcClients, metadataOf, statusDetails, streamAll } from './grpc-client.js'

// Extensions over every binding and version (docs/protocol.md, "Extensions"): a request that does not activate the
// required extension is refused before its method runs, streams before they open; the answer's header (gRPC: its
// metadata) lists what was activated; unknown URIs are ignored; v0.3 also reads X-A2A-Extensions.

const REQUIRED = 'https://example.com/ext/required/v1'
const OPTIONAL = 'https://example.com/ext/optional/v1'
const UNKNOWN = 'https://example.com/ext/unknown/v1'
const DETAIL = `the request must activate the extension ${REQUIRED} (the A2A-Extensions header)`

/** Echoes, and remembers what each message's context said was activated. */
function recording (): { executor: AgentExecutor, seen: Map<string, readonly string[] | undefined> } {
  const seen = new Map<string, readonly string[] | undefined>()
  const executor: AgentExecutor = ctx => {
    const part = ctx.message.parts[0]
    const text = part.kind === 'text' ? part.text : ''
    seen.set(text, ctx.extensions)
    return `echo: ${text}`
  }
  return { executor, seen }
}

const config = { agent: { name: 'Ext', extensions: [{ uri: REQUIRED, description: 'must', required: true }, { uri: OPTIONAL }] } }
const options = (executor: AgentExecutor): A2AOptions => ({ executor, config })
const v1Message = (text: string) => ({ messageId: `x-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] })
const V1 = { 'a2a-version': '1.0' }

/** The v1.0 JSON-RPC refusal: -32008 with its ErrorInfo. */
const refusedV10 = {
  code: -32008,
  message: 'Extension support required',
  data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXTENSION_SUPPORT_REQUIRED', domain: 'a2a-protocol.org', metadata: { detail: DETAIL } }]
}
/** The v0.3 refusal: -32602 with data.reason. */
const refusedV03 = { code: -32602, message: 'Extension support required', data: { reason: 'EXTENSION_SUPPORT_REQUIRED', extensions: [REQUIRED], message: DETAIL } }

t.test('JSON-RPC v1.0 and v0.3: refused without the required extension, answered with it, the header echoing what was activated', async t => {
  const { executor, seen } = recording()
  const app = await build(t, options(executor))
  const post = (body: unknown, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url: '/', headers, payload: body as object })

  const refused = await post(rpc('SendMessage', { message: v1Message('no') }, 1), V1)
  t.equal(refused.statusCode, 200)
  t.same(refused.json(), { jsonrpc: '2.0', id: 1, error: refusedV10 })
  t.equal(refused.headers['a2a-extensions'], undefined, 'nothing activated: no header')
  t.notOk(seen.has('no'), 'the agent never ran')

  const sent = await post(rpc('SendMessage', { message: v1Message('yes') }), { ...V1, 'a2a-extensions': ` ${UNKNOWN}, ${REQUIRED} ,,${REQUIRED}` })
  t.equal(sent.json().result.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal(sent.headers['a2a-extensions'], REQUIRED, 'the unknown URI is ignored, the known one said back once')
  t.equal(sent.headers['x-a2a-extensions'], undefined, 'v0.3\'s spelling for v0.3 methods only')
  t.same(seen.get('yes'), [REQUIRED], 'the executor sees it')
  // Only the first 64 items are read: the required URI as the 65th does not count.
  const padded = [...Array.from({ length: 64 }, (_, i) => `urn:pad:${i}`), REQUIRED].join(',')
  t.match((await post(rpc('GetTask', { id: 'x' }), { 'a2a-extensions': padded })).json(), { error: { code: -32008 } }, 'past the bound')
  t.match((await post(rpc('GetTask', { id: 'x' }), { 'a2a-extensions': padded.slice(padded.indexOf(',') + 1) })).json(), { error: { code: -32001 } }, 'within it')
  // X-A2A-Extensions is v0.3's: a v1.0 method does not read it.
  t.match((await post(rpc('GetTask', { id: 'x' }), { 'x-a2a-extensions': REQUIRED })).json(), { error: { code: -32008 } })
  t.same((await post(rpc('ListTasks', {}), { 'a2a-extensions': REQUIRED })).json().result.totalSize, 1, 'no task was made by the refused send')

  t.same((await post(rpc('message/send', { message: userMessage('old no') }, 2))).json(), { jsonrpc: '2.0', id: 2, error: refusedV03 })
  for (const headers of [{ 'x-a2a-extensions': REQUIRED }, { 'a2a-extensions': REQUIRED }] as Array<Record<string, string>>) {
    const old = await post(rpc('message/send', { message: userMessage('old') }), headers)
    t.equal(old.json().result.status.state, 'completed', Object.keys(headers)[0])
    t.equal(old.headers['a2a-extensions'], REQUIRED)
    t.equal(old.headers['x-a2a-extensions'], REQUIRED, 'and in the spelling v0.3 clients read')
  }
  // Both headers: their union.
  const union = await post(rpc('tasks/get', { id: 'nope' }), { 'a2a-extensions': OPTIONAL, 'x-a2a-extensions': `${REQUIRED},${OPTIONAL}` })
  t.match(union.json(), { error: { code: -32001 } }, 'past the check')
  t.equal(union.headers['a2a-extensions'], `${OPTIONAL},${REQUIRED}`, 'said back on an error answer too')
  t.same(seen.get('old'), [REQUIRED])
  // Every method but the card and discovery ones: our tools too.
  t.same((await post(rpc('status'))).json().error, refusedV03)
  t.equal((await post(rpc('status'), { 'a2a-extensions': REQUIRED })).json().result.status, 'ok')
})

t.test('the built-in agent\'s tools, called for a request that activated the required extension, are let through', async t => {
  const app = await build(t, { config })
  const headers = { 'a2a-extensions': REQUIRED }
  const sent = await app.inject({ method: 'POST', url: '/', headers, payload: rpc('message/send', { message: userMessage('status') }) })
  t.equal(sent.json().result.status.state, 'completed')
  t.match(sent.json().result.artifacts[0].parts[0], { kind: 'data', data: { status: 'ok' } })
})

t.test('the card and discovery methods are served without the required extension; their documents say who refuses', async t => {
  const app = await build(t, options(recording().executor))
  const post = (method: string) => app.inject({ method: 'POST', url: '/', payload: rpc(method) })
  t.match((await post('GetExtendedAgentCard')).json(), { error: { code: -32004 } }, 'its own answer (security is off), not -32008')
  t.match((await post('agent/getAuthenticatedExtendedCard')).json(), { error: { code: -32010 } })
  t.match((await post('capabilities')).json(), { result: { capabilities: { extensions: [{ uri: REQUIRED }, { uri: OPTIONAL }, { uri: IDEMPOTENT_SEND_EXTENSION }] } } })
  const doc = (await post('rpc.discover')).json().result
  const errorsOf = (name: string) => doc.methods.find((m: { name: string }) => m.name === name).errors.map((e: { code: number }) => e.code)
  t.ok(errorsOf('SendMessage').includes(-32008))
  t.ok(errorsOf('status').includes(-32602))
  t.notOk(errorsOf('GetExtendedAgentCard').includes(-32008))
  t.match(doc.components.errors.ExtensionSupportRequired, { code: -32008, message: 'Extension support required' })

  const card = (await app.inject({ url: '/.well-known/agent-card.json' })).json()
  t.same(card.capabilities.extensions.slice(0, 2), [{ uri: REQUIRED, description: 'must', required: true }, { uri: OPTIONAL, description: '', required: false }])
  const plain = await build(t, { executor: recording().executor, config: { tasks: { dedupe_window: 0 } } })
  t.notOk('extensions' in (await plain.inject({ url: '/.well-known/agent-card.json' })).json().capabilities)
})

t.test('streams over JSON-RPC are refused before they open: one SSE error event; with the extension, the header is on the stream', async t => {
  const { executor } = recording()
  const { url } = await listen(t, options(executor))
  const v10 = await postStream(url, rpc('SendStreamingMessage', { message: v1Message('s') }, 's1'), V1)
  t.equal(v10.status, 200)
  t.same(v10.events, [{ jsonrpc: '2.0', id: 's1', error: refusedV10 }])
  const v03 = await postStream(url, rpc('message/stream', { message: userMessage('s') }, 's2'))
  t.same(v03.events, [{ jsonrpc: '2.0', id: 's2', error: refusedV03 }])
  t.same((await postStream(url, rpc('tasks/resubscribe', { id: 'x' }, 's3'))).events, [{ jsonrpc: '2.0', id: 's3', error: refusedV03 }])
  t.match((await postStream(url, rpc('SubscribeToTask', { id: 'x' }, 's4'))).events, [{ error: { code: -32008 } }])

  const ok = await postStream(url, rpc('SendStreamingMessage', { message: v1Message('s') }), { ...V1, 'a2a-extensions': `${REQUIRED},${OPTIONAL}` })
  t.equal(ok.headers.get('a2a-extensions'), `${REQUIRED},${OPTIONAL}`)
  t.match(ok.events.at(-1), { result: { statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } } })
  const old = await postStream(url, rpc('message/stream', { message: userMessage('s') }), { 'x-a2a-extensions': REQUIRED })
  t.equal(old.headers.get('a2a-extensions'), REQUIRED)
  t.equal(old.headers.get('x-a2a-extensions'), REQUIRED)
  t.equal(ok.headers.get('x-a2a-extensions'), null)
  t.match(old.raw, /"completed"/)
})

t.test('REST v1.0 and v0.3: 400 in each form without the extension; with it the answer and its stream carry the header', async t => {
  const { executor, seen } = recording()
  const { app, url } = await listen(t, options(executor))
  const refused = await restCall(app, 'POST', '/message:send', { message: v1Message('r') })
  t.equal(refused.status, 400)
  t.same(refused.body, {
    error: { code: 400, status: 'FAILED_PRECONDITION', message: `Extension support required: ${DETAIL}`, details: refusedV10.data }
  })
  const sent = await restCall(app, 'POST', '/message:send', { message: v1Message('rest') }, { 'a2a-extensions': REQUIRED })
  t.equal(sent.status, 200)
  t.equal(sent.headers['a2a-extensions'], REQUIRED)
  t.same(seen.get('rest'), [REQUIRED])
  t.equal((await restCall(app, 'GET', '/tasks')).status, 400)
  t.equal((await restCall(app, 'GET', '/tasks', undefined, { 'a2a-extensions': REQUIRED })).status, 200)

  const old = await restCall(app, 'POST', '/v1/message:send', { message: { messageId: 'o1', role: 'ROLE_USER', content: [{ text: 'r' }] } })
  t.equal(old.status, 400)
  t.same(old.body, refusedV03)
  const oldOk = await restCall(app, 'POST', '/v1/message:send', { message: { messageId: 'o2', role: 'ROLE_USER', content: [{ text: 'rest03' }] } }, { 'x-a2a-extensions': REQUIRED })
  t.equal(oldOk.status, 200)
  t.equal(oldOk.headers['a2a-extensions'], REQUIRED)
  t.equal(oldOk.headers['x-a2a-extensions'], REQUIRED)
  t.equal(sent.headers['x-a2a-extensions'], undefined)
  t.equal((await restCall(app, 'GET', '/v1/card')).status, 200, 'the card, without the extension')

  const stream = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ message: v1Message('st') })
  })
  const closed = await stream('/message:stream')
  t.equal(closed.status, 400, 'a plain HTTP error: the stream never opened')
  t.match(await closed.json(), { error: { status: 'FAILED_PRECONDITION' } })
  const open = await stream('/message:stream', { 'a2a-extensions': REQUIRED })
  t.equal(open.headers.get('content-type'), 'text/event-stream')
  t.equal(open.headers.get('a2a-extensions'), REQUIRED)
  t.match(await open.text(), /TASK_STATE_COMPLETED/)
})

/** A unary call's answer or error, with the response's initial metadata. */
function unaryWithMetadata (stub: any, method: string, request: unknown, metadata: Record<string, string> | Metadata = {}): Promise<{ value?: any, error?: ServiceError, headers?: Metadata }> {
  return new Promise(resolve => {
    let headers: Metadata | undefined
    const call = stub[method](request, 'getMap' in metadata ? metadata : metadataOf(metadata), (error: ServiceError | null, value: unknown) => {
      resolve(error === null ? { value, headers } : { error, headers })
    })
    call.on('metadata', (received: Metadata) => { headers = received })
  })
}

t.test('gRPC: a2a-extensions metadata in, FAILED_PRECONDITION (v1.0) or INVALID_ARGUMENT (v0.3) without it, the response metadata out', async t => {
  const { executor, seen } = recording()
  const { target } = await listenGrpc(t, options(executor))
  const { v1, v03 } = grpcClients(t, target)

  const refused = await unaryWithMetadata(v1, 'SendMessage', { message: v1Message('g') })
  t.equal(refused.error?.code, Status.FAILED_PRECONDITION)
  t.match(statusDetails(refused.error as ServiceError).details, [{ reason: 'EXTENSION_SUPPORT_REQUIRED', metadata: { detail: DETAIL } }])
  t.same(refused.headers?.get('a2a-extensions') ?? [], [], 'nothing activated: no metadata')

  const sent = await unaryWithMetadata(v1, 'SendMessage', { message: v1Message('grpc') }, { 'a2a-extensions': `${UNKNOWN},${REQUIRED}` })
  t.equal(sent.error, undefined)
  t.same(sent.headers?.get('a2a-extensions'), [REQUIRED])
  t.same(sent.headers?.get('x-a2a-extensions'), [])
  t.same(seen.get('grpc'), [REQUIRED])
  // The key given twice: both values read.
  const twice = metadataOf({ 'a2a-extensions': OPTIONAL })
  twice.add('a2a-extensions', REQUIRED)
  t.same((await unaryWithMetadata(v1, 'GetTask', { id: 'nope' }, twice)).headers?.get('a2a-extensions'), [`${OPTIONAL},${REQUIRED}`])

  const old = await unaryWithMetadata(v03, 'SendMessage', { request: { messageId: 'g1', role: 'ROLE_USER', content: [{ text: 'g' }] } })
  t.equal(old.error?.code, Status.INVALID_ARGUMENT)
  t.match(old.error?.details, /^Extension support required/)
  const oldOk = await unaryWithMetadata(v03, 'SendMessage', { request: { messageId: 'g2', role: 'ROLE_USER', content: [{ text: 'g03' }] } }, { 'x-a2a-extensions': REQUIRED })
  t.equal(oldOk.error, undefined)
  t.same(oldOk.headers?.get('a2a-extensions'), [REQUIRED])
  t.same(oldOk.headers?.get('x-a2a-extensions'), [REQUIRED], 'v0.3: in its spelling too')

  const stream = await streamAll(v1, 'SendStreamingMessage', { message: v1Message('gs') })
  t.same(stream.messages, [], 'refused before the first event')
  t.equal(stream.error?.code, Status.FAILED_PRECONDITION)
  const streamed = await streamAll(v1, 'SendStreamingMessage', { message: v1Message('gs') }, { 'a2a-extensions': REQUIRED })
  t.equal(streamed.error, undefined)
  t.ok(streamed.messages.length > 1)
})
