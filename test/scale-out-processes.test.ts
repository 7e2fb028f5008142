import t, { type Test } from 'tap'
import { TEST_REDIS, parseSse, postgresSchema, receiver, redisDb, rpc, serve, testDatabase, until, userMessage, type Served } from './helper.js'

// Two and three real `fastify-a2a serve` processes sharing Redis db 10, or a PostgreSQL schema (CONTRACT.md §10).
const DB = 10

/** Where the processes keep their tasks: its config sections, and how many task leases it holds now. */
interface Shared {
  yaml: string
  leases: () => Promise<number>
}

async function onRedis (t: Test): Promise<Shared> {
  const redis = await redisDb(t, DB)
  return {
    yaml: `
tasks:
  backend: kvcache
  lease_ttl: 1
push_notifications:
  backend: kvcache
  config:
    allowed_networks: [127.0.0.0/8]
    retry_delay: 1.5
    max_retries: 3
services:
  cache:
    type: cache
    url: ${TEST_REDIS.url}
    db: ${DB}
`,
    leases: async () => Number(await redis.zcard('a2a:task:leases'))
  }
}

async function onPostgres (t: Test): Promise<Shared> {
  const url = await postgresSchema(t, await testDatabase(t))
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  t.teardown(() => pool.end())
  return {
    yaml: `
tasks:
  backend: postgres
  lease_ttl: 1
push_notifications:
  backend: postgres
  config:
    allowed_networks: [127.0.0.0/8]
    retry_delay: 1.5
    max_retries: 3
services:
  postgres:
    url: "${url}"
`,
    leases: async () => Number((await pool.query('SELECT count(*) AS n FROM a2a_task_leases')).rows[0].n)
  }
}

function config (shared: Shared, delayMs: number): string {
  return `
agent:
  name: Scale Agent
  delay_ms: ${delayMs}
server:
  shutdown_timeout: 1
${shared.yaml}`
}

async function post (server: Served, method: string, params: unknown): Promise<any> {
  const res = await fetch(server.url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc(method, params)) })
  return ((await res.json()) as any)
}

/**
 * Opens an SSE stream and resolves `first` with its first event as soon as it arrives (so the caller knows the
 * stream is following the task), and `all` with every event once the stream ends.
 */
function openStream (url: string, body: unknown): { first: Promise<any>, all: Promise<any[]> } {
  let first!: (event: any) => void
  const firstEvent = new Promise<any>(resolve => { first = resolve })
  const all = (async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(body) })
    const decoder = new TextDecoder()
    let raw = ''
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      raw += decoder.decode(chunk, { stream: true })
      const done = raw.lastIndexOf('\n\n')
      if (done > 0) first(parseSse(raw.slice(0, done + 2)).events[0])
    }
    return parseSse(raw).events
  })()
  return { first: firstEvent, all }
}

/**
 * A server whose built-in agent holds every task in in_progress for `delayMs`. These processes record no coverage:
 * which of them makes a delivery or reaps a task varies from run to run, and their compiled code would add those
 * branches to the sources' coverage only in the runs where they happen (the in-process tests cover this code).
 */
async function instance (t: Test, shared: Shared, delayMs: number): Promise<Served> {
  const dir = t.testdir({ 'agent.yml': config(shared, delayMs) })
  return await serve(t, ['--config', `${dir}/agent.yml`], { _TAPJS_PROCESSINFO_COVERAGE_: '0' })
}

