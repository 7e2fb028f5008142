import http from 'node:http'
import { once } from 'node:events'
import t from 'tap'
import { lazyGot } from '../../../services/kernel/lazy-got.js'

t.test('lazyGot makes one instance, configures it once and answers the same promise every time', async t => {
  const seen: Array<{ body: string, configured: unknown }> = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', chunk => { body += chunk })
    req.on('end', () => {
      seen.push({ body, configured: req.headers['x-configured'] })
      res.writeHead(201, { 'content-type': 'text/plain' }).end('made')
    })
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const { port } = server.address() as { port: number }

  let configured = 0
  const client = lazyGot({ prefixUrl: `http://127.0.0.1:${port}`, retry: { limit: 0 }, mutableDefaults: true }, made => {
    configured++
    made.defaults.options.headers['x-configured'] = 'yes'
  })
  t.equal(configured, 0, 'nothing is made until asked for')
  const first = client()
  t.equal(client(), first, 'the same promise while it loads')
  const got = await first
  t.equal(client(), first, 'and once it has')
  t.equal(configured, 1)
  const res = await got.post('hook', { body: 'one' })
  t.equal(res.statusCode, 201)
  t.equal(res.body, 'made')
  t.same(seen, [{ body: 'one', configured: 'yes' }], 'the configured instance sent it')

  const other = lazyGot({ prefixUrl: `http://127.0.0.1:${port}` })
  t.not(await other(), got, 'each lazyGot has its own instance')
})
