import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2'
import { status as Status } from '@grpc/grpc-js'
import t from 'tap'
import type { AgentExecutor } from '../../index.js'
import { listenGrpc, until } from '../helper.js'
import { V1_SERVICE } from '../../services/grpc/protos.js'
import { streamOf } from '../../services/grpc/flow.js'
import { grpcClients, grpcFrame, unary } from './grpc-client.js'

// gRPC answers a client does not read (issue 39 row 1): every unary answer and streamed event takes its bytes from
// the answer budget (server.max_answer_bytes, and per connection, the HTTP/2 session) until the client has taken
// them; a stream's slot is given back when its client took the last bytes; a connection whose untaken bytes do not
// move for server.write_timeout is destroyed. The clients here are raw HTTP/2 sessions whose streams are never read
// (their flow-control windows are never opened again), one connection each.

const small: AgentExecutor = async function * () { yield 'ok' }
const user = (text: string) => ({ messageId: `a-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] })
/** A raw HTTP/2 connection to the gRPC port, closed at teardown. */
function rawSession (t: { teardown: (fn: () => void) => void }, target: string): ClientHttp2Session {
  const session = connect(`http://${target}`)
  session.on('error', () => {})
  t.teardown(() => session.destroy())
  return session
}

/** A call on the session whose answer is never read; `status` settles with the grpc-status of a trailers-only answer. */
function neverRead (session: ClientHttp2Session, rpc: string, request: unknown): { stream: ClientHttp2Stream, status: Promise<number | undefined> } {
  const stream = session.request({ ':method': 'POST', ':path': `/${V1_SERVICE}/${rpc}`, 'content-type': 'application/grpc', te: 'trailers' })
  stream.on('error', () => {})
  stream.end(grpcFrame(rpc, request))
  stream.pause()
  const status = new Promise<number | undefined>(resolve => {
    stream.once('response', headers => resolve(headers['grpc-status'] === undefined ? undefined : Number(headers['grpc-status'])))
    stream.once('close', () => resolve(undefined))
  })
  return { stream, status }
}

async function largeTask (v1: any, bytes: number): Promise<string> {
  const { value, error } = await unary(v1, 'SendMessage', { message: user('x'.repeat(bytes)) })
  if (error !== undefined) throw error
  return value.task.id
}

t.test('one connection sending 120 GetTask calls for a 4 MB task without reading holds at most the budget: four answers are prepared, the others wait before they run, another client is answered, and closing the connection gives everything back', async t => {
  const { app, target } = await listenGrpc(t, { executor: small })
  const { v1 } = grpcClients(t, target)
  const id = await largeTask(v1, 4_000_000)
  const tasks = app.a2aTasks
  const get = tasks.get.bind(tasks)
  let reads = 0
  tasks.get = async (...args) => { reads++; return await get(...args) }
  t.teardown(() => { tasks.get = get })
  const session = rawSession(t, target)
  const calls = Array.from({ length: 120 }, () => neverRead(session, 'GetTask', { id }))
  const budget = app.a2aAnswers
  // (protocol.grpc.max_concurrent_streams, 100, lets 100 of them run at once; the client queues the others.) One
  // answer is in flight, four are prepared and wait for room; the other 95 wait before they run, holding no task.
  await until(() => budget.waiting === 4, 3000)
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(budget.waiting, 4, 'no more answers are prepared while the client takes nothing')
  t.equal(reads, 5, 'the task was read for the answer in flight and the four prepared, not for every call')
  // A call waiting its turn whose client gives up: it never runs, and its request's bytes go back. (The 20 calls the
  // client holds back go first: else the next of them takes the slot given back, and the same bytes with it.)
  for (const call of calls.slice(100)) call.stream.close(constants.NGHTTP2_CANCEL)
  const requests = app.a2aRequests.bytes
  calls[99].stream.close(constants.NGHTTP2_CANCEL)
  await until(() => app.a2aRequests.bytes < requests, 3000)
  t.equal(reads, 5, 'the call given up never ran')
  const perConnection = app.a2aConfig.server.max_answer_bytes_per_connection
  t.comment(`held: ${budget.bytes} bytes of answers, ${budget.waiting} answers waiting`)
  t.ok(budget.bytes <= perConnection + 4_100_000, `the connection holds at most its share and one answer (${budget.bytes} bytes)`)
  const other = await unary(v1, 'GetTask', { id })
  t.equal(other.value?.id, id, 'another client is answered meanwhile')
  session.destroy()
  await until(() => budget.bytes === 0 && budget.waiting === 0, 3000)
  t.pass('the connection gone, its bytes and waits are given back')
})

t.test('300 never-read streaming calls with server.max_streams 100: past 100 they are RESOURCE_EXHAUSTED, the 100 keep their slots until their client takes the bytes, and others are answered', async t => {
  const { app, target } = await listenGrpc(t, {
    executor: small,
    config: { server: { max_streams: 100 }, protocol: { grpc: { max_concurrent_streams: 400 } } }
  })
  const { v1 } = grpcClients(t, target)
  const session = rawSession(t, target)
  // Each stream's first event (its task, with the 100 kB message) is more than the client's window lets through.
  const message = user('x'.repeat(100_000))
  const first = []
  for (let i = 0; i < 100; i++) first.push(neverRead(session, 'SendStreamingMessage', { message: { ...message, messageId: `s-${i}` } }))
  await until(async () => app.a2aTasks.running === 0 && (await app.a2aTasks.store.list({ pageSize: 100 })).tasks.length === 100, 3000)
  t.equal(app.a2aGrpc?.binding?.size, 100, 'the 100 streams, their tasks done, keep their slots: their client has not taken their bytes')
  const more = []
  for (let i = 0; i < 200; i++) more.push(neverRead(session, 'SendStreamingMessage', { message: { ...message, messageId: `m-${i}` } }))
  const statuses = await Promise.all(more.map(c => c.status))
  t.equal(statuses.filter(s => s === Status.RESOURCE_EXHAUSTED).length, 200, 'every call past the 100 slots is refused')
  const [{ task: { id } }] = (await app.a2aTasks.store.list({ pageSize: 1 })).tasks
  t.equal((await unary(v1, 'GetTask', { id })).value?.id, id, 'another client is answered')
  session.destroy()
  await until(() => app.a2aGrpc?.binding?.size === 0 && app.a2aAnswers.bytes === 0, 3000)
  t.pass('the connection gone, the slots and bytes are given back')
})

t.test('a connection whose client takes nothing of its answer for server.write_timeout is destroyed', async t => {
  const { app, target } = await listenGrpc(t, { executor: small, config: { server: { write_timeout: 1 } } })
  const { v1 } = grpcClients(t, target)
  const id = await largeTask(v1, 2_000_000)
  const session = rawSession(t, target)
  const closed = new Promise(resolve => session.once('close', resolve))
  neverRead(session, 'GetTask', { id })
  await closed
  t.pass('the server closed the connection')
  await until(() => app.a2aAnswers.bytes === 0)
  t.pass('its bytes are given back')
})

t.test('a stream whose client never reads while its task piles up more than any reader may fall behind (16 MiB) is reset at once: its buffer is freed, its slot given back, the task completes', async t => {
  const chunk = 'z'.repeat(64 * 1024)
  const big: AgentExecutor = async function * () {
    for (let i = 0; i < 300; i++) yield { kind: 'artifact', parts: [{ kind: 'text', text: chunk }] }
  }
  const { app, target } = await listenGrpc(t, { executor: big })
  const session = rawSession(t, target)
  const { stream } = neverRead(session, 'SendStreamingMessage', { message: user('big') })
  const reset = new Promise<number>(resolve => stream.once('close', () => resolve(stream.rstCode as number)))
  t.equal(await reset, 11, 'reset with ENHANCE_YOUR_CALM')
  await until(() => app.a2aGrpc?.binding?.size === 0 && app.a2aAnswers.bytes === 0)
  t.pass('its slot and bytes are given back')
  await until(async () => (await app.a2aTasks.store.list({ pageSize: 1 })).tasks[0]?.task.status.state === 'completed')
  t.pass('the task completes')
})

t.test('an answer waiting for room whose client cancels it holds nothing', async t => {
  const { app, target } = await listenGrpc(t, { executor: small })
  const { v1 } = grpcClients(t, target)
  const id = await largeTask(v1, 4_000_000)
  const session = rawSession(t, target)
  neverRead(session, 'GetTask', { id })
  const second = neverRead(session, 'GetTask', { id })
  await until(() => app.a2aAnswers.waiting === 1)
  second.stream.close(constants.NGHTTP2_CANCEL)
  await until(() => app.a2aAnswers.waiting === 0)
  t.ok(app.a2aAnswers.bytes > 0, 'the first answer still holds its bytes; the canceled one none')
})

t.test('streamOf finds the HTTP/2 stream in grpc-js\'s call objects, and says so when it is not there', async t => {
  const stream = { session: {} }
  t.equal(streamOf({ call: { stream } }), stream)
  t.equal(streamOf({ call: { nextCall: { stream } } }), stream, 'behind an interceptor')
  t.throws(() => streamOf({ call: { nextCall: null } }), /HTTP\/2 stream of a grpc-js call was not found/)
  t.throws(() => streamOf({}), /not found/)
})
