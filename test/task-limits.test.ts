import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import t, { type Test } from 'tap'
import type { A2AConfigInput, AgentExecutor } from '../index.js'
import type { MemoryTaskStore } from '../services/tasks/memory-store.js'
import { build, privateRedis, rpc, serve, until, userMessage } from './helper.js'

const ALICE = 'key-alice-0123456789'
const BOB = 'key-bob-9876543210'

/** Asks for input on every message: each task waits, unfinished, until it is answered, canceled or expires. */
const asking: AgentExecutor = async function * () {
  yield { kind: 'status', state: 'input_required', message: 'and then?' }
}

function secured (tasks: Record<string, unknown>, extra: A2AConfigInput = {}): A2AConfigInput {
  return {
    security: {
      enabled: true,
      auth: { api_key: { keys: [{ key: ALICE, scopes: ['api:read'], id: 'alice' }, { key: BOB, scopes: ['api:read'], id: 'bob' }] } },
      rate_limit: { requests_per_minute: 10_000, burst: 10_000 }
    },
    tasks,
    ...extra
  }
}

async function send (app: Awaited<ReturnType<typeof build>>, key: string, text = 'hi', extra: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': key }, payload: rpc('message/send', { message: userMessage(text, extra) }) })
  return { status: res.statusCode, headers: res.headers, body: res.json() }
}

t.test('a store full of one principal\'s interrupted tasks refuses others only until interrupted_ttl cancels them', async t => {
  const app = await build(t, { executor: asking, config: secured({ max_tasks: 50, interrupted_ttl: 0.5 }) })
  const mine: string[] = []
  for (let i = 0; i < 50; i++) mine.push((await send(app, ALICE)).body.result.id)
  const refused = await send(app, BOB)
  t.equal(refused.status, 503)
  t.match(refused.body, { error: { code: -32603, data: 'task store is full' } })
  t.equal(refused.headers['retry-after'], '1')
  await until(async () => (await send(app, BOB)).status === 200, 1000)
  const first = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': ALICE }, payload: rpc('tasks/get', { id: mine[0] }) })
  const task = first.json().result
  // Evicted to make room, or kept canceled: never still waiting.
  if (task !== undefined) {
    t.equal(task.status.state, 'canceled')
    t.equal(task.status.message.parts[0].text, 'The task waited for input longer than the server keeps a task waiting.')
  } else {
    t.match(first.json(), { error: { code: -32001 } })
  }
})

t.test('max_live_per_principal: one principal past its unfinished tasks gets 429 -32012; another is served', async t => {
  const app = await build(t, { executor: asking, config: secured({ max_live_per_principal: 3 }) })
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await send(app, ALICE)).body.result.id)
  const refused = await send(app, ALICE)
  t.equal(refused.status, 429)
  t.equal(refused.headers['retry-after'], '1')
  t.match(refused.body, { error: { code: -32012, message: 'Too many unfinished tasks', data: 'tasks.max_live_per_principal reached' } })
  t.equal((await send(app, BOB)).status, 200, 'bob has his own allowance')
  const list = await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': ALICE }, payload: rpc('tasks/list', {}) })
  t.equal(list.json().result.tasks.length, 3, 'the refused send made no task')
  // Answering a waiting task is no new task: it is allowed, and cancelling one frees a place.
  t.equal((await send(app, ALICE, 'more', { taskId: ids[0] })).status, 200)
  await app.inject({ method: 'POST', url: '/', headers: { 'x-api-key': ALICE }, payload: rpc('tasks/cancel', { id: ids[1] }) })
  t.equal((await send(app, ALICE)).status, 200)
})

t.test('a message that joins a task counts against max_bytes: refused with 503 when only unfinished tasks fill it', async t => {
  const app = await build(t, { executor: asking, config: { tasks: { max_bytes: 65_536 } } })
  const call = async (method: string, params: unknown) => (await app.inject({ method: 'POST', url: '/', payload: rpc(method, params) })).json()
  const task = (await call('message/send', { message: userMessage('x'.repeat(30_000)) })).result
  const joined = await call('message/send', { message: userMessage('y'.repeat(40_000), { taskId: task.id }) })
  t.match(joined, { error: { code: -32603, data: 'task store is full' } })
  const now = (await call('tasks/get', { id: task.id })).result
  t.equal(now.history.length, 1, 'the refused message was not appended')
  t.equal(now.status.state, 'input_required', 'and the task still waits')
  t.equal((await call('message/send', { message: userMessage('small', { taskId: task.id }) })).result.history.length, 2)
})

t.test('on Redis, max_live_per_principal holds and interrupted_ttl cancels waiting tasks, freeing the places', async t => {
  const redis = await privateRedis(t)
  const app = await build(t, {
    executor: asking,
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', max_live_per_principal: 2, interrupted_ttl: 0.5 },
      push_notifications: { backend: 'kvcache' },
      server: { shutdown_timeout: 0.5 }
    }
  })
  const call = async (method: string, params: unknown) => {
    const res = await app.inject({ method: 'POST', url: '/', payload: rpc(method, params) })
    return { status: res.statusCode, body: res.json() }
  }
  const a = (await call('message/send', { message: userMessage('a') })).body.result
  await call('message/send', { message: userMessage('b') })
  const refused = await call('message/send', { message: userMessage('c') })
  t.equal(refused.status, 429)
  t.match(refused.body, { error: { code: -32012 } })
  await until(async () => (await call('tasks/get', { id: a.id })).body.result.status.state === 'canceled', 1000)
  t.equal((await call('message/send', { message: userMessage('d') })).status, 200, 'the canceled tasks freed their places')
})

