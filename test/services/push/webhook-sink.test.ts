import { once } from 'node:events'
import { connect } from 'node:net'
import { PassThrough } from 'node:stream'
import { setImmediate as tick } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { signatureHeaders, signingKey } from '../../../services/push/signing.js'
import { runWebhookSink, startWebhookSink, type WebhookSink, type WebhookSinkOptions } from '../../../services/push/webhook-sink.js'

const SECRET = 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0'
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /

// An output stream whose lines can be read back.
function capture (): { out: PassThrough, lines: () => string[] } {
  const out = new PassThrough()
  let text = ''
  out.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
  return { out, lines: () => text.split('\n').filter(line => line !== '') }
}

async function start (t: Test, opts: Partial<WebhookSinkOptions> = {}): Promise<{ sink: WebhookSink, lines: () => string[] }> {
  const { out, lines } = capture()
  const sink = await startWebhookSink({ host: '127.0.0.1', port: 0, out, ...opts })
  t.teardown(() => sink.close())
  return { sink, lines }
}

function task (id: string, state: string): string {
  return JSON.stringify({ id, contextId: 'c1', kind: 'task', status: { state, timestamp: new Date().toISOString() } })
}

t.test('prints one line per delivery: time, path, task id, state and which credential headers were sent', async t => {
  const { sink, lines } = await start(t)
  t.match(sink.url, /^http:\/\/127\.0\.0\.1:\d+\/$/)
  const res = await fetch(sink.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: task('t1', 'in_progress') })
  t.equal(res.status, 204)
  const hooked = await fetch(`${sink.url}hook?a=1`, {
    method: 'POST',
    headers: { 'x-a2a-notification-token': 'tok-SECRET', authorization: 'Bearer cred-SECRET', 'x-api-key': 'key-SECRET' },
    body: task('t2', 'completed')
  })
  t.equal(hooked.status, 204)
  const [first, second] = lines()
  t.match(first, TIME)
  t.match(first, / POST \/ task=t1 state=in_progress x-a2a-notification-token=unset authorization=unset x-api-key=unset$/)
  t.match(second, / POST \/hook\?a=1 task=t2 state=completed x-a2a-notification-token=set authorization=set x-api-key=set$/)
  t.notMatch(lines().join('\n'), 'SECRET', 'no credential value is printed')
})

t.test('with a secret, says whether each signature is valid, invalid or missing', async t => {
  const { sink, lines } = await start(t, { secret: SECRET })
  const body = task('t1', 'completed')
  const signed = signatureHeaders(signingKey(SECRET), 'msg_1', Math.floor(Date.now() / 1000), body)
  const wrong = signatureHeaders(signingKey('whsec_b3RoZXI='), 'msg_2', Math.floor(Date.now() / 1000), body)
  for (const headers of [signed, wrong, {}]) {
    const res = await fetch(sink.url, { method: 'POST', headers, body })
    t.equal(res.status, 204)
  }
  t.match(lines()[0], / task=t1 state=completed .* webhook-id=msg_1 signature=valid$/)
  t.match(lines()[1], / webhook-id=msg_2 signature=invalid$/)
  t.match(lines()[2], / x-api-key=unset signature=missing$/)
})

t.test('without a secret, no signature verdict is printed', async t => {
  const { sink, lines } = await start(t)
  const body = task('t1', 'completed')
  await fetch(sink.url, { method: 'POST', headers: signatureHeaders(signingKey('x'), 'msg_1', 1, body), body })
  t.match(lines()[0], / webhook-id=msg_1$/)
})

