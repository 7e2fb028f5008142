import t from 'tap'
import type { AgentExecutor } from '../../index.js'
import { verify, signingKey } from '../../services/push/signing.js'
import { build, buildLogged, call, receiver, until, userMessage } from '../helper.js'

/** Push settings that let deliveries reach a receiver on 127.0.0.1, with a fast retry schedule. */
function pushConfig (extra: Record<string, unknown> = {}) {
  return {
    push_notifications: {
      config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.01, timeout: 1, ...extra }
    }
  }
}

t.test('set, get, list and delete follow the contract: default id, upserts, most recent, no credentials', async t => {
  const app = await build(t, { config: pushConfig() })
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  const first = await call(app, 'tasks/pushNotificationConfig/set', {
    taskId: task.id,
    pushNotificationConfig: { url: 'https://hooks.example.com/a', token: 'tok', authentication: { schemes: ['Bearer'], credentials: 'secret-cred' } }
  })
  t.same(first.body.result, {
    taskId: task.id,
    pushNotificationConfig: { id: 'default', url: 'https://hooks.example.com/a', token: 'tok', authentication: { schemes: ['Bearer'] } }
  })
  const second = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/b' } })
  const secondId = second.body.result.pushNotificationConfig.id
  t.match(secondId, /^[0-9a-f-]{36}$/)
  const sameUrl = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/a', token: 'tok2' } })
  t.equal(sameUrl.body.result.pushNotificationConfig.id, 'default', 'same url without id replaces and keeps the id')
  const latest = await call(app, 'tasks/pushNotificationConfig/get', { id: task.id })
  t.equal(latest.body.result.pushNotificationConfig.token, 'tok2', 'get without an id is the most recently set')
  const byId = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { id: secondId, url: 'https://hooks.example.com/c' } })
  t.equal(byId.body.result.pushNotificationConfig.url, 'https://hooks.example.com/c')
  const list = await call(app, 'tasks/pushNotificationConfig/list', { id: task.id })
  t.same(list.body.result.map((c: any) => c.pushNotificationConfig.id), ['default', secondId], 'creation order, replacements keep their place')
  t.notMatch(JSON.stringify(list.body), /secret-cred/)
  const one = await call(app, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'default' })
  t.equal(one.body.result.pushNotificationConfig.url, 'https://hooks.example.com/a')
  const deleted = await call(app, 'tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'default' })
  t.same(deleted.body, { jsonrpc: '2.0', id: deleted.body.id, result: null })
  const again = await call(app, 'tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'default' })
  t.same(again.body.error, { code: -32001, message: 'Task not found', data: `push notification config "default" was not found for task "${task.id}"` })
  const gone = await call(app, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'default' })
  t.equal(gone.body.error.code, -32001)
})

t.test('a task holds at most 10 push configs; the 11th is -32602 and nothing changes', async t => {
  const app = await build(t, { config: pushConfig() })
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  for (let i = 0; i < 10; i++) {
    const res = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: `https://hooks.example.com/${i}` } })
    t.notOk(res.body.error)
  }
  const over = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/11' } })
  t.same(over.body.error, { code: -32602, message: 'Invalid params', data: 'params.pushNotificationConfig: a task has at most 10 push configs' })
  const list = await call(app, 'tasks/pushNotificationConfig/list', { id: task.id })
  t.equal(list.body.result.length, 10)
  const replace = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/3', token: 't' } })
  t.notOk(replace.body.error, 'replacing still works at the cap')
})

t.test('unknown tasks and configs are -32001 on every push method', async t => {
  const app = await build(t)
  const cases: Array<[string, unknown]> = [
    ['tasks/pushNotificationConfig/set', { taskId: 'nope', pushNotificationConfig: { url: 'https://hooks.example.com/' } }],
    ['tasks/pushNotificationConfig/get', { id: 'nope' }],
    ['tasks/pushNotificationConfig/list', { id: 'nope' }],
    ['tasks/pushNotificationConfig/delete', { id: 'nope', pushNotificationConfigId: 'x' }]
  ]
  for (const [method, params] of cases) {
    const res = await call(app, method, params)
    t.same(res.body.error, { code: -32001, message: 'Task not found', data: 'task "nope" was not found' }, method)
  }
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  const none = await call(app, 'tasks/pushNotificationConfig/get', { id: task.id })
  t.same(none.body.error, { code: -32001, message: 'Task not found', data: `task "${task.id}" has no push notification config` })
  const empty = await call(app, 'tasks/pushNotificationConfig/list', { id: task.id })
  t.same(empty.body.result, [])
})

