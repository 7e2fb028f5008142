import Fastify from 'fastify'
import t from 'tap'
import a2a from '../../index.js'
import { escapeHtml, prefersHtml } from '../../routes/root.js'
import { build, rpc } from '../helper.js'

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

t.test('GET / answers JSON naming the agent, the A2A versions and where to go next', async t => {
  const app = await build(t, { config: { agent: { name: 'Root Agent', description: 'Says where things are' } } })
  for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html;q=0.5']) {
    const res = await app.inject({ url: '/', headers: accept === undefined ? {} : { accept } })
    t.equal(res.statusCode, 200, `Accept: ${accept}`)
    t.match(res.headers['content-type'], /^application\/json/, `Accept: ${accept}`)
    t.equal(res.headers.vary, 'Accept')
  }
  const res = await app.inject('/')
  t.same(res.json(), {
    name: 'Root Agent',
    description: 'Says where things are',
    version: '1.0.0',
    a2aVersions: ['0.3', '1.0'],
    jsonRpc: 'POST /',
    links: {
      card: '/.well-known/agent-card.json',
      console: '/console',
      health: '/health',
      ready: '/ready',
      openrpc: '/openrpc.json',
      openapi: '/openapi.json'
    },
    docs: 'README.md and the docs/ folder of the fastify-a2a package'
  })
  // Every link it gives answers.
  for (const path of Object.values(res.json().links as Record<string, string>)) {
    t.equal((await app.inject(path)).statusCode, 200, path)
  }
  t.equal((await app.inject({ method: 'HEAD', url: '/' })).statusCode, 200)
})

t.test('the links follow the config: metrics on, console and HTTP+JSON off', async t => {
  const app = await build(t, { config: { metrics: { enabled: true }, console: { enabled: false }, protocol: { rest: false } } })
  t.same(Object.keys((await app.inject('/')).json().links), ['card', 'health', 'ready', 'metrics', 'openrpc'])
})

t.test('a browser gets a small HTML page with the same links, every value escaped', async t => {
  const name = '<script>alert("x")</script> & Co\'s'
  const app = await build(t, { config: { agent: { name, description: '<img src=x onerror=alert(1)>' } } })
  const res = await app.inject({ url: '/', headers: { accept: BROWSER } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8/)
  t.match(res.headers['content-security-policy'], /default-src 'none'/)
  t.notMatch(res.body, /<script|<img/, 'no markup from the config')
  t.match(res.body, '<h1>&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; Co&#39;s</h1>')
  t.match(res.body, '<a href="/.well-known/agent-card.json">Agent card</a>')
  t.match(res.body, '<a href="/console">Developer console</a>')
  t.match(res.body, 'A2A 0.3 and 1.0')
  t.match(res.body, 'README.md and the docs/ folder of the fastify-a2a package')
})

t.test('POST / stays the JSON-RPC endpoint, and GET / needs no credentials when security is on', async t => {
  const app = await build(t, {
    config: { security: { enabled: true, auth: { api_key: { keys: [{ key: 'test-key-0123456789' }] } } } }
  })
  const info = await app.inject('/')
  t.equal(info.statusCode, 200)
  t.equal(info.json().links.console, undefined, 'the console is off with security on')
  t.equal((await app.inject({ method: 'POST', url: '/', payload: rpc('status') })).statusCode, 401)
  const status = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': 'test-key-0123456789' }, payload: rpc('status') })
  t.equal(status.statusCode, 200)
  t.match(status.json(), { jsonrpc: '2.0', result: {} })
})

t.test('embedded under a prefix, GET /agent and /agent/ answer with the prefixed links; the host keeps its /', async t => {
  const host = Fastify({ logger: false })
  host.get('/', async () => ({ host: 'home' }))
  await host.register(a2a, { prefix: '/agent/', config: { agent: { name: 'Embedded' } } })
  await host.ready()
  t.teardown(() => host.close())
  t.same((await host.inject('/')).json(), { host: 'home' })
  for (const url of ['/agent', '/agent/']) {
    const res = await host.inject(url)
    t.equal(res.statusCode, 200, url)
    t.match(res.json(), { name: 'Embedded', jsonRpc: 'POST /agent/', links: { card: '/agent/.well-known/agent-card.json', health: '/agent/health' } }, url)
  }
  const page = await host.inject({ url: '/agent/', headers: { accept: BROWSER } })
  t.match(page.body, '<a href="/agent/console">')
})

t.test('prefersHtml weighs text/html against application/json by q-value', async t => {
  t.equal(prefersHtml(undefined), false)
  t.equal(prefersHtml(BROWSER), true)
  t.equal(prefersHtml('text/html'), true)
  t.equal(prefersHtml('TEXT/HTML; q=0.8, application/json; q=0.5'), true)
  t.equal(prefersHtml('text/html;q=0.5, application/json'), false)
  t.equal(prefersHtml('application/json, text/html'), false, 'a tie goes to JSON')
  t.equal(prefersHtml('text/html;q=0'), false)
  t.equal(prefersHtml('text/html;q=abc'), false, 'a q-value that is not a number')
  t.equal(prefersHtml('*/*'), false)
})

t.test('escapeHtml escapes the five characters that matter in text and quoted attributes', async t => {
  t.equal(escapeHtml('<a href="x">\'&\'</a>'), '&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;')
  t.equal(escapeHtml('plain text'), 'plain text')
})
