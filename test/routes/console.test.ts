import t from 'tap'
import Fastify from 'fastify'
import a2a, { type A2AConfigInput } from '../../index.js'
import { build, call, listen, rpc, until, userMessage } from '../helper.js'

const TOKEN = 'sink-token-0123456789abcdef'
const API_KEY = 'console-key-0123456789'
const secured: A2AConfigInput['security'] = { enabled: true, auth: { api_key: { keys: [{ key: API_KEY, scopes: ['admin'] }] } } }

/** The nonce a CSP directive allows, e.g. `script-src 'nonce-abc'` → `abc`. */
function nonceOf (csp: string, directive: string): string {
  const match = new RegExp(`${directive} 'nonce-([^']+)'`).exec(csp)
  if (match === null) throw new Error(`${directive} has no nonce in ${csp}`)
  return match[1]
}

t.test('the page is one self-contained document under a strict CSP whose nonce changes per response', async t => {
  const app = await build(t)
  const res = await app.inject('/console')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8/)
  const csp = String(res.headers['content-security-policy'])
  t.match(csp, /^default-src 'self'; /)
  t.match(csp, /connect-src 'self'/)
  t.match(csp, /frame-ancestors 'none'/)
  t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, 'no inline allowance, no eval, no other host')
  const nonce = nonceOf(csp, 'script-src')
  t.equal(nonceOf(csp, 'style-src'), nonce)
  t.match(res.body, `<script nonce="${nonce}">`)
  t.match(res.body, `<style nonce="${nonce}">`)
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['cache-control'], 'no-store')
  t.notMatch(res.body, /https?:\/\//, 'no absolute URL: nothing is loaded from another host, and calls stay relative')
  t.notMatch(res.body, /\s(src|href)="(?!data:)/, 'no script, style, icon or link to load')
  t.notMatch(res.body, /\son[a-z]+=/, 'no inline event handler (the CSP would block it)')
  t.equal(res.body.match(/<script/g)?.length, 1)
  const again = await app.inject('/console')
  t.not(nonceOf(String(again.headers['content-security-policy']), 'script-src'), nonce)
})

t.test('the page carries the v0.3 dialect the server writes, so that it spells states the same way', async t => {
  const a2aDialect = await build(t, { config: { protocol: { dialect: 'a2a' } } })
  t.match((await a2aDialect.inject('/console')).body, '<html lang="en" data-dialect="a2a">')
  const plain = await build(t)
  t.match((await plain.inject('/console')).body, '<html lang="en" data-dialect="default">')
})

t.test('console.enabled: auto follows security, true forces it on, false turns it off', async t => {
  const autoOpen = await build(t)
  t.equal((await autoOpen.inject('/console')).statusCode, 200, 'auto with security off: on')
  const autoSecured = await build(t, { config: { security: secured } })
  t.equal((await autoSecured.inject('/console')).statusCode, 404, 'auto with security on: off')
  t.equal((await autoSecured.inject(`/console/sink/${TOKEN}`)).statusCode, 404, 'its sink too')
  const off = await build(t, { config: { console: { enabled: false } } })
  t.equal((await off.inject('/console')).statusCode, 404)
  t.equal((await off.inject({ method: 'POST', url: `/console/sink/${TOKEN}`, payload: {} })).statusCode, 404)
  const forced = await build(t, { config: { security: secured, console: { enabled: true } } })
  t.equal((await forced.inject('/console')).statusCode, 200, 'forced on with security: the page is public')
  t.equal((await forced.inject(`/console/sink/${TOKEN}`)).statusCode, 200)
  const anonymous = await forced.inject({ method: 'POST', url: '/', payload: rpc('tasks/list', {}) })
  t.equal(anonymous.statusCode, 401, 'the calls the page makes still need credentials')
  const keyed = await forced.inject({ method: 'POST', url: '/', headers: { 'x-api-key': API_KEY }, payload: rpc('tasks/list', {}) })
  t.same(keyed.json().result.tasks, [])
})

