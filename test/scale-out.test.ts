import t from 'tap'
import type { A2AConfigInput, AgentExecutor } from '../index.js'
import { RedisTaskStore } from '../services/tasks/redis-store.js'
import { TEST_REDIS, build, call, listen, postStream, privateRedis, redisDb, rpc, until, userMessage } from './helper.js'
import { executor, scaleOutScenarios } from './scale-out-scenarios.js'

// This file owns Redis db 8.
const DB = 8

function shared (extra: A2AConfigInput = {}): A2AConfigInput {
  return {
    services: { cache: { type: 'cache', url: TEST_REDIS.url, db: DB } },
    tasks: { backend: 'kvcache' },
    push_notifications: { backend: 'kvcache', config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.05 } },
    server: { shutdown_timeout: 0.5 },
    ...extra
  }
}

scaleOutScenarios(t, { shared, fresh: async t => { await redisDb(t, DB) } })

t.test('what a send or a stream costs Redis: one round trip per write, and one write for an agent that answers at once', async t => {
  const client = await redisDb(t, DB)
  const atOnce: AgentExecutor = ctx => `echo: ${ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''}`
  const a = await listen(t, { executor: atOnce, config: shared() })
  // The file's executor: an async generator, whose events come after the task is stored.
  const b = await listen(t, { executor, config: shared() })
  await call(a.app, 'message/send', { message: userMessage('warm up') })
  await call(b.app, 'message/send', { message: userMessage('warm up') })
  // Every command the instances send over a connection (not those their scripts run), in this file's db.
  const monitor = await client.monitor()
  t.teardown(() => monitor.disconnect())
  const sent: string[][] = []
  monitor.on('monitor', (_time: string, args: string[], source: string, database: string) => {
    if (source !== 'lua' && database === String(DB)) sent.push(args)
  })
  const ids = new Map<string, number>()
  for (let i = 0; i < 3; i++) {
    for (const [app, writes] of [[a.app, 1], [b.app, 3]] as const) {
      const res = await call(app, 'message/send', { message: userMessage(`hello ${i}`) })
      t.equal(res.body.result.status.state, 'completed')
      ids.set(res.body.result.id, writes)
    }
  }
  // A stream of a new task follows it in the process that runs it: no SUBSCRIBE either.
  for (const [url, writes] of [[a.url, 1], [b.url, 3]] as const) {
    const stream = await postStream(url, rpc('message/stream', { message: userMessage('streamed') }))
    const last = stream.events[stream.events.length - 1].result
    t.equal(last.status.state, 'completed')
    ids.set(last.taskId ?? last.id, writes)
  }
  await client.ping()
  for (const [id, writes] of ids) {
    const mine = sent.filter(args => args.some(arg => String(arg).includes(id)))
    // Each send first claims its messageId (docs/protocol.md, "Idempotent sends"): one SET NX GET, naming the task.
    t.same(mine.map(args => String(args[0]).toLowerCase()).filter(name => name !== 'evalsha'), ['set'],
      `task ${id}: the claim's SET, then only scripts: no SUBSCRIBE, PUBLISH, HGET or ZREM`)
    t.match(mine[0], ['set', /sent:/, new RegExp(` ${id}$`), 'PX', /^\d+$/, 'NX', 'GET'], 'the claim comes first')
    t.equal(mine.length, writes + 1, writes === 1
      ? 'at once: the claim, then the task stored once, finished'
      : 'an async generator: the claim, then the task stored in progress, then its artifact and its completion')
  }
})