t.test('with push notifications off the four methods are unknown (-32601)', async t => {
  const app = await build(t, { config: { push_notifications: { enabled: false } } })
  for (const method of ['set', 'get', 'list', 'delete']) {
    const res = await call(app, `tasks/pushNotificationConfig/${method}`, { id: 'x' })
    t.equal(res.body.error.code, -32601, method)
  }
})

t.test('malformed configs and refused urls are -32602 with the reason', async t => {
  const app = await build(t)
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  const cases: Array<[unknown, string | RegExp]> = [
    [{}, 'params.pushNotificationConfig.url: required'],
    [{ url: 'https://hooks.example.com/', authentication: { schemes: 'Bearer' } }, 'params.pushNotificationConfig.authentication.schemes: must be array'],
    [{ url: 'https://hooks.example.com/', authentication: { schemes: ['Bearer'], credentials: 5 } }, 'params.pushNotificationConfig.authentication.credentials: must be string'],
    [{ url: 'https://hooks.example.com/', authentication: { schemes: ['Basic'] } }, /^params\.pushNotificationConfig\.authentication\.schemes: Basic not supported/],
    [{ url: 'http://127.0.0.1:9/hook' }, /^params\.pushNotificationConfig\.url: /],
    [{ url: 'http://10.1.2.3/hook' }, /^params\.pushNotificationConfig\.url: /],
    [{ url: 'http://localhost/hook' }, /^params\.pushNotificationConfig\.url: /],
    [{ url: 'http://[::1]/hook' }, /^params\.pushNotificationConfig\.url: /],
    [{ url: 'ftp://hooks.example.com/' }, /^params\.pushNotificationConfig\.url: /],
    [{ url: 'not a url' }, /^params\.pushNotificationConfig\.url: /]
  ]
  for (const [config, data] of cases) {
    const res = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: config })
    t.equal(res.body.error?.code, -32602, JSON.stringify(config))
    t.match(res.body.error?.data, data, JSON.stringify(config))
  }
  const list = await call(app, 'tasks/pushNotificationConfig/list', { id: task.id })
  t.same(list.body.result, [], 'nothing was stored')
})

t.test('a message with a refused push url gets -32602 and makes no task', async t => {
  const app = await build(t)
  const res = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: 'http://192.168.1.1/' } } })
  t.match(res.body.error, { code: -32602, data: /^params\.configuration\.pushNotificationConfig\.url: / })
  t.same((await call(app, 'tasks/list', {})).body.result.tasks, [])
})

t.test('message/send with a push config delivers every state change, in order, with the contract headers', async t => {
  const hook = await receiver(t)
  const app = await build(t, {
    config: pushConfig({ default_headers: { 'X-Team': 'blue', 'User-Agent': 'spoof', Authorization: 'spoof' } })
  })
  const res = await call(app, 'message/send', {
    message: userMessage('push me'),
    configuration: { pushNotificationConfig: { url: `${hook.url}/hook`, token: 'client-token', authentication: { schemes: ['Bearer'], credentials: 'cred-1' } } }
  })
  t.equal(res.body.result.status.state, 'completed')
  await until(() => hook.received.length === 2)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'completed'])
  const last = hook.received[1]
  t.equal(last.path, '/hook')
  t.match(last.headers['content-type'], /^application\/json/)
  t.match(last.headers['user-agent'], /^fastify-a2a-notifier\/\d+\.\d+\.\d+/)
  t.equal(last.headers['x-a2a-notification-token'], 'client-token')
  t.equal(last.headers.authorization, 'Bearer cred-1')
  t.equal(last.headers['x-team'], 'blue')
  t.match(last.body, { id: res.body.result.id, kind: 'task', status: { state: 'completed' }, artifacts: [{ name: 'Agent-result' }] })
})

t.test('the ApiKey scheme sends X-API-Key', async t => {
  const hook = await receiver(t)
  const app = await build(t, { config: pushConfig() })
  await call(app, 'message/send', {
    message: userMessage('x'),
    configuration: { pushNotificationConfig: { url: hook.url, authentication: { schemes: ['ApiKey'], credentials: 'key-9' } } }
  })
  await until(() => hook.received.length === 2)
  t.equal(hook.received[0].headers['x-api-key'], 'key-9')
  t.equal(hook.received[0].headers.authorization, undefined)
})

t.test('a set on a running task gets its later states; the a2a dialect names them', async t => {
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  const executor: AgentExecutor = async function * () { await gate; yield 'done' }
  const hook = await receiver(t)
  const app = await build(t, { executor, config: { ...pushConfig(), protocol: { dialect: 'a2a' } } })
  const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { blocking: false } })
  await until(async () => (await app.a2aTasks.store.get(sent.body.result.id))?.task.status.state === 'in_progress')
  await call(app, 'tasks/pushNotificationConfig/set', { taskId: sent.body.result.id, pushNotificationConfig: { url: hook.url } })
  release()
  await until(() => hook.received.length === 1)
  t.equal(hook.received[0].body.status.state, 'completed')
})

