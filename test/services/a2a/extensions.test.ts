import t from 'tap'
import pino from 'pino'
import {
  ExtensionSupport, IDEMPOTENT_SEND_EXTENSION, MAX_ACTIVATION_CHARS, MAX_ACTIVATION_ITEMS, RESERVED_EXTENSION_PREFIX,
  activatedHeaders, cardExtensions, extensionRequired, withPluginExtensions, type ExtensionCall
} from '../../../services/a2a/extensions.js'
import { buildAgentCard, v1Card } from '../../../services/a2a/agent-card.js'
import { validateConfig } from '../../../services/config/load.js'
import { ANONYMOUS } from '../../../services/auth/principal.js'
import { JsonRpcError, RpcCode } from '../../../services/kernel/errors.js'

// Extensions (docs/protocol.md, "Extensions"), without a server: the card's list, the activation header read within
// its bound, the required check in each version's form, and the hooks around a method.

const A = 'https://example.com/ext/a/v1'
const B = 'https://example.com/ext/b/v1'
const C = 'https://example.com/ext/c/v1'
const log = pino({ level: 'silent' })
const declared = [{ uri: A, description: 'a', required: true }, { uri: B, description: 'b', required: false }]

t.test('the card lists agent.extensions in both forms, then ours while tasks.dedupe_window is on', async t => {
  const config = validateConfig({ agent: { name: 'X', extensions: [{ uri: A, description: 'cites', required: true, params: { style: 'short' } }, { uri: B }] } })
  const card = buildAgentCard(config, { prefix: '/' })
  const [first, second, ours, ...more] = card.capabilities.extensions ?? []
  t.same(first, { uri: A, description: 'cites', required: true, params: { style: 'short' } })
  t.same(second, { uri: B, description: '', required: false })
  t.same(more, [])
  t.same({ ...ours, description: undefined }, { uri: IDEMPOTENT_SEND_EXTENSION, description: undefined, required: false, params: { window: '600s' } })
  t.match(ours.description, /same messageId by the same caller within 600 seconds gets the task its first send made/)
  t.same(v1Card(card).capabilities.extensions, card.capabilities.extensions, 'the pure v1.0 card lists the same')
  t.same(Object.keys(v1Card(card).capabilities), ['streaming', 'pushNotifications', 'extendedAgentCard', 'extensions'])

  const off = buildAgentCard(validateConfig({ tasks: { dedupe_window: 0 } }), { prefix: '/' })
  t.notOk('extensions' in off.capabilities, 'none declared: no field')
  t.notOk('extensions' in v1Card(off).capabilities)
  t.same(cardExtensions(validateConfig({ tasks: { dedupe_window: 30 } })).map(e => e.params), [{ window: '30s' }])
  t.ok(IDEMPOTENT_SEND_EXTENSION.startsWith(RESERVED_EXTENSION_PREFIX), 'ours is under the reserved prefix')
})

t.test('a duplicate, reserved or malformed URI in agent.extensions is a config error, one line each', async t => {
  t.throws(() => validateConfig({ agent: { name: 'X', extensions: [{ uri: A }, { uri: A }] } }), {
    code: 'A2A_ERR_INVALID_CONFIG', message: new RegExp(`agent\\.extensions\\.1\\.uri: ${A} is declared twice`)
  })
  t.throws(() => validateConfig({ agent: { name: 'X', extensions: [{ uri: IDEMPOTENT_SEND_EXTENSION }] } }), {
    message: /agent\.extensions\.0\.uri: urn:fastify-a2a:extension:idempotent-send:v1 is reserved by fastify-a2a/
  })
  t.throws(() => validateConfig({ agent: { name: 'X', extensions: [{ uri: 'urn:fastify-a2a:mine' }] } }), { message: /is reserved by fastify-a2a/ })
  t.throws(() => validateConfig({ agent: { name: 'X', extensions: [{ uri: `${A},${B}` }] } }), { message: /agent\.extensions\.0\.uri: must be a URI, without spaces or commas/ })
  t.throws(() => validateConfig({ agent: { name: 'X', extensions: [{ uri: ` ${A}` }] } }), { message: /without spaces or commas/ })
  t.throws(() => validateConfig({ agent: { name: 'X', extensions: [{ uri: '' }] } }), { message: /agent\.extensions\.0\.uri/ })
})