for (const outage of ['refused (maxmemory reached)', 'held (CLIENT PAUSE WRITE)'] as const) {
  t.test(`row 6: a 2.5 s Redis write outage, writes ${outage}, fails no task while both instances live: their leases are renewed once Redis answers`, async t => {
  // A private Redis: its writes are this test's to refuse.
    const redis = await privateRedis(t)
    let open = (): void => {}
    const gate = new Promise<void>(resolve => { open = resolve })
    // Every task stays in_progress, across the outage, until the test lets it finish.
    const held: AgentExecutor = async function * () {
      await gate
      yield 'done'
    }
    const config: A2AConfigInput = {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', lease_ttl: 3 },
      push_notifications: { enabled: false },
      server: { shutdown_timeout: 0.5 }
    }
    const a = await build(t, { executor: held, config })
    const b = await build(t, { executor: held, config })
    t.teardown(() => open())
    const ids: string[] = []
    for (let i = 0; i < 10; i++) {
      const sent = await call(i % 2 === 0 ? a : b, 'message/send', { message: userMessage(`task ${i}`), configuration: { blocking: false } })
      ids.push(sent.body.result.id)
    }
    const { Redis } = await import('ioredis')
    const admin = new Redis(redis.port, '127.0.0.1')
    t.teardown(() => admin.disconnect())
    await until(async () => (await admin.zcard('a2a:task:leases')) === 10)
    // The outage starts over half a second after a renewal of A's leases: they expire inside it, unrenewed.
    const first = Number(await admin.zscore('a2a:task:leases', ids[0]))
    await until(async () => Number(await admin.zscore('a2a:task:leases', ids[0])) > first)
    await new Promise(resolve => setTimeout(resolve, 700))
    if (outage.startsWith('refused')) {
      await admin.config('SET', 'maxmemory-policy', 'noeviction')
      await admin.config('SET', 'maxmemory', '1')
      await new Promise(resolve => setTimeout(resolve, 2500))
      await admin.config('SET', 'maxmemory', '0')
    } else {
    // Writes (and every script) wait in Redis meanwhile; the renewals time out on the client side and are retried.
      await admin.call('CLIENT', 'PAUSE', '2500', 'WRITE')
      await new Promise(resolve => setTimeout(resolve, 2500))
    }
    // Both reapers look at once, before a renewal on its period could come: an expired lease is only doubted.
    const reaped = [...await a.a2aTasks.reapOrphans(), ...await b.a2aTasks.reapOrphans()]
    t.same(reaped, [], 'no task is reaped the moment Redis answers again')
    // Every lease is renewed by its owner within the grace; the reapers find nothing to claim afterwards either.
    const now = async () => { const [s, us] = await admin.time(); return Number(s) * 1000 + Math.floor(Number(us) / 1000) }
    await until(async () => {
      const floor = await now()
      const scores = await admin.zrange('a2a:task:leases', 0, -1, 'WITHSCORES')
      return scores.length === 20 && scores.every((x, i) => i % 2 === 0 || Number(x) > floor + 1000)
    })
    reaped.push(...await a.a2aTasks.reapOrphans(), ...await b.a2aTasks.reapOrphans())
    t.same(reaped, [])
    open()
    const states = async () => await Promise.all(ids.map(async id => (await call(a, 'tasks/get', { id })).body.result.status.state))
    await until(async () => (await states()).every(state => state === 'completed'))
    t.same(await states(), ids.map(() => 'completed'), 'every task completes')
  })
}

t.test('row 16: with tasks.ttl: 1, 300 expired tasks leave no index entries behind though nobody lists; list still works', async t => {
  const client = await redisDb(t, DB)
  const atOnce: AgentExecutor = ctx => `echo: ${ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''}`
  const a = await build(t, { executor: atOnce, config: shared({ tasks: { backend: 'kvcache', ttl: 1 } }) })
  for (let i = 0; i < 300; i++) {
    const sent = await call(a, 'message/send', { message: userMessage(`task ${i}`) })
    t.equal(sent.body.result.status.state, 'completed')
  }
  t.equal(await client.exists('a2a:task:all'), 0, 'no index of every task: no method reads one')
  // The instance's prune timer drops the entries once Redis has expired the tasks; nobody lists meanwhile. (A
  // second of TTL and a pruning round a second: on a loaded machine the rounds come late, so the wait is long.)
  const indexes = ['a2a:task:owner:anonymous', 'a2a:task:expiring', 'a2a:task:st:9:anonymous:completed']
  const pruned = await until(async () => await client.exists(...indexes) === 0, 3000).then(() => true, () => false)
  if (!pruned) {
    // What was left, and whether the tasks it names are still stored (their hash's PTTL: -2 gone, -1 no expiry).
    const left = await Promise.all(indexes.map(async key => ({ key, first: await client.zrange(key, 0, 2, 'WITHSCORES'), count: await client.zcard(key) })))
    const ids = (await client.zrange(indexes[0], 0, 2)).map(member => member.slice('9:anonymous'.length))
    const ttls = await Promise.all(ids.map(async id => await client.pttl(`a2a:task:t:${id}`)))
    t.fail('the index entries of expired tasks were pruned', { left, ttls })
  }
  // The claims of the sends' messageIds stay for their window (tasks.dedupe_window), expiring on their own.
  const keys = await client.keys('a2a:task:*')
  const claims = keys.filter(key => key.startsWith('a2a:task:sent:'))
  t.equal(claims.length, 300, 'a claim per send')
  t.ok((await Promise.all(claims.map(async key => await client.pttl(key)))).every(ms => ms > 0 && ms <= 600_000), 'each expiring with the window')
  t.same(keys.filter(key => !claims.includes(key)), ['a2a:task:seq'], 'nothing is left of the tasks but the sequence counter')
  t.same((await call(a, 'tasks/list', {})).body.result.tasks, [], 'list still works')
  const sent = await call(a, 'message/send', { message: userMessage('one more') })
  t.same((await call(a, 'tasks/list', {})).body.result.tasks.map((x: any) => x.id), [sent.body.result.id])
})

/**
 * A task running on instance A, and instance B, which heartbeats often so that its idle streams look at their task
 * soon; the task is in_progress as B reads it.
 */
