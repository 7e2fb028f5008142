import { createServer, type Socket } from 'node:net'
import t from 'tap'
import type { AgentExecutor } from '../index.js'
import { buildLogged, call, listen, postStream, rpc, until, userMessage } from './helper.js'

const CHUNKS = 10_000
const token = (i: number) => `t${i} `
const expected = Array.from({ length: CHUNKS }, (_, i) => token(i)).join('')

/** An agent that streams its answer in 10,000 chunks as fast as it can. */
const chatty: AgentExecutor = async function * () {
  for (let i = 0; i < CHUNKS; i++) yield token(i)
}

t.test('an executor that yields 10,000 chunks: send, and streams in both dialects, get every chunk, in order', async t => {
  for (const dialect of ['default', 'a2a'] as const) {
    const { app, url } = await listen(t, { executor: chatty, config: { protocol: { dialect } } })
    const sent = await call(app, 'message/send', { message: userMessage('talk') })
    t.equal(sent.body.result.status.state, 'completed')
    t.equal(sent.body.result.artifacts[0].parts.map((p: any) => p.text).join(''), expected, `${dialect}: send has the whole text`)

    const streamed = await postStream(url, rpc('message/stream', { message: userMessage('talk') }))
    const events = streamed.events.map(e => e.result)
    if (dialect === 'default') {
      t.equal(events[0].status.state, 'in_progress')
      const last = events[events.length - 1]
      t.equal(last.status.state, 'completed')
      t.equal(last.artifacts[0].parts.map((p: any) => p.text).join(''), expected, 'the last snapshot holds every chunk')
    } else {
      const text = events.filter(e => e.kind === 'artifact-update').flatMap(e => e.artifact.parts).map((p: any) => p.text).join('')
      t.equal(text, expected, 'the artifact-updates add up to every chunk, in order')
      t.match(events[events.length - 1], { kind: 'status-update', final: true, status: { state: 'completed' } })
    }
    t.ok(streamed.events.length <= CHUNKS + 3, `${dialect}: ${streamed.events.length} events (chunks a reader was behind on were merged)`)
    await until(() => app.a2aStreams.size === 0 && app.a2aTasks.bus.listenerCount() === 0)
  }
})

/** A TCP server standing in for a webhook receiver that misbehaves below HTTP. */
async function rawReceiver (t: { teardown (fn: () => unknown): void }, onSocket: (socket: Socket) => void): Promise<{ url: string, connections: () => number }> {
  let connections = 0
  const sockets = new Set<Socket>()
  const server = createServer(socket => {
    connections++
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
    onSocket(socket)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, connections: () => connections }
}

t.test('receivers that answer garbage or never answer are retried; one that acknowledges and stalls counts as delivered', async t => {
  const garbage = await rawReceiver(t, socket => socket.once('data', () => socket.end('this is not HTTP\r\n\r\n')))
  const silent = await rawReceiver(t, socket => socket.once('data', () => {}))
  // A 2xx status acknowledges (CONTRACT.md §8.3); the rest of the answer is not waited for past the timeout.
  const stalls = await rawReceiver(t, socket => socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"par')))
  const { app, logs } = await buildLogged(t, {
    config: { push_notifications: { config: { allowed_networks: ['127.0.0.0/8'], timeout: 1, max_retries: 1, retry_delay: 0.01 } } }
  })
  for (const url of [garbage.url, silent.url, stalls.url]) {
    const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { pushNotificationConfig: { url } } })
    t.equal(sent.body.result.status.state, 'completed', 'the caller gets its task as usual')
  }
  await until(async () => (await app.a2aNotifier.backlog()) === 0)
  t.equal(garbage.connections(), 4, 'in_progress and completed, each tried twice')
  t.equal(silent.connections(), 4)
  t.equal(stalls.connections(), 2, 'each state once')
  const failed = logs.lines().filter(l => l.msg === 'webhook delivery failed')
  t.equal(failed.length, 4, 'each state to the two bad receivers ends as one logged failure after its retry')
  t.ok(failed.every(l => typeof l.code === 'string' && l.attempt === 2), 'with the error code and the attempt')
  t.notOk(failed.some(l => l.host === new URL(stalls.url).host), 'nothing failed at the one that acknowledged')
  t.equal((await call(app, 'status')).body.result.status, 'ok', 'the server still serves')
})
