import t, { type Test } from 'tap'
import { TEST_REDIS, parseSse, receiver, redisDb, rpc, serve, until, userMessage, type Served } from './helper.js'

// The kvcache case owns Redis db 1.
const DB = 1

async function post (server: Served, body: unknown): Promise<any> {
  const res = await fetch(server.url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return await res.json()
}

async function stream (server: Served, body: unknown): Promise<any[]> {
  const res = await fetch(server.url + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body)
  })
  return parseSse(await res.text()).events
}

/**
 * A real `fastify-a2a serve` with the config. No coverage is recorded in it: how far each task has got when the
 * signal lands varies between runs (the in-process tests cover this code).
 */
async function server (t: Test, yml: string): Promise<Served> {
  const dir = t.testdir({ 'agent.yml': yml })
  return await serve(t, ['--config', `${dir}/agent.yml`], { _TAPJS_PROCESSINFO_COVERAGE_: '0' })
}

async function inProgress (s: Served): Promise<number> {
  const listed = await post(s, rpc('tasks/list', { state: 'in_progress', pageSize: 100 }))
  return listed.result.tasks.length
}

t.test('SIGTERM with 20 blocking sends and 2 streams in flight: every answer complete, webhooks flushed, exit 0', async t => {
  const hook = await receiver(t)
  const s = await server(t, `
agent:
  name: Draining
  delay_ms: 1500
server:
  shutdown_timeout: 8
push_notifications:
  config:
    allowed_networks: [127.0.0.0/8]
`)
  const push = { pushNotificationConfig: { url: `${hook.url}/hook` } }
  const sends = Array.from({ length: 20 }, (_, i) => post(s, rpc('message/send', { message: userMessage(`send ${i}`), configuration: push })))
  const streams = [0, 1].map(i => stream(s, rpc('message/stream', { message: userMessage(`stream ${i}`) })))
  await until(async () => await inProgress(s) === 22)

  s.child.kill('SIGTERM')
  const answers = await Promise.all(sends)
  for (const answer of answers) {
    t.equal(answer.result.status.state, 'completed', 'the send got its finished task')
    t.equal(answer.result.artifacts[0].parts[0].text, answer.result.history[0].parts[0].text)
  }
  for (const events of await Promise.all(streams)) {
    t.equal(events.at(-1).result.status.state, 'completed', 'the stream ended with the finished task')
  }
  t.equal(await s.exited, 0, 'the process exits 0 once drained')
  const completed = hook.received.filter(r => r.body.status.state === 'completed').map(r => r.body.id)
  t.same(completed.sort(), answers.map(a => a.result.id).sort(), 'every completed state was delivered before the exit')
  t.ok(s.logs.some(l => l.includes('shutting down')))
})

t.test('with the durable queue, a delivery still waiting for its retry at SIGTERM stays in Redis and the next instance makes it', async t => {
  const redis = await redisDb(t, DB)
  const hook = await receiver(t)
  hook.script(503, 503, 200)
  const yml = `
agent:
  name: Durable
server:
  shutdown_timeout: 1
tasks:
  backend: kvcache
push_notifications:
  backend: kvcache
  config:
    allowed_networks: [127.0.0.0/8]
    retry_delay: 2
    max_retries: 3
services:
  cache:
    type: cache
    url: ${TEST_REDIS.url}
    db: ${DB}
`
  const first = await server(t, yml)
  const sent = await post(first, rpc('message/send', {
    message: userMessage('deliver me later'),
    configuration: { pushNotificationConfig: { url: `${hook.url}/hook` } }
  }))
  t.equal(sent.result.status.state, 'completed')
  await until(() => hook.received.length >= 2)
  first.child.kill('SIGTERM')
  t.equal(await first.exited, 0)
  const waiting = Number(await redis.zcard('a2a:push:bull:webhooks:delayed'))
  t.ok(waiting >= 1, `deliveries wait in Redis after the exit (${waiting})`)

  const second = await server(t, yml)
  await until(() => hook.received.filter(r => r.body.status.state === 'completed').length === 1, 2000)
  const states = hook.received.map(r => r.body.status.state)
  t.same(states.filter(x => x === 'completed'), ['completed'], 'the completed state arrives, once')
  second.child.kill('SIGTERM')
  t.equal(await second.exited, 0)
})
