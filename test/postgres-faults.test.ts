// PostgreSQL failing under two instances that share it (a private cluster per test, test/backends.ts
// `privatePostgres`): stopped mid-load and started again, nothing is lost or left stuck.
import t from 'tap'
import { build, call, privatePostgres, receiver, until, userMessage } from './helper.js'

t.test('PostgreSQL down mid-load: calls get 503 with Retry-After meanwhile; after, every task ends and every state is delivered', async t => {
  const cluster = await privatePostgres(t)
  const hook = await receiver(t)
  const config = {
    // Each task is held in_progress for 1.5 s: the outage comes while they run, and their last writes come inside it.
    agent: { name: 'Slow', delay_ms: 1500 },
    services: { postgres: { url: cluster.url } },
    tasks: { backend: 'postgres' as const, lease_ttl: 5 },
    push_notifications: { backend: 'postgres' as const, config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.1 } },
    server: { shutdown_timeout: 0.5 }
  }
  const a = await build(t, { config })
  const b = await build(t, { config })
  const ids: string[] = []
  for (let i = 0; i < 10; i++) {
    const sent = await call(i % 2 === 0 ? a : b, 'message/send', {
      message: userMessage(`task ${i}`),
      configuration: { blocking: false, pushNotificationConfig: { url: `${hook.url}/hook` } }
    })
    ids.push(sent.body.result.id)
  }
  await new Promise(resolve => setTimeout(resolve, 1000))
  await cluster.down()
  const refused = await a.inject({ method: 'POST', url: '/', payload: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: ids[0] } } })
  t.equal(refused.statusCode, 503, 'refused while the database is down')
  t.equal(refused.headers['retry-after'], '1')
  t.equal(refused.json().error.code, -32603)
  t.equal((await b.inject('/ready')).statusCode, 503, 'not ready meanwhile')
  // Down past the moment the agents finish: their writes are refused, and retried.
  await new Promise(resolve => setTimeout(resolve, 1000))
  await cluster.up()
  const states = async () => await Promise.all(ids.map(async id => (await call(b, 'tasks/get', { id })).body.result?.status.state))
  await until(async () => (await states()).every(state => state === 'completed'), 1500)
  t.same(await states(), ids.map(() => 'completed'), 'every task completed, none failed or stuck')
  const delivered = (id: string, state: string) => hook.received.some(r => r.body?.id === id && r.body?.status?.state === state)
  await until(() => ids.every(id => delivered(id, 'in_progress') && delivered(id, 'completed')), 1500)
  for (const id of ids) t.ok(delivered(id, 'in_progress') && delivered(id, 'completed'), `${id}: each state delivered`)
  t.equal((await a.inject('/ready')).statusCode, 200, 'ready again')
  // Streams are served again once each instance listens for the others' writes again (within a second of the
  // database's return); the task is terminal, so the stream is its snapshot and its end.
  await until(async () => (await b.inject({ method: 'POST', url: '/', headers: { accept: 'text/event-stream' }, payload: { jsonrpc: '2.0', id: 2, method: 'tasks/resubscribe', params: { id: ids[1] } } })).statusCode === 200, 300)
  t.pass('a stream is served again')
})
