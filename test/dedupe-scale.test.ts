import t, { type Test } from 'tap'
import type { A2AConfigInput, AgentExecutor } from '../index.js'
import type { MemoryTaskStore } from '../services/tasks/memory-store.js'
import { build, call, listen, privateRedis, rpc } from './helper.js'

// Idempotent sends under load (docs/protocol.md, "Idempotent sends"): 50 clients each sending one message three
// times at once get 50 tasks and 50 runs of the agent, in memory and across two instances on one Redis; and a hostile
// client cannot grow the memory store's claims beyond its bound.

/** An agent that counts its runs by messageId, and answers after a turn of the event loop. */
function counted (): { executor: AgentExecutor, runs: Map<string, number> } {
  const runs = new Map<string, number>()
  const executor: AgentExecutor = async function * (ctx) {
    runs.set(ctx.message.messageId, (runs.get(ctx.message.messageId) ?? 0) + 1)
    await new Promise(resolve => setImmediate(resolve))
    yield 'done'
  }
  return { executor, runs }
}

const CLIENTS = 50

async function fifty (t: Test, urls: string[], runs: Map<string, number>): Promise<void> {
  const message = (i: number) => ({ kind: 'message', role: 'user', messageId: `client-${i}`, parts: [{ kind: 'text', text: `hello from ${i}` }] })
  const answers = await Promise.all(Array.from({ length: CLIENTS }, async (_, i) => await Promise.all([0, 1, 2].map(async k => {
    const res = await fetch(urls[(i + k) % urls.length], {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: message(i) }))
    })
    return ((await res.json()) as any).result
  }))))
  const tasks = new Set<string>()
  let same = 0
  for (const three of answers) {
    if (three.every(a => a.id === three[0].id && a.status.state === 'completed')) same++
    for (const a of three) tasks.add(a.id)
  }
  t.equal(same, CLIENTS, 'every answer for a message names the same task, completed')
  t.equal(tasks.size, CLIENTS, '50 tasks')
  t.equal([...runs.values()].reduce((a, b) => a + b, 0), CLIENTS, '50 runs of the agent')
  t.equal(runs.size, CLIENTS, 'one per message')
}

t.test('50 clients each sending the same message 3 times at once, in memory: 50 tasks, 50 runs', async t => {
  const { executor, runs } = counted()
  const { url } = await listen(t, { executor })
  await fifty(t, [url], runs)
})

t.test('50 clients each sending the same message 3 times at once, across two instances on one Redis: 50 tasks, 50 runs', async t => {
  const redis = await privateRedis(t)
  const config: A2AConfigInput = {
    services: { cache: { type: 'cache', url: redis.url } },
    tasks: { backend: 'kvcache' },
    push_notifications: { backend: 'kvcache' }
  }
  const { executor, runs } = counted()
  const a = await listen(t, { executor, config })
  const b = await listen(t, { executor, config })
  await fifty(t, [a.url, b.url], runs)
})

t.test('a client sending many messages cannot grow the claims past tasks.max_tasks: the oldest go first', async t => {
  const { executor, runs } = counted()
  const app = await build(t, { executor, config: { tasks: { max_tasks: 20 } } })
  const store = app.a2aTasks.store as MemoryTaskStore
  for (let i = 0; i < 60; i++) {
    const res = await call(app, 'message/send', { message: { kind: 'message', role: 'user', messageId: `flood-${i}-${'x'.repeat(200)}`, parts: [{ kind: 'text', text: 'x' }] } })
    t.equal(res.body.result.status.state, 'completed')
  }
  t.equal(store.claims, 20, 'as many claims as the store holds tasks, at most')
  t.equal(store.size, 20, 'and tasks')
  // The newest claims still hold; the oldest went, and its message is a new send again.
  const newest = await call(app, 'message/send', { message: { kind: 'message', role: 'user', messageId: `flood-59-${'x'.repeat(200)}`, parts: [{ kind: 'text', text: 'x' }] } })
  t.equal(runs.get(`flood-59-${'x'.repeat(200)}`), 1, 'the newest is still deduplicated')
  t.ok(newest.body.result.id)
  await call(app, 'message/send', { message: { kind: 'message', role: 'user', messageId: `flood-0-${'x'.repeat(200)}`, parts: [{ kind: 'text', text: 'x' }] } })
  t.equal(runs.get(`flood-0-${'x'.repeat(200)}`), 2, 'the oldest, dropped, runs again')
  const huge = await call(app, 'message/send', { message: { kind: 'message', role: 'user', messageId: 'x'.repeat(257), parts: [{ kind: 'text', text: 'x' }] } })
  t.equal(huge.body.error.code, -32602, 'a messageId over 256 characters is refused before any claim')
  t.match(huge.body.error.data, /messageId/)
})