t.test('receiver answers 500, 500, 200: three attempts, then delivered', async t => {
  const hook = await receiver(t)
  hook.script(500, 500, 200)
  const { app, logs } = await buildLogged(t, { config: pushConfig() })
  const executor = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: hook.url, token: 'never-logged' } } })
  t.equal(executor.body.result.status.state, 'completed')
  await until(() => hook.received.length === 4)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'in_progress', 'in_progress', 'completed'])
  const failures = logs.lines().filter(l => l.msg === 'webhook delivery failed, will retry')
  t.same(failures.map(l => [l.attempt, l.status]), [[1, 500], [2, 500]])
  t.match(failures[0], { taskId: executor.body.result.id, configId: 'default', host: `127.0.0.1:${hook.port}` })
  t.notMatch(logs.text(), /never-logged/)
})

t.test('a 404 is final after one attempt; a 410 removes the config; a 301 is not followed', async t => {
  for (const [status, attempts] of [[404, 2], [301, 2]] as const) {
    const hook = await receiver(t)
    hook.script(status, 200)
    const app = await build(t, { config: pushConfig() })
    await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: hook.url } } })
    await until(() => hook.received.length === attempts)
    await until(async () => (await app.a2aNotifier.backlog()) === 0)
    t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'completed'], `${status}: no retry, the next state still goes`)
    t.same(hook.received.map(r => r.path), ['/', '/'], `${status}: no redirect followed`)
  }
  const hook = await receiver(t)
  hook.script(410)
  const app = await build(t, { config: pushConfig() })
  const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: hook.url } } })
  await until(async () => (await call(app, 'tasks/pushNotificationConfig/list', { id: sent.body.result.id })).body.result.length === 0)
  await until(async () => (await app.a2aNotifier.backlog()) === 0)
  t.equal(hook.received.length, 1, 'after 410 nothing more is sent')
})

t.test('a receiver that is down, too slow or answers 10 MB never touches the caller or the server', async t => {
  const slow = await receiver(t)
  slow.script(async () => { await new Promise(resolve => setTimeout(resolve, 1500)); return { status: 200 } })
  const huge = await receiver(t)
  huge.script(async () => ({ status: 200, body: Buffer.alloc(10 * 1024 * 1024, 120) }))
  const { app, logs } = await buildLogged(t, { config: pushConfig({ max_retries: 1 }) })
  // Nothing listens on port 1 of 127.0.0.1: the connection is refused.
  const down = 'http://127.0.0.1:1/hook'
  for (const url of [down, slow.url, huge.url]) {
    const res = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url } } })
    t.equal(res.body.result.status.state, 'completed', url)
  }
  await until(async () => (await app.a2aNotifier.backlog()) === 0, 1000)
  t.equal(huge.received.length, 2, 'the huge answers were read and dropped, both states delivered')
  const failed = logs.lines().filter(l => l.msg === 'webhook delivery failed')
  t.ok(failed.some(l => l.host === '127.0.0.1:1' && l.code === 'ECONNREFUSED'), 'connection refused is logged')
  t.ok(failed.some(l => l.host === `127.0.0.1:${slow.port}` && l.code === 'ETIMEDOUT'), 'the timeout is logged')
  t.equal((await app.inject('/health')).statusCode, 200)
})

t.test('signed deliveries carry Standard Webhooks headers; the id stays the same across retries', async t => {
  const hook = await receiver(t)
  hook.script(503, 200)
  const secret = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')
  const app = await build(t, { config: pushConfig({ signing_secret: secret }) })
  await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: hook.url } } })
  await until(() => hook.received.length === 3)
  const [firstTry, retry, next] = hook.received
  t.equal(firstTry.headers['webhook-id'], retry.headers['webhook-id'])
  t.not(retry.headers['webhook-id'], next.headers['webhook-id'])
  for (const r of hook.received) {
    t.match(r.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/)
    t.ok(verify(signingKey(secret), r.headers, r.raw), 'the signature verifies')
  }
})

t.test('a name that resolves to a private address is refused at connect time (DNS rebinding)', async t => {
  const hook = await receiver(t)
  const resolveWebhookHost = async () => [{ address: '127.0.0.1', family: 4 }]
  const { app, logs } = await buildLogged(t, { resolveWebhookHost })
  const url = `http://hooks.example.com:${hook.port}/hook`
  const res = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url } } })
  t.equal(res.body.result.status.state, 'completed', 'the name was accepted at set time')
  await until(async () => (await app.a2aNotifier.backlog()) === 0)
  t.equal(hook.received.length, 0)
  const refused = logs.lines().filter(l => l.msg === 'webhook delivery failed')
  t.same(refused.map(l => [l.code, l.attempt]), [['A2A_ERR_UNSAFE_ADDRESS', 1], ['A2A_ERR_UNSAFE_ADDRESS', 1]], 'refused once per state, never retried')

  const allowed = await build(t, { resolveWebhookHost, config: pushConfig() })
  await call(allowed, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url } } })
  await until(() => hook.received.length === 2)
  t.equal(hook.received[0].path, '/hook', 'allowed_networks admits the address')
})