t.test('embedded under a prefix, the console lives there and the host keeps its own routes', async t => {
  const host = Fastify({ logger: false })
  host.get('/console', async () => ({ host: true }))
  await host.register(a2a, { prefix: '/agent' })
  await host.ready()
  t.teardown(() => host.close())
  const page = await host.inject('/agent/console')
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-security-policy'], /script-src 'nonce-/)
  t.same((await host.inject('/console')).json(), { host: true })
  t.equal((await host.inject({ method: 'POST', url: `/agent/console/sink/${TOKEN}`, payload: { id: 'x' } })).statusCode, 204)
  t.match((await host.inject(`/agent/console/sink/${TOKEN}`)).json(), { url: null, deliveries: [{ taskId: 'x' }] })
})

t.test('the sink keeps deliveries per token, newest first, with credentials shown as set only', async t => {
  const app = await build(t)
  const empty = await app.inject(`/console/sink/${TOKEN}`)
  t.equal(empty.statusCode, 200)
  t.equal(empty.headers['cache-control'], 'no-store')
  t.same(empty.json(), { url: null, deliveries: [] }, 'no URL while the server listens on no port')
  const task = { id: 'task-1', kind: 'task', status: { state: 'completed' } }
  const first = await app.inject({
    method: 'POST',
    url: `/console/sink/${TOKEN}`,
    headers: { 'x-a2a-notification-token': 'secret-notify', authorization: 'Bearer secret-bearer', 'webhook-id': 'msg_1', 'x-other': 'dropped' },
    payload: task
  })
  t.equal(first.statusCode, 204)
  await app.inject({ method: 'POST', url: `/console/sink/${TOKEN}`, headers: { 'content-type': 'text/plain' }, payload: 'not json' })
  await app.inject({ method: 'POST', url: `/console/sink/${TOKEN}` })
  await app.inject({ method: 'POST', url: '/console/sink/another-token-0123456789', payload: task })
  const { deliveries } = (await app.inject(`/console/sink/${TOKEN}`)).json()
  t.equal(deliveries.length, 3)
  t.match(deliveries[0], { taskId: null, state: null, body: '' })
  t.match(deliveries[1], { taskId: null, state: null, body: 'not json', headers: { 'content-type': 'text/plain' } })
  t.match(deliveries[2], { taskId: 'task-1', state: 'completed', body: JSON.stringify(task) })
  t.same(deliveries[2].headers, {
    'content-type': 'application/json',
    'user-agent': 'lightMyRequest',
    'webhook-id': 'msg_1',
    'x-a2a-notification-token': '[set]',
    authorization: '[set]'
  })
  t.ok(deliveries[0].seq > deliveries[1].seq && deliveries[1].seq > deliveries[2].seq)
  t.notMatch(JSON.stringify(deliveries), /secret-/)
})

t.test('a malformed sink token is 400 on both sink routes; an oversized delivery is 413', async t => {
  const app = await build(t)
  for (const token of ['short', 'a'.repeat(65), 'has.dots.in.it.0123456789', '%2e%2e%2f0123456789abcdef']) {
    for (const method of ['GET', 'POST'] as const) {
      const res = await app.inject({ method, url: `/console/sink/${token}`, ...(method === 'POST' ? { payload: {} } : {}) })
      t.equal(res.statusCode, 400, `${method} ${token}`)
      t.same(res.json(), { statusCode: 400, error: 'Bad Request', message: 'token: must be 16 to 64 characters of A-Z, a-z, 0-9, _ or -' })
    }
  }
  const big = await app.inject({ method: 'POST', url: `/console/sink/${TOKEN}`, payload: { id: 'x', pad: 'x'.repeat(256 * 1024) } })
  t.equal(big.statusCode, 413)
  t.same((await app.inject(`/console/sink/${TOKEN}`)).json().deliveries, [], 'nothing kept')
})