t.test('the plugin\'s extensions are declared after the config\'s; a duplicate, reserved or malformed URI is refused', async t => {
  const config = validateConfig({ agent: { name: 'X', extensions: [{ uri: A }] } })
  t.equal(withPluginExtensions(config, undefined), config)
  t.equal(withPluginExtensions(config, []), config)
  const merged = withPluginExtensions(config, [{ uri: B, required: true, params: { n: 1 }, hooks: {} }, { uri: C }])
  t.same(merged.agent.extensions, [
    { uri: A, description: '', required: false },
    { uri: B, description: '', required: true, params: { n: 1 } },
    { uri: C, description: '', required: false }
  ])
  t.same(config.agent.extensions, [{ uri: A, description: '', required: false }], 'the config given is left alone')
  t.throws(() => withPluginExtensions(config, [{ uri: A }]), { code: 'A2A_ERR_INVALID_OPTIONS', message: `Invalid option: extensions.0.uri: ${A} is declared twice` })
  t.throws(() => withPluginExtensions(config, [{ uri: B }, { uri: B }]), { message: /extensions\.1\.uri: .* is declared twice/ })
  t.throws(() => withPluginExtensions(config, [{ uri: IDEMPOTENT_SEND_EXTENSION }]), { message: /extensions\.0\.uri: .* is reserved by fastify-a2a/ })
  for (const uri of ['', ' x', 'a,b', 7]) {
    t.throws(() => withPluginExtensions(config, [{ uri: uri as string }]), { message: /extensions\.0\.uri: must be a URI/ }, JSON.stringify(uri))
  }
})

t.test('activation: declared URIs listed, trimmed, once each, in order; unknown and empty items ignored', async t => {
  const support = new ExtensionSupport(declared)
  t.same(support.required, [A])
  t.same(support.activate({ 'a2a-extensions': ` ${B} ,, ${C},${A}, ${B}` }, 'SendMessage'), [B, A])
  t.same(support.activate({ 'a2a-extensions': C }, 'SendMessage'), [])
  t.same(support.activate({}, 'SendMessage'), [])
  t.same(support.activate(undefined, 'SendMessage'), [])
  t.same(support.activate({ 'a2a-extensions': ['not', 'a string'] }, 'SendMessage'), [], 'only a string is read')
  // v0.3 also reads X-A2A-Extensions: the union of both. v1.0 reads A2A-Extensions only.
  const both = { 'a2a-extensions': B, 'x-a2a-extensions': `${A},${B}` }
  t.same(support.activate(both, 'message/send'), [B, A])
  t.same(support.activate({ 'x-a2a-extensions': A }, 'tasks/get'), [A])
  t.same(support.activate(both, 'SendMessage'), [B])
  t.same(new ExtensionSupport().activate({ 'a2a-extensions': A }, 'SendMessage'), [], 'nothing declared: nothing read')
})

t.test('the answer says what was activated: A2A-Extensions, and X-A2A-Extensions too for a v0.3 method', async t => {
  t.same(activatedHeaders([], 'message/send'), {})
  t.same(activatedHeaders([A, B], 'SendMessage'), { 'a2a-extensions': `${A},${B}` })
  t.same(activatedHeaders([A], 'message/send'), { 'a2a-extensions': A, 'x-a2a-extensions': A })
})

t.test('activation reads at most the first 64 items of the first 8 KiB: a hostile header costs no more', async t => {
  const support = new ExtensionSupport(declared)
  t.equal(MAX_ACTIVATION_ITEMS, 64)
  t.equal(MAX_ACTIVATION_CHARS, 8192)
  const unknown = (n: number) => Array.from({ length: n }, (_, i) => `urn:x:${i}`)
  t.same(support.activate({ 'a2a-extensions': [...unknown(63), A].join(',') }, 'SendMessage'), [A], 'the 64th item is read')
  t.same(support.activate({ 'a2a-extensions': [...unknown(64), A].join(',') }, 'SendMessage'), [], 'the 65th is not')
  t.same(support.activate({ 'a2a-extensions': ','.repeat(100_000) + A }, 'SendMessage'), [], 'empty items count')
  t.same(support.activate({ 'a2a-extensions': ' '.repeat(MAX_ACTIVATION_CHARS - A.length) + A }, 'SendMessage'), [A], 'within 8 KiB')
  t.same(support.activate({ 'a2a-extensions': ' '.repeat(MAX_ACTIVATION_CHARS - A.length + 1) + A }, 'SendMessage'), [], 'cut at 8 KiB')
  // The two v0.3 headers share one bound.
  const long = { 'a2a-extensions': ' '.repeat(MAX_ACTIVATION_CHARS), 'x-a2a-extensions': A }
  t.same(support.activate(long, 'message/send'), [], 'chars: shared')
  t.same(support.activate({ 'a2a-extensions': unknown(64).join(','), 'x-a2a-extensions': A }, 'message/send'), [], 'items: shared')
  t.same(support.activate({ 'a2a-extensions': unknown(10).join(','), 'x-a2a-extensions': A }, 'message/send'), [A])
})

