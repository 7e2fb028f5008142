import t from 'tap'
import { majorMinor } from '../../services/a2a/version.js'
import { build, listen, parseSse, rpc, userMessage } from '../helper.js'

t.test('CONTRACT.md §11.1: A2A-Version is reduced to Major.Minor; empty counts as absent', async t => {
  t.equal(majorMinor(undefined), undefined)
  t.equal(majorMinor(''), undefined)
  t.equal(majorMinor('1'), '1.0')
  t.equal(majorMinor('1.0'), '1.0')
  t.equal(majorMinor('1.0.1'), '1.0')
  t.equal(majorMinor('0.3.0'), '0.3')
  t.equal(majorMinor(' 0.3 '), '0.3')
  t.equal(majorMinor('2.0'), '2.0')
  for (const garbage of ['v1', '1.0.1.2', 'one', '1.', '.3', '1.0, 1.0', '-1']) t.equal(majorMinor(garbage), null, garbage)
  t.equal(majorMinor(['1.0']), null)
})

t.test('CONTRACT.md §11.1: a supported version, or none, is served by the method name', async t => {
  const app = await build(t)
  for (const version of [undefined, '', '0.3', '0.3.0', '1', '1.0', '1.0.1']) {
    const headers: Record<string, string> = version === undefined ? {} : { 'a2a-version': version }
    const res = await app.inject({ method: 'POST', url: '/', headers, payload: rpc('message/send', { message: userMessage('v') }) })
    t.equal(res.statusCode, 200)
    t.equal(res.json().result.status.state, 'completed', `A2A-Version ${JSON.stringify(version)}`)
  }
})

t.test('CONTRACT.md §11.1: an unsupported or unparseable version is -32009 at HTTP 200, from the header or the query', async t => {
  const app = await build(t)
  const cases: Array<[Record<string, string>, string, string]> = [
    [{ 'a2a-version': '2.0' }, '/', '"2.0"'],
    [{ 'a2a-version': 'garbage' }, '/', '"garbage"'],
    [{}, '/?A2A-Version=2', '"2"'],
    [{ 'a2a-version': '' }, '/?A2A-Version=0.2', '"0.2"']
  ]
  for (const [headers, url, shown] of cases) {
    const res = await app.inject({ method: 'POST', url, headers, payload: rpc('tasks/get', { id: 'x' }, 'v') })
    t.equal(res.statusCode, 200)
    t.same(res.json(), {
      jsonrpc: '2.0',
      id: 'v',
      error: { code: -32009, message: 'Version not supported', data: `A2A-Version ${shown} is not supported; supported: 0.3, 1.0` }
    }, `${JSON.stringify(headers)} ${url}`)
  }
  const twice = await app.inject({ method: 'POST', url: '/?A2A-Version=1.0&A2A-Version=0.3', payload: rpc('status', undefined, 'q') })
  t.same(twice.json().error, { code: -32009, message: 'Version not supported', data: 'A2A-Version that was sent is not supported; supported: 0.3, 1.0' },
    'a query parameter given twice names no one version')
  const header = await app.inject({ method: 'POST', url: '/?A2A-Version=2.0', headers: { 'a2a-version': '1.0' }, payload: rpc('status') })
  t.match(header.json(), { result: { status: 'ok' } }, 'the header wins over the query')
})

t.test('CONTRACT.md §11.1: a streaming method with an unsupported version gets one SSE error event', async t => {
  const { url } = await listen(t)
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '9.9' }, body: JSON.stringify(rpc('message/stream', { message: userMessage('s') }, 7)) })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  t.same(parseSse(await res.text()).events, [{ jsonrpc: '2.0', id: 7, error: { code: -32009, message: 'Version not supported', data: 'A2A-Version "9.9" is not supported; supported: 0.3, 1.0' } }])
})
