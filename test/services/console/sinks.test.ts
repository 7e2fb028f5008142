import t from 'tap'
import { validateConfig } from '../../../services/config/load.js'
import { ConsoleSinks, consoleEnabled, type ConsoleSinksOptions, type Endpoint } from '../../../services/console/sinks.js'
import { createUrlPolicy } from '../../../services/push/url-policy.js'

const TOKEN = 'sink-token-0123456789abcdef'

function sinks (addresses: Array<Endpoint | string> = [], extra: Partial<ConsoleSinksOptions> = {}): ConsoleSinks {
  return new ConsoleSinks({ prefix: '/', addresses: () => addresses, ...extra })
}

const owns = (s: ConsoleSinks, url: string) => s.owns(new URL(url))

t.test('console.enabled: auto is on exactly when security is off', async t => {
  const secured = { enabled: true, auth: { api_key: { keys: [{ key: 'k-0123456789', scopes: [] }] } } }
  t.equal(consoleEnabled(validateConfig({})), true)
  t.equal(consoleEnabled(validateConfig({ security: secured })), false)
  t.equal(consoleEnabled(validateConfig({ security: secured, console: { enabled: true } })), true)
  t.equal(consoleEnabled(validateConfig({ console: { enabled: false } })), false)
})

t.test('the sink URL is the first TCP address, loopback when the server listens on every address', async t => {
  t.equal(sinks().urlFor(TOKEN), null, 'not listening')
  t.equal(sinks(['/tmp/a2a.sock']).urlFor(TOKEN), null, 'a Unix socket only')
  t.equal(sinks([{ address: '127.0.0.1', port: 8000 }]).urlFor(TOKEN), `http://127.0.0.1:8000/console/sink/${TOKEN}`)
  t.equal(sinks([{ address: '0.0.0.0', port: 8000 }]).urlFor(TOKEN), `http://127.0.0.1:8000/console/sink/${TOKEN}`)
  t.equal(sinks([{ address: '::', port: 8000 }]).urlFor(TOKEN), `http://[::1]:8000/console/sink/${TOKEN}`)
  t.equal(sinks([{ address: '::1', port: 8000 }], { prefix: '/agent' }).urlFor(TOKEN), `http://[::1]:8000/agent/console/sink/${TOKEN}`)
})

t.test('own sink URLs: the listening address and port, or loopback when listening on every address', async t => {
  const wildcard = sinks(['/tmp/a2a.sock', { address: '0.0.0.0', port: 80 }])
  t.equal(owns(wildcard, `http://127.0.0.1/console/sink/${TOKEN}`), true, 'default port 80')
  t.equal(owns(wildcard, `http://127.9.9.9:80/console/sink/${TOKEN}`), true)
  t.equal(owns(wildcard, `http://[::1]/console/sink/${TOKEN}`), true)
  t.equal(owns(wildcard, `http://10.0.0.1/console/sink/${TOKEN}`), false, 'a private address is not loopback')
  t.equal(owns(wildcard, `http://[::ffff:127.0.0.1]/console/sink/${TOKEN}`), false, 'mapped forms are not taken')
  t.equal(owns(wildcard, `http://localhost/console/sink/${TOKEN}`), false, 'names are never taken')
  t.equal(owns(wildcard, `http://127.0.0.1:81/console/sink/${TOKEN}`), false)
  const v6 = sinks([{ address: '::1', port: 9000 }])
  t.equal(owns(v6, `http://[0:0:0:0:0:0:0:1]:9000/console/sink/${TOKEN}`), true, 'IPv6 compared in full form')
  t.equal(owns(v6, `http://127.0.0.1:9000/console/sink/${TOKEN}`), false, 'another family')
  t.equal(owns(sinks(), `http://127.0.0.1:9000/console/sink/${TOKEN}`), false, 'not listening: nothing is own')
  for (const url of [`https://[::1]:9000/console/sink/${TOKEN}`, `http://[::1]:9000/console/sink/${TOKEN}?a`,
    `http://[::1]:9000/console/sink/${TOKEN}#a`, `http://[::1]:9000/console/${TOKEN}`, 'http://[::1]:9000/console/sink/x']) {
    t.equal(owns(v6, url), false, url)
  }
})