for (const [where, backend] of [['Redis', onRedis], ['PostgreSQL', onPostgres]] as const) {
  t.test(`separate processes on ${where} share tasks, streams, cancellation, leases and durable webhook delivery`, async t => {
    const shared = await backend(t)
    // A's agent takes 60 s per task, so only a cancel that reaches it ends a task there early. B answers at once.
    const a = await instance(t, shared, 60_000)
    const b = await instance(t, shared, 0)

    await t.test('send on B, get on A; send on A, get on B', async t => {
      const sent = await post(b, 'message/send', { message: userMessage('hello from B') })
      t.equal(sent.result.status.state, 'completed')
      t.same((await post(a, 'tasks/get', { id: sent.result.id })).result, sent.result)
      const started = await post(a, 'message/send', { message: userMessage('long one'), configuration: { blocking: false } })
      const onB = await post(b, 'tasks/get', { id: started.result.id })
      t.equal(onB.result.id, started.result.id)
      await post(b, 'tasks/cancel', { id: started.result.id })
    })

    await t.test('a stream on A and a resubscribe on B both end with the cancel made on B; A\'s executor is aborted', async t => {
      const first = await post(a, 'message/send', { message: userMessage('first'), configuration: { blocking: false } })
      const id = first.result.id
      await until(async () => (await post(b, 'tasks/get', { id })).result.status.state === 'in_progress')
      const onB = openStream(b.url + '/', rpc('tasks/resubscribe', { id }))
      t.equal((await onB.first).result.status.state, 'in_progress', 'B follows the task running on A: its snapshot first')
      const canceled = await post(b, 'tasks/cancel', { id })
      t.equal(canceled.result.status.state, 'canceled')
      const events = await onB.all
      t.equal(events.at(-1).result.status.state, 'canceled', 'then the cancel, across processes')
      // The run on A holds its lease for 60 s unless the abort reaches it: the lease goes when its executor stops.
      await until(async () => await shared.leases() === 0)
      t.equal((await post(a, 'tasks/get', { id })).result.status.state, 'canceled')

      const streamed = openStream(a.url + '/', rpc('message/stream', { message: userMessage('streamed on A') }))
      const id2 = (await streamed.first).result.id
      const resub = openStream(b.url + '/', rpc('tasks/resubscribe', { id: id2 }))
      await resub.first
      await post(b, 'tasks/cancel', { id: id2 })
      const [onA, onB2] = await Promise.all([streamed.all, resub.all])
      t.equal(onA.at(-1).result.status.state, 'canceled', 'the message/stream on A ends canceled')
      t.same(onB2.at(-1).result, onA.at(-1).result, 'B ends with the same task')
    })

    await t.test('a task whose instance is killed is failed by another once its lease expires', async t => {
      const sent = await post(a, 'message/send', { message: userMessage('doomed'), configuration: { blocking: false } })
      const id = sent.result.id
      await until(async () => await shared.leases() === 1)
      a.child.kill('SIGKILL')
      await a.exited
      await until(async () => (await post(b, 'tasks/get', { id })).result.status.state === 'failed', 1000)
      const task = (await post(b, 'tasks/get', { id })).result
      t.match(task.status.message.parts[0].text, /instance running the task stopped/)
      t.equal(await post(b, 'tasks/cancel', { id }).then(r => r.error.code), -32002, 'it is terminal now')
    })

    await t.test('a delivery queued by an instance killed with SIGKILL is made by another', async t => {
      const hook = await receiver(t)
      // The first attempt fails; the retry is due 1.5 s later, by which time its instance is dead.
      hook.script(500, 200)
      const c = await instance(t, shared, 0)
      const sent = await post(c, 'message/send', {
        message: userMessage('push me'),
        configuration: { pushNotificationConfig: { url: `${hook.url}/hook`, token: 'tok' } }
      })
      t.equal(sent.result.status.state, 'completed')
      await until(() => hook.received.length >= 1)
      c.child.kill('SIGKILL')
      await c.exited
      await until(() => hook.received.length >= 3, 3000)
      const states = hook.received.map(r => r.body.status.state)
      t.same(states, ['in_progress', 'in_progress', 'completed'], 'the retry, then the next state, in order')
      t.equal(hook.received[0].headers['webhook-id'], undefined, 'unsigned without a secret')
      t.equal(hook.received[1].headers['x-a2a-notification-token'], 'tok')
    })

    b.child.kill('SIGTERM')
    t.equal(await b.exited, 0, 'the survivor still shuts down cleanly')
  })
}