async function hangingOnA (t: Parameters<typeof redisDb>[0]) {
  const client = await redisDb(t, DB)
  const a = await listen(t, { executor, config: shared() })
  const b = await listen(t, { executor, config: shared({ server: { shutdown_timeout: 0.5, heartbeat_interval: 0.2 } }) })
  const hanging = await call(a.app, 'message/send', { message: userMessage('hang'), configuration: { blocking: false } })
  const id: string = hanging.body.result.id
  await until(async () => (await call(b.app, 'tasks/get', { id })).body.result.status.state === 'in_progress')
  return { client, b, id }
}

t.test('row 15: streams following a task whose keys vanish (Redis flushed) end with -32001 on JSON-RPC and REST, and give back their slots', async t => {
  const { client, b, id } = await hangingOnA(t)
  const rest = (path: string) => fetch(`${b.url}${path}`, { method: 'POST', headers: { accept: 'text/event-stream' } }).then(async res => await res.text())
  const streams = Promise.all([
    postStream(b.url, rpc('tasks/resubscribe', { id })),
    postStream(b.url, rpc('SubscribeToTask', { id }), { 'a2a-version': '1.0' }),
    rest(`/tasks/${id}:subscribe`),
    rest(`/v1/tasks/${id}:subscribe`)
  ])
  await until(() => b.app.a2aStreams.size === 4)
  // The task's keys vanish as they would with a Redis restarted empty; its run on A goes on, unheard.
  await client.flushdb()
  const [v03, v10, restV10, restV03] = await streams
  t.equal(v03.events[0].result.status.state, 'in_progress')
  t.same(v03.events[v03.events.length - 1].error, { code: -32001, message: 'Task not found', data: `task "${id}" was not found` },
    'JSON-RPC v0.3: the stream ends with the task-not-found error')
  t.equal(v10.events[0].result.task.status.state, 'TASK_STATE_WORKING')
  t.match(v10.events[v10.events.length - 1].error, { code: -32001, data: [{ reason: 'TASK_NOT_FOUND' }] }, 'JSON-RPC v1.0 alike, in its form')
  const lastFrame = (raw: string) => raw.trimEnd().split('\n\n').pop() as string
  t.match(lastFrame(restV10), /^event: error\ndata: /, 'REST: one error event ends the stream')
  t.match(JSON.parse(lastFrame(restV10).split('\ndata: ')[1]), { error: { code: 404, status: 'NOT_FOUND' } })
  t.match(JSON.parse(lastFrame(restV03).split('\ndata: ')[1]), { code: -32001, message: 'Task not found' }, 'v0.3 REST: the JSON-RPC error object')
  await until(() => b.app.a2aStreams.size === 0)
})

t.test('streams that missed their task\'s settling event (Redis\' pub/sub lost it, as across a restart) end with the task as stored, on JSON-RPC and REST', async t => {
  const { client, b, id } = await hangingOnA(t)
  const streams = Promise.all([
    postStream(b.url, rpc('tasks/resubscribe', { id })),
    postStream(b.url, rpc('SubscribeToTask', { id }), { 'a2a-version': '1.0' }),
    fetch(`${b.url}/v1/tasks/${id}:subscribe`, { method: 'POST', headers: { accept: 'text/event-stream' } }).then(async res => await res.text())
  ])
  await until(() => b.app.a2aStreams.size === 3)
  // The task completes by a write whose event nobody hears: what a subscriber reconnecting to a restarted Redis
  // misses. (A store with no announcer writes as the instances' does, and publishes nothing.)
  const silent = new RedisTaskStore(client, { keyPrefix: 'a2a:task:', ttlSeconds: 60, pruneIntervalMs: 0 })
  t.teardown(() => silent.close())
  const stored = await silent.get(id)
  if (stored === null) throw new Error('the task is not stored')
  const completed = { ...stored.task, status: { state: 'completed' as const, timestamp: new Date().toISOString() } }
  t.equal(await silent.replace({ ...stored, version: stored.version + 1, task: completed }), true)
  const [v03, v10, rest] = await streams
  t.equal(v03.events[0].result.status.state, 'in_progress')
  t.equal(v03.events[v03.events.length - 1].result.status.state, 'completed', 'JSON-RPC v0.3: the task as stored, last')
  t.equal(v10.events[0].result.task.status.state, 'TASK_STATE_WORKING')
  const last = v10.events[v10.events.length - 1].result
  t.equal(last.task.status.state, 'TASK_STATE_COMPLETED', 'JSON-RPC v1.0: the task as stored, last')
  t.equal(last.task.metadata['fastify-a2a.resync'], true, 'marked as a resync')
  const frames = rest.trimEnd().split('\n\n')
  t.match(JSON.parse(frames[frames.length - 1].split('data: ')[1]), { task: { status: { state: 'TASK_STATE_COMPLETED' } } }, 'REST alike')
  await until(() => b.app.a2aStreams.size === 0)
})