t.test('a message joining a task may bring a push config: it is stored before the task resumes', async t => {
  const executor: AgentExecutor = async function * (ctx) {
    if (ctx.task.history.length === 1) yield { kind: 'status', state: 'input_required', message: 'more?' }
    else yield 'thanks'
  }
  const hook = await receiver(t)
  const app = await build(t, { executor, config: pushConfig() })
  const first = await call(app, 'message/send', { message: userMessage('start') })
  t.equal(first.body.result.status.state, 'input_required')
  const second = await call(app, 'message/send', {
    message: userMessage('more', { taskId: first.body.result.id }),
    configuration: { pushNotificationConfig: { url: hook.url } }
  })
  t.equal(second.body.result.status.state, 'completed')
  await until(() => hook.received.length === 2)
  t.same(hook.received.map(r => r.body.status.state), ['in_progress', 'completed'])
})

t.test('message/stream may bring a push config too', async t => {
  const hook = await receiver(t)
  const { listen, postStream, rpc } = await import('../helper.js')
  const { url } = await listen(t, { config: pushConfig() })
  const res = await postStream(url, rpc('message/stream', { message: userMessage('x'), configuration: { pushNotificationConfig: { url: hook.url } } }))
  t.equal(res.events[res.events.length - 1].result.status.state, 'completed')
  await until(() => hook.received.length === 2)
})

t.test('a token or credentials that cannot be a header value are refused at set with -32602 naming the field', async t => {
  const app = await build(t)
  const task = (await call(app, 'message/send', { message: userMessage('x') })).body.result
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ token: 'a\r\nX-Injected: 1' }, 'params.pushNotificationConfig.token'],
    [{ token: 'nul\u0000' }, 'params.pushNotificationConfig.token'],
    [{ authentication: { schemes: ['Bearer'], credentials: 'secret\nmore' } }, 'params.pushNotificationConfig.authentication.credentials'],
    [{ authentication: { schemes: ['ApiKey'], credentials: 'snow\u2603man' } }, 'params.pushNotificationConfig.authentication.credentials']
  ]
  for (const [extra, field] of cases) {
    const res = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/h', ...extra } })
    t.match(res.body.error, { code: -32602, data: new RegExp(`^${field.replace(/\./g, '\\.')}: must be a valid header value`) }, field)
  }
  t.same((await call(app, 'tasks/pushNotificationConfig/list', { id: task.id })).body.result, [], 'nothing was stored')
  const ok = await call(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://hooks.example.com/h', token: 'tab\tand latin-1 \u00e9' } })
  t.equal(ok.body.result.pushNotificationConfig.token, 'tab\tand latin-1 \u00e9')
})

t.test('webhook names whose resolver never answers hold at most two lookups; the server keeps answering and closes', async t => {
  // 60 tasks, each with a push config to a name of its own, on a resolver that answers none of them (a DNS server
  // gone quiet, or names an attacker's server never answers): the system resolver would run each on a thread of
  // the pool that file reads share.
  const held: Array<(err: Error) => void> = []
  let running = 0
  let most = 0
  const resolveWebhookHost = async (): Promise<Array<{ address: string, family: number }>> => {
    running++
    most = Math.max(most, running)
    try {
      return await new Promise((_resolve, reject) => { held.push(reject) })
    } finally {
      running--
    }
  }
  const app = await build(t, { resolveWebhookHost, config: { ...pushConfig(), server: { shutdown_timeout: 1 } } })
  t.teardown(() => { for (const reject of held.splice(0)) reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })) })
  const sent = await Promise.all(Array.from({ length: 60 }, async (_, i) => await call(app, 'message/send', {
    message: userMessage(`x${i}`),
    configuration: { pushNotificationConfig: { url: `http://n${i}.hooks.example.com/hook` } }
  })))
  t.same(new Set(sent.map(res => res.body.result?.status.state)), new Set(['completed']), 'every send is answered')
  await until(() => running === 2)
  const got = await call(app, 'tasks/get', { id: sent[0].body.result.id })
  t.equal(got.body.result.status.state, 'completed', 'the server answers while the lookups hang')
  t.equal(most, 2, 'never more than two lookups at once')
  await app.close()
  t.pass('the server closed, the lookups still unanswered')
})