t.test('a missing required extension is refused in the method\'s version: v1.0 -32008, v0.3 -32602 with data.reason', async t => {
  t.same(extensionRequired('SendMessage', [A]), new JsonRpcError(RpcCode.extensionSupportRequired, 'Extension support required',
    `the request must activate the extension ${A} (the A2A-Extensions header)`))
  const v03 = extensionRequired('message/send', [A, B])
  t.equal(v03.code, RpcCode.invalidParams)
  t.equal(v03.message, 'Extension support required')
  t.same(v03.data, { reason: 'EXTENSION_SUPPORT_REQUIRED', extensions: [A, B], message: `the request must activate the extensions ${A}, ${B} (the A2A-Extensions header)` })

  const support = new ExtensionSupport(declared)
  const handler = (params: unknown) => ({ ran: params })
  const guarded = support.guard('GetTask', handler, false)
  t.not(guarded, handler)
  t.throws(() => guarded(1, { principal: ANONYMOUS, log }), { code: RpcCode.extensionSupportRequired })
  t.throws(() => guarded(1, { principal: ANONYMOUS, log, extensions: [B] }), { code: RpcCode.extensionSupportRequired })
  t.same(guarded(1, { principal: ANONYMOUS, log, extensions: [A] }), { ran: 1 }, 'answered at once, no promise')
  t.throws(() => support.guard('tasks/get', handler, false)(1, { principal: ANONYMOUS, log }), { code: RpcCode.invalidParams, data: { extensions: [A] } })
  t.equal(support.guard('GetExtendedAgentCard', handler, true), handler, 'exempt and no hooks: the handler itself')
  t.equal(new ExtensionSupport([{ uri: B, description: '', required: false }]).guard('GetTask', handler, false), handler, 'nothing required')
})

t.test('hooks run around the method, only for the extensions activated, in order; either may refuse', async t => {
  const seen: string[] = []
  const calls: ExtensionCall[] = []
  const support = new ExtensionSupport(declared, [
    { uri: A, hooks: { onRequest: call => { seen.push('A before'); calls.push(call) }, onResponse: async (_call, result) => { seen.push(`A after ${JSON.stringify(result)}`) } } },
    { uri: B, hooks: { onRequest: async () => { seen.push('B before') } } },
    { uri: C }
  ])
  const guarded = support.guard('GetTask', async (params: unknown) => { seen.push('method'); return { ok: params } }, false)
  t.same(await guarded(7, { principal: ANONYMOUS, log, extensions: [B, A] }), { ok: 7 })
  t.same(seen, ['B before', 'A before', 'method', 'A after {"ok":7}'])
  t.match(calls[0], { method: 'GetTask', params: 7, principal: ANONYMOUS, extensions: [B, A] })
  // Without A (required) it is refused before any hook.
  seen.length = 0
  t.throws(() => guarded(7, { principal: ANONYMOUS, log, extensions: [B] }))
  t.same(seen, [])

  const optional = new ExtensionSupport([{ uri: B, description: '', required: false }], [{ uri: B, hooks: { onRequest: () => { throw new JsonRpcError(-32001, 'nope') } } }])
  const sync = optional.guard('status', () => 'at once', true)
  t.equal(sync(undefined, { principal: ANONYMOUS, log }), 'at once', 'not activated: no hooks, no promise')
  await t.rejects(Promise.resolve(sync(undefined, { principal: ANONYMOUS, log, extensions: [B] })), { code: -32001 }, 'a hook refuses')
  const late = new ExtensionSupport([{ uri: B, description: '', required: false }], [{ uri: B, hooks: { onResponse: () => { throw new JsonRpcError(-32004, 'late') } } }])
  await t.rejects(Promise.resolve(late.guard('status', () => 'x', false)(undefined, { principal: ANONYMOUS, log, extensions: [B] })), { code: -32004 })
  await t.rejects(Promise.resolve(late.guard('status', async () => { throw new Error('method failed') }, false)(undefined, { principal: ANONYMOUS, log, extensions: [B] })), { message: 'method failed' })
  // A stream refused after its method opened it is closed, not left following its task.
  let closed = 0
  const stream = { close: () => { closed++ } }
  await t.rejects(Promise.resolve(late.guard('message/stream', () => stream, false)(undefined, { principal: ANONYMOUS, log, extensions: [B] })), { code: -32004 })
  t.equal(closed, 1)
  await t.rejects(Promise.resolve(late.guard('status', () => null, false)(undefined, { principal: ANONYMOUS, log, extensions: [B] })), { code: -32004 }, 'a null result')
  await t.rejects(Promise.resolve(late.guard('status', () => ({ close: 'not a function' }), false)(undefined, { principal: ANONYMOUS, log, extensions: [B] })), { code: -32004 })
})
