// What the durability tests of each shared store run alike (test/redis-durability.test.ts,
// test/postgres-durability.test.ts): real server processes on the store, and an instance killed mid-load.
import type { Test } from 'tap'
import type { TaskState } from '../schemas/task.js'
import type { StoredTask } from '../services/tasks/store.js'
import { receiver, rpc, serve, until, userMessage, type Served } from './helper.js'

/**
 * A real server process with its tasks and push configs on a shared store (`backend`, with the YAML of its
 * `services` section), whose agent answers 300 ms after each start. It records no coverage: what it reaches depends
 * on when it is killed.
 */
export async function crashInstance (t: Test, backend: 'kvcache' | 'postgres', services: string): Promise<Served> {
  const dir = t.testdir({
    'agent.yml': `
agent:
  name: Crash Agent
  delay_ms: 300
tasks:
  backend: ${backend}
  lease_ttl: 1
push_notifications:
  backend: ${backend}
  config:
    allowed_networks: [127.0.0.0/8]
    retry_delay: 0.2
services:
${services}
`
  })
  return await serve(t, ['--config', `${dir}/agent.yml`], { _TAPJS_PROCESSINFO_COVERAGE_: '0' })
}

/**
 * 16 tasks with a push config sent to a first instance (`start()`), which is killed with SIGKILL while they start,
 * finish and queue their webhooks; a second instance then takes over. Every task must end terminal, and every stored
 * state change must be delivered at least once (the final state, and `in_progress` of a completed task).
 */
export async function killAtAnyPoint (t: Test, start: () => Promise<Served>): Promise<void> {
  const hook = await receiver(t)
  const first = await start()
  const ids: string[] = []
  await Promise.all(Array.from({ length: 16 }, async (_, i) => {
    const res = await fetch(first.url + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rpc('message/send', {
        message: userMessage(`crash ${i}`),
        configuration: { blocking: false, pushNotificationConfig: { url: `${hook.url}/hook` } }
      }))
    })
    ids.push(((await res.json()) as any).result.id)
  }))
  // The agent answers 300 ms after each start: the kill lands while tasks start, finish and queue their webhooks.
  await new Promise(resolve => setTimeout(resolve, 320))
  first.child.kill('SIGKILL')
  await first.exited
  const second = await start()
  const get = async (id: string) => {
    const res = await fetch(second.url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('tasks/get', { id })) })
    return ((await res.json()) as any).result
  }
  const terminal = new Set(['completed', 'failed', 'canceled', 'rejected'])
  const delivered = (id: string, state: string) => hook.received.some(r => r.body?.id === id && r.body?.status?.state === state)
  await until(async () => {
    const tasks = await Promise.all(ids.map(get))
    return tasks.every(task => terminal.has(task.status.state) && delivered(task.id, task.status.state))
  }, 2000)
  for (const task of await Promise.all(ids.map(get))) {
    t.ok(terminal.has(task.status.state), `${task.id} ended ${task.status.state}`)
    t.ok(delivered(task.id, task.status.state), `its ${task.status.state} webhook arrived`)
    if (task.status.state === 'completed') t.ok(delivered(task.id, 'in_progress'), 'and so did in_progress')
  }
}

/** A task record as a dead instance's store would have written it: `id` in `state`, at `version`, written now. */
export function storedTask (id: string, state: string, version: number): StoredTask {
  const now = Date.now()
  return {
    task: { id, contextId: `ctx-${id}`, kind: 'task', status: { state: state as TaskState, timestamp: new Date(now).toISOString() }, artifacts: [], history: [], metadata: null },
    owner: 'anonymous',
    version,
    createdAt: now,
    updatedAt: now
  }
}