t.test('the sink keeps at most 50 deliveries per token', async t => {
  const app = await build(t)
  for (let i = 1; i <= 53; i++) {
    await app.inject({ method: 'POST', url: `/console/sink/${TOKEN}`, payload: { id: `t${i}` } })
  }
  const { deliveries } = (await app.inject(`/console/sink/${TOKEN}`)).json()
  t.equal(deliveries.length, 50)
  t.equal(deliveries[0].taskId, 't53')
  t.equal(deliveries[49].taskId, 't4', 'the oldest went first')
})

/** The sink URL the server gives, and a push config `set` on a fresh task for any URL. */
/** GETs a sink's JSON. */
async function sinkOf (url: string): Promise<{ url: string, deliveries: any[] }> {
  return await (await fetch(url)).json() as { url: string, deliveries: any[] }
}

async function listening (t: Parameters<typeof listen>[0], opts: Parameters<typeof listen>[1] = {}, prefix = '') {
  const { app, url } = await listen(t, opts)
  const sink = (await sinkOf(`${url}${prefix}/console/sink/${TOKEN}`)).url
  const task = (await call(app, 'message/send', { message: userMessage('x') }, `${prefix}/`)).body.result
  const set = async (hook: string) => (await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: hook } }, `${prefix}/`)).body
  return { app, url, sink, set, port: new URL(url).port }
}

t.test('push to the console sink is allowed and delivered; every other loopback URL stays refused', async t => {
  const { app, url, sink, set, port } = await listening(t)
  t.equal(sink, `${url}/console/sink/${TOKEN}`)
  t.notOk((await set(sink)).error, 'the own sink URL is accepted')
  const refused = [
    `${url}/`,
    `${url}/console`,
    `${url}/console/sink/short`,
    `${sink}?x=1`,
    `${sink}#x`,
    `${sink}/more`,
    `http://127.0.0.1:${Number(port) === 65535 ? 1 : Number(port) + 1}/console/sink/${TOKEN}`,
    `http://localhost:${port}/console/sink/${TOKEN}`,
    `http://[::1]:${port}/console/sink/${TOKEN}`,
    `http://127.0.0.2:${port}/console/sink/${TOKEN}`
  ]
  for (const hook of refused) {
    const { error } = await set(hook)
    t.equal(error?.code, -32602, hook)
  }
  t.match((await set(`https://127.0.0.1:${port}/console/sink/${TOKEN}`)).error, { code: -32602, data: /loopback/ }, 'https is not what the server speaks')
  const sent = await call(app, 'message/send', { message: userMessage('hi'), configuration: { pushNotificationConfig: { url: sink, token: 'n' } } })
  const id = sent.body.result.id
  const seen = async () => (await sinkOf(sink)).deliveries.filter(d => d.taskId === id)
  await until(async () => (await seen()).some(d => d.state === 'completed'))
  t.match((await seen())[0].headers, { 'user-agent': /^fastify-a2a-notifier\//, 'x-a2a-notification-token': '[set]' })
})

t.test('the exemption follows the prefix, and the scheme rules still apply to it', async t => {
  const host = Fastify({ logger: false })
  await host.register(a2a, { prefix: '/agent', config: { push_notifications: { config: { require_https: true } } } })
  const url = await host.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => host.close())
  const sink = (await sinkOf(`${url}/agent/console/sink/${TOKEN}`)).url
  t.equal(sink, `${url}/agent/console/sink/${TOKEN}`)
  const task = (await call(host, 'message/send', { message: userMessage('x') }, '/agent/')).body.result
  const set = async (hook: string) => (await call(host, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: hook } }, '/agent/')).body
  t.match((await set(sink)).error, { code: -32602, data: 'params.pushNotificationConfig.url: must use https' })

  const plain = await listening(t, { prefix: '/agent' }, '/agent')
  t.notOk((await plain.set(plain.sink)).error)
  t.equal((await plain.set(`${plain.url}/console/sink/${TOKEN}`)).error.code, -32602, 'the sink path without the prefix is not exempt')
})

t.test('with the console off, its former sink URL is an ordinary loopback URL', async t => {
  const { url, set } = await listening(t, { config: { console: { enabled: false } } })
  t.match((await set(`${url}/console/sink/${TOKEN}`)).error, { code: -32602, data: /loopback/ })
})