t.test('on Redis, a new task is stored after its first turn ran as far as it runs at once: refused then, the turn is aborted', async t => {
  const redis = await privateRedis(t)
  let started = 0
  let aborted = 0
  // "now" answers at once; anything else waits until it is aborted.
  const mixed: AgentExecutor = ctx => {
    const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
    if (text === 'now') return 'done at once'
    if (text === 'soon') return Promise.resolve('done a moment later')
    started++
    return new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => { aborted++; resolve() }))
  }
  const app = await build(t, {
    executor: mixed,
    config: {
      services: { cache: { type: 'cache', url: redis.url } },
      tasks: { backend: 'kvcache', max_live_per_principal: 1 },
      push_notifications: { backend: 'kvcache' },
      server: { shutdown_timeout: 0.5 }
    }
  })
  const call = async (method: string, params: unknown) => {
    const res = await app.inject({ method: 'POST', url: '/', payload: rpc(method, params) })
    return { status: res.statusCode, body: res.json() }
  }
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())

  const first = (await call('message/send', { message: userMessage('wait'), configuration: { blocking: false } })).body.result
  t.equal(first.status.state, 'submitted', 'a non-blocking send answers with the task as created')
  t.equal((await call('tasks/get', { id: first.id })).body.result.status.state, 'in_progress', 'stored as its turn left it')
  t.same(await client.zrange('a2a:task:leases', 0, -1), [first.id], 'a run that goes on holds a lease')

  const refused = await call('message/send', { message: userMessage('wait') })
  t.equal(refused.status, 429)
  t.match(refused.body, { error: { code: -32012 } })
  await until(() => aborted === 1)
  t.equal(started, 2, 'the refused task\'s turn had begun; it was aborted')
  const streamed = await app.inject({ method: 'POST', url: '/', payload: rpc('message/stream', { message: userMessage('wait') }) })
  t.equal(streamed.statusCode, 429, 'a stream of a refused task too')
  await until(() => aborted === 2)
  // Its answer came while the insert was on its way: the write waited for the insert, and went with it.
  const soon = await call('message/send', { message: userMessage('soon') })
  t.equal(soon.status, 429)
  await until(() => app.a2aTasks.running === 1 && app.a2aTasks.bus.listenerCount() === 0)
  t.same((await call('tasks/list', {})).body.result.tasks.map((x: { id: string }) => x.id), [first.id], 'nothing of them was stored')
  t.same(await client.zrange('a2a:task:leases', 0, -1), [first.id], 'and no lease was left behind')

  const now = await call('message/send', { message: userMessage('now') })
  t.equal(now.body.result.status.state, 'completed', 'a task that ends in its first turn takes no place')
  t.same(await client.zrange('a2a:task:leases', 0, -1), [first.id], 'nor a lease')
  t.equal((await call('tasks/cancel', { id: first.id })).body.result.status.state, 'canceled')
  await until(() => app.a2aTasks.running === 0)
  t.same(await client.zrange('a2a:task:leases', 0, -1), [], 'the cancel dropped the last lease')
})

/** A standalone server with a small heap, for the memory bound. */
async function smallHeap (t: Test) {
  const dir = t.testdir({ 'agent.yml': 'agent:\n  name: Heap Agent\ntasks:\n  max_bytes: 67108864\n' })
  return await serve(t, ['--config', `${dir}/agent.yml`], { _TAPJS_PROCESSINFO_COVERAGE_: '0' }, ['--max-old-space-size=160'])
}

t.test('4 MB messages, over and over, to a server with a 160 MB heap: bounded by max_bytes, never out of memory', async t => {
  const server = await smallHeap(t)
  const text = 'z'.repeat(4 * 1024 * 1024)
  for (let i = 0; i < 60; i++) {
    const res = await fetch(server.url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage(text) })) })
    t.equal(res.status, 200, `send ${i}`)
    t.equal(((await res.json()) as any).result.status.state, 'completed')
  }
  t.equal(server.child.exitCode, null, 'the server is still up')
  t.equal((await fetch(server.url + '/health')).status, 200)
})

v8.setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Re-sends a whole 50 KB artifact 1000 times, each a text of its own (as an agent that rebuilds it would). */
const resending: AgentExecutor = async function * () {
  for (let i = 0; i < 1000; i++) yield { kind: 'artifact', artifactId: 'report', parts: [{ kind: 'text', text: `${i}`.padEnd(50_000, 'r') }] }
}

t.test('an executor re-sending a 50 KB artifact 1000 times, in three tasks: the kept events stay within max_bytes', async t => {
  // Before row 5 of issue 39 the kept events were outside the bound: three such tasks grew the heap by 150 MB.
  const app = await build(t, { executor: resending, config: { tasks: { max_bytes: 8 * 1024 * 1024 } } })
  gc()
  const before = process.memoryUsage().heapUsed
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'POST', url: '/', payload: rpc('message/send', { message: userMessage(`report ${i}`) }) })
    t.equal(res.json().result.status.state, 'completed')
  }
  gc()
  const grown = process.memoryUsage().heapUsed - before
  t.ok((app.a2aTasks.store as MemoryTaskStore).bytes <= 8 * 1024 * 1024, 'the store counts at most max_bytes')
  t.ok(grown < 40 * 1024 * 1024, `the heap grew by ${(grown / 1048576).toFixed(1)} MB, not 150`)
})