t.test('a body that is not JSON, or not a task, is still answered and shown', async t => {
  const { sink, lines } = await start(t, { secret: 'plain' })
  for (const body of ['{nope', '[1,2]', 'null', JSON.stringify({ id: 'a\nb\u001b[31m', status: { state: 'x'.repeat(200) } })]) {
    t.equal((await fetch(sink.url, { method: 'POST', body })).status, 204)
  }
  const [invalid, array, nul, odd] = lines()
  t.match(invalid, / POST \/ invalid JSON x-a2a-notification-token=unset /)
  t.match(array, / task=- state=- /)
  t.match(nul, / task=- state=- /)
  t.match(odd, / task=a\?b\?\[31m state=x{120}… /)
  t.equal(lines().length, 4, 'one line each: control characters never split one')
})

t.test('a body over the limit gets 413 and is not shown', async t => {
  const { sink, lines } = await start(t, { maxBodyBytes: 10, secret: SECRET })
  const res = await fetch(sink.url, { method: 'POST', body: task('t1', 'completed'), headers: { 'webhook-signature': 'v1,x' } })
  t.equal(res.status, 413)
  t.match(lines()[0], / POST \/ body over 10 bytes, not read .* signature=invalid$/)
})

t.test('other methods get 405 and print nothing', async t => {
  const { sink, lines } = await start(t)
  const res = await fetch(sink.url)
  t.equal(res.status, 405)
  t.equal(res.headers.get('allow'), 'POST')
  t.same(lines(), [])
})

t.test('a client that goes away mid-body prints nothing and does not stop the sink', async t => {
  const { sink, lines } = await start(t)
  const { port } = new URL(sink.url)
  const socket = connect(Number(port), '127.0.0.1')
  await once(socket, 'connect')
  socket.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{"id"')
  await tick()
  socket.destroy()
  await once(socket, 'close')
  const res = await fetch(sink.url, { method: 'POST', body: task('t3', 'failed') })
  t.equal(res.status, 204)
  t.equal(lines().length, 1)
  t.match(lines()[0], /task=t3 state=failed/)
})

t.test('close ends open keep-alive connections', async t => {
  const { out } = capture()
  const sink = await startWebhookSink({ host: '127.0.0.1', port: 0, out })
  await fetch(sink.url, { method: 'POST', body: '{}' })
  await sink.close()
  await t.rejects(fetch(sink.url, { method: 'POST', body: '{}' }))
})

t.test('an IPv6 address is bracketed in the URL', async t => {
  const { sink, lines } = await start(t, { host: '::1' })
  t.match(sink.url, /^http:\/\/\[::1\]:\d+\/$/)
  t.equal((await fetch(sink.url, { method: 'POST', body: task('t6', 'completed') })).status, 204)
  t.match(lines()[0], /task=t6/)
})

t.test('start fails when the port is taken, and for a bad secret', async t => {
  const { sink } = await start(t)
  const { out } = capture()
  await t.rejects(startWebhookSink({ host: '127.0.0.1', port: Number(new URL(sink.url).port), out }), { code: 'EADDRINUSE' })
  await t.rejects(startWebhookSink({ host: '127.0.0.1', port: 0, out, secret: 'whsec_!!' }), { code: 'A2A_ERR_INVALID_OPTIONS' })
})

t.test('runWebhookSink prints the URL, serves until a signal, then closes', async t => {
  const { out, lines } = capture()
  const listeners = process.listenerCount('SIGUSR2')
  const running = runWebhookSink({ port: 0, out }, ['SIGUSR2'])
  while (lines().length === 0) await tick()
  const url = /^webhook sink listening on (http:\/\/127\.0\.0\.1:\d+\/) \(Ctrl-C to stop\)$/.exec(lines()[0])?.[1]
  t.ok(url)
  t.equal((await fetch(url as string, { method: 'POST', body: task('t9', 'completed') })).status, 204)
  t.match(lines()[1], /task=t9 state=completed/)
  process.emit('SIGUSR2', 'SIGUSR2')
  await running
  t.equal(process.listenerCount('SIGUSR2'), listeners, 'its signal listeners are removed')
  await t.rejects(fetch(url as string, { method: 'POST', body: '{}' }))
})

t.test('runWebhookSink listens on 127.0.0.1:9000 by default', async t => {
  const { out, lines } = capture()
  const running = runWebhookSink({ out }, ['SIGUSR2'])
  // Another program may hold port 9000: then the default shows in the refusal.
  const outcome = await Promise.race([
    running.then(() => 'stopped', (err: NodeJS.ErrnoException) => `${err.code} ${(err as { port?: number }).port}`),
    (async () => {
      while (lines().length === 0) await tick()
      return lines()[0]
    })()
  ])
  if (outcome.startsWith('webhook sink listening on ')) {
    t.match(outcome, 'http://127.0.0.1:9000/')
    process.emit('SIGUSR2', 'SIGUSR2')
    await running
  } else {
    t.equal(outcome, 'EADDRINUSE 9000')
  }
})