t.test('the caps: entries per sink, number of sinks, and bytes across sinks', async t => {
  const few = sinks([], { maxEntries: 2, maxSinks: 2, maxBytes: 10 })
  few.record('a'.repeat(16), {}, '1234')
  few.record('a'.repeat(16), {}, '5678')
  few.record('a'.repeat(16), {}, '9')
  t.same(few.list('a'.repeat(16)).map(d => d.body), ['9', '5678'], 'the oldest entry of a full sink goes')
  few.record('b'.repeat(16), {}, 'bb')
  few.record('c'.repeat(16), {}, 'cc')
  t.same(few.list('a'.repeat(16)), [], 'the least recently written sink goes past maxSinks')
  few.record('b'.repeat(16), {}, 'b2')
  few.record('c'.repeat(16), {}, '123456')
  t.same(few.list('b'.repeat(16)).map(d => d.body), ['b2'], 'past maxBytes, the oldest entries of the least recent sink go')
  few.record('c'.repeat(16), {}, '123')
  t.same(few.list('b'.repeat(16)), [], 'an emptied sink is dropped')
  t.same(few.list('c'.repeat(16)).map(d => d.body), ['123', '123456'], 'then the next least recent sink gives way')
})

t.test('a delivery summary takes the task id and state only when they are strings', async t => {
  const s = sinks()
  const summary = (body: string) => {
    const { taskId, state } = s.record(TOKEN, { 'x-api-key': ['k'], 'content-type': 'application/json' }, body)
    return { taskId, state }
  }
  t.same(summary('null'), { taskId: null, state: null })
  t.same(summary('{"id":1,"status":{"state":2}}'), { taskId: null, state: null })
  t.same(summary('{"id":"t"}'), { taskId: 't', state: null })
  t.same(summary('{"id":"t","status":{"state":"working"}}'), { taskId: 't', state: 'working' })
  t.same(s.list(TOKEN)[0].headers, { 'content-type': 'application/json', 'x-api-key': '[set]' })
})

t.test('the URL policy exemption skips the address and domain rules only', async t => {
  const exempt = (url: URL) => url.pathname === '/own'
  const policy = createUrlPolicy({ validateUrls: true, requireHttps: false, allowedDomains: ['*.example.com'], allowedNetworks: [], exempt })
  t.match(policy.checkUrl('http://127.0.0.1:1/own'), { ok: true })
  t.match(policy.checkUrl('http://127.0.0.1:1/other'), { ok: false, reason: /loopback/ })
  t.match(policy.checkUrl('http://user:pw@127.0.0.1:1/own'), { ok: false, reason: /credentials/ })
  t.match(policy.checkUrl('ftp://127.0.0.1:1/own'), { ok: false, reason: /scheme/ })
  const strict = createUrlPolicy({ validateUrls: true, requireHttps: true, allowedDomains: [], allowedNetworks: [], exempt })
  t.match(strict.checkUrl('http://127.0.0.1:1/own'), { ok: false, reason: 'url: must use https' })
})

t.test('a delivery names its task and state from a v0.3 Task or a v1.0 {task} body, as the body spells them', async t => {
  const s = sinks()
  const v10 = JSON.stringify({ task: { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } })
  t.match(s.record(TOKEN, {}, v10), { taskId: 't1', state: 'TASK_STATE_COMPLETED' })
  t.match(s.record(TOKEN, {}, JSON.stringify({ id: 't2', kind: 'task', status: { state: 'working' } })), { taskId: 't2', state: 'working' })
  t.match(s.record(TOKEN, {}, JSON.stringify({ task: null })), { taskId: null, state: null })
  t.match(s.record(TOKEN, {}, JSON.stringify({ task: 'x', id: 7 })), { taskId: null, state: null })
  t.match(s.record(TOKEN, {}, 'null'), { taskId: null, state: null })
})
