import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { build, listen, rpc, until, userMessage } from '../helper.js'

// Issue 39, row 4: a large JSON-RPC answer is made a piece a turn (services/json-rpc/answer-json.ts), and reaches
// its client as the same JSON, whole, with its length.

t.test('a large answer reaches its client whole, with its Content-Length, the same JSON as a small one would be', async t => {
  const app = await build(t)
  // Over a piece, with escapes, two-byte characters and a surrogate pair: the echo answer holds it twice.
  const text = 'x"\\\n漢😀'.repeat(300_000)
  const res = await app.inject({ method: 'POST', url: '/', payload: rpc('message/send', { message: userMessage(text) }, 5) })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(Number(res.headers['content-length']), res.rawPayload.length)
  const body = res.json()
  t.equal(body.id, 5)
  t.equal(body.result.status.state, 'completed')
  t.equal(body.result.history[0].parts[0].text, text)
  t.equal(body.result.artifacts[0].parts[0].text, text)
  const again = await app.inject({ method: 'POST', url: '/', payload: rpc('tasks/get', { id: body.result.id }, 6) })
  t.same(again.json().result, body.result, 'tasks/get answers the same task')
})

t.test('a large answer that waits for room in the answer budget is made again and sent whole', async t => {
  const { app, url } = await listen(t, { config: { server: { max_answer_bytes: 65_536, max_answer_bytes_per_connection: 65_536 } } })
  // Large enough that the kernel's socket buffers do not take it all: the first answer stays in flight unread.
  const text = 'y'.repeat(7_000_000)
  const sent = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage(text) })) })
  const { result: task } = await sent.json() as { result: { id: string } }
  const { port } = new URL(url)
  const stalled = connect(Number(port), '127.0.0.1')
  t.teardown(() => stalled.destroy())
  await once(stalled, 'connect')
  stalled.pause()
  stalled.write(`GET /tasks/${task.id} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
  await until(() => app.a2aAnswers.bytes > 0)
  const answer = fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('tasks/get', { id: task.id })) })
  await until(() => app.a2aAnswers.waiting === 1)
  stalled.destroy()
  const res = await answer
  t.same((await res.json() as { result: unknown }).result, task)
  await until(() => app.a2aAnswers.bytes === 0)
})

t.test('a large REST answer reaches its client whole, with its Content-Length, as JSON-RPC\'s does', async t => {
  const app = await build(t)
  const text = 'r"\\漢😀'.repeat(300_000)
  const res = await app.inject({ method: 'POST', url: '/message:send', payload: { message: { messageId: 'r-1', role: 'ROLE_USER', parts: [{ text }] } } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/(a2a\+)?json/)
  t.equal(Number(res.headers['content-length']), res.rawPayload.length)
  const { task } = res.json()
  t.equal(task.history[0].parts[0].text, text)
  t.equal(task.artifacts[0].parts[0].text, text)
  const got = await app.inject({ method: 'GET', url: `/tasks/${task.id}` })
  t.same(got.json(), task, 'GET /tasks/{id} answers the same task')
})
