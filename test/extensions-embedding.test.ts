import Fastify from 'fastify'
import t from 'tap'
import a2a, { IDEMPOTENT_SEND_EXTENSION, JsonRpcError, RpcCode, type AgentExecutor, type ExtensionCall, type ExtensionDefinition } from '../index.js'
import { rpc, until, userMessage } from './helper.js'

// The plugin's `extensions` option (docs/embedding.md, "Extensions of your own"): an app's own extension is declared on the card
// beside the configured ones, its hooks run around the methods of a request that activates it, and the executor sees
// what the request activated as `context.extensions`, message by message.

const CONFIGURED = 'https://example.com/ext/configured/v1'
const TRACE = 'https://example.com/ext/trace/v1'
const GUARD = 'https://example.com/ext/guard/v1'

t.test('an app registers extensions: on the card, required ones enforced, hooks around methods, context.extensions in the executor', async t => {
  const hooks: string[] = []
  const calls: ExtensionCall[] = []
  const contexts: Array<{ text: string, extensions: readonly string[] | undefined }> = []
  let release: () => void = () => {}
  const executor: AgentExecutor = async ctx => {
    const part = ctx.message.parts[0]
    const text = part.kind === 'text' ? part.text : ''
    contexts.push({ text, extensions: ctx.extensions })
    // The first turn waits: a message sent meanwhile is queued behind it, with its own request's extensions.
    if (text === 'first') await new Promise<void>(resolve => { release = resolve })
    // A tool call serves the message's request: it carries that request's extensions.
    if (text === 'tool') return `status: ${(await ctx.tools.call('status', {}) as { status: string }).status}`
    return `echo: ${text}`
  }
  const extensions: ExtensionDefinition[] = [
    {
      uri: TRACE,
      description: 'Traces the call',
      required: true,
      params: { level: 'full' },
      hooks: {
        onRequest: call => { hooks.push(`request ${call.method}`); calls.push(call) },
        onResponse: async (call, result) => { hooks.push(`response ${call.method} ${(result as { kind?: string }).kind ?? ''}`) }
      }
    },
    {
      uri: GUARD,
      hooks: {
        onRequest: call => {
          const part = ((call.params as { message?: { parts: Array<{ text?: string }> } }).message?.parts ?? [])[0]
          if (part?.text === 'forbidden') throw new JsonRpcError(RpcCode.unsupportedOperation, 'Unsupported operation', 'the guard extension refuses this message')
          if (part?.text === 'crash') throw new Error('a bug in the hook')
        },
        onResponse: call => {
          if (call.method === 'message/stream') throw new JsonRpcError(RpcCode.unsupportedOperation, 'Unsupported operation', 'the guard extension takes no streams')
        }
      }
    }
  ]
  const host = Fastify({ logger: false })
  host.get('/hello', async () => ({ hello: 'world' }))
  await host.register(a2a, { prefix: '/agent', executor, extensions, config: { agent: { name: 'Ext', extensions: [{ uri: CONFIGURED }] } } })
  await host.ready()
  t.teardown(() => host.close())
  const post = (body: unknown, activate?: string) => host.inject({
    method: 'POST', url: '/agent', headers: activate === undefined ? {} : { 'a2a-extensions': activate }, payload: body as object
  })

  const card = (await host.inject('/agent/.well-known/agent-card.json')).json()
  t.same(card.capabilities.extensions.map((e: { uri: string }) => e.uri), [CONFIGURED, TRACE, GUARD, IDEMPOTENT_SEND_EXTENSION])
  t.same(card.capabilities.extensions[1], { uri: TRACE, description: 'Traces the call', required: true, params: { level: 'full' } })
  t.same(card.capabilities.extensions[2], { uri: GUARD, description: '', required: false })
  t.same((await host.inject('/hello')).json(), { hello: 'world' }, 'host routes need nothing')

  t.match((await post(rpc('message/send', { message: userMessage('x') }))).json(), { error: { code: -32602, data: { reason: 'EXTENSION_SUPPORT_REQUIRED', extensions: [TRACE] } } })
  t.same(hooks, [], 'no hook runs for a refused call')

  const sent = await post(rpc('message/send', { message: userMessage('hi') }), `${TRACE},${CONFIGURED}`)
  t.equal(sent.json().result.status.state, 'completed')
  t.equal(sent.headers['a2a-extensions'], `${TRACE},${CONFIGURED}`)
  t.same(hooks, ['request message/send', 'response message/send task'])
  t.match(calls[0], { method: 'message/send', params: { message: { parts: [{ text: 'hi' }] } }, principal: { id: 'anonymous' }, extensions: [TRACE, CONFIGURED] })
  t.same(contexts.at(-1), { text: 'hi', extensions: [TRACE, CONFIGURED] })

  // A hook refuses with an A2A error: the client gets it, and the method does not run.
  const refused = await post(rpc('message/send', { message: userMessage('forbidden') }), `${TRACE},${GUARD}`)
  t.match(refused.json(), { error: { code: -32004, data: 'the guard extension refuses this message' } })
  t.notOk(contexts.some(c => c.text === 'forbidden'))
  // Anything else a hook throws is an internal error, its detail not sent.
  t.same((await post(rpc('message/send', { message: userMessage('crash') }), `${TRACE},${GUARD}`)).json().error, { code: -32603, message: 'Internal error' })
  // A stream refused by a hook once its method opened it: one SSE error event; the stream it opened is closed.
  const stream = await post(rpc('message/stream', { message: userMessage('streamed') }, 'st'), `${TRACE},${GUARD}`)
  t.equal(stream.statusCode, 200)
  t.equal(stream.body, `data: ${JSON.stringify({ jsonrpc: '2.0', id: 'st', error: { code: -32004, message: 'Unsupported operation', data: 'the guard extension takes no streams' } })}\n\n`)
  await until(() => contexts.some(c => c.text === 'streamed'))
  // A hook of an extension not activated does not run.
  t.equal((await post(rpc('message/send', { message: userMessage('forbidden') }), TRACE)).json().result.status.state, 'completed')

  // The agent's tool calls pass the required check with the request's extensions, between the same hooks.
  hooks.length = 0
  const tool = await post(rpc('message/send', { message: userMessage('tool') }), TRACE)
  t.equal(tool.json().result.artifacts[0].parts[0].text, 'status: ok')
  t.same(hooks, ['request message/send', 'request status', 'response status ', 'response message/send task'])

  // Each message of a task carries its own request's extensions, a message queued behind a running turn too.
  const first = await post(rpc('message/send', { message: userMessage('first'), configuration: { blocking: false } }), TRACE)
  const taskId = first.json().result.id
  await until(() => contexts.some(c => c.text === 'first'))
  const second = post(rpc('message/send', { message: userMessage('second', { taskId }), configuration: { blocking: false } }), `${GUARD},${TRACE}`)
  t.equal((await second).statusCode, 200)
  t.notOk(contexts.some(c => c.text === 'second'), 'queued behind the running turn')
  release()
  await until(() => contexts.some(c => c.text === 'second'))
  t.same(contexts.find(c => c.text === 'first')?.extensions, [TRACE])
  t.same(contexts.find(c => c.text === 'second')?.extensions, [GUARD, TRACE])
})

t.test('an app extension whose URI the config declares, or that is ours, is refused at register time', async t => {
  for (const [extensions, message] of [
    [[{ uri: CONFIGURED }], `Invalid option: extensions.0.uri: ${CONFIGURED} is declared twice`],
    [[{ uri: IDEMPOTENT_SEND_EXTENSION }], `Invalid option: extensions.0.uri: ${IDEMPOTENT_SEND_EXTENSION} is reserved by fastify-a2a`]
  ] as const) {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    await t.rejects(async () => { await app.register(a2a, { extensions: [...extensions], config: { agent: { name: 'X', extensions: [{ uri: CONFIGURED }] } } }).ready() }, {
      code: 'A2A_ERR_INVALID_OPTIONS', message
    })
  }
})
