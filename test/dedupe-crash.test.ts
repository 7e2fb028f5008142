import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { AgentExecutor } from '../index.js'
import { claimKey, claimText } from '../services/tasks/send-claims.js'
import { build, call, privateRedis, rpc, serve, until } from './helper.js'

// Idempotent sends across a crash (docs/protocol.md, "Idempotent sends"), on Redis: a retry after the server was
// killed mid-answer finds the task the first attempt made, and the agent does not run again; a claim left by an
// instance that died before its task was stored does not hold the messageId for ever.

/** An agent module for the real server: each run appends a line to runs.log, then works for a minute. */
const RECORDING_MODULE = `import { appendFileSync } from 'node:fs'
export default async function * (ctx) {
  appendFileSync(new URL('./runs.log', import.meta.url), ctx.message.messageId + '\\n')
  yield 'started'
  await new Promise(resolve => setTimeout(resolve, 60000))
  yield 'finished'
}
`

const MESSAGE = { kind: 'message', role: 'user', messageId: 'crash-retry-1', parts: [{ kind: 'text', text: 'do the work once' }] }

async function send (url: string, blocking: boolean): Promise<any> {
  const res = await fetch(url + '/', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: MESSAGE, configuration: { blocking } }))
  })
  return await res.json()
}

t.test('a retry after the server was killed mid-answer finds the task the first attempt made: no second run (Redis)', async t => {
  const redis = await privateRedis(t)
  const dir = t.testdir({
    'runs.log': '',
    'agent.mjs': RECORDING_MODULE,
    'agent.yml': `
agent:
  name: Crash Agent
  executor: ./agent.mjs
tasks:
  backend: kvcache
  lease_ttl: 1
push_notifications:
  backend: kvcache
services:
  cache:
    type: cache
    url: ${redis.url}
`
  })
  const runs = (): string[] => readFileSync(join(dir, 'runs.log'), 'utf8').split('\n').filter(line => line !== '')
  const env = { _TAPJS_PROCESSINFO_COVERAGE_: '0' }
  const first = await serve(t, ['--config', `${dir}/agent.yml`], env)
  // A blocking send: its answer waits for the agent, which works for a minute.
  const answer = send(first.url, true).catch(() => undefined)
  const { Redis } = await import('ioredis')
  const admin = new Redis(redis.port, '127.0.0.1')
  t.teardown(() => admin.disconnect())
  const key = `a2a:task:sent:${claimKey('anonymous', MESSAGE.messageId)}`
  let taskId = ''
  // The agent has run and the task is stored: the server is killed before it answers.
  await until(async () => {
    const claim = await admin.get(key)
    taskId = claim?.slice(claim.lastIndexOf(' ') + 1) ?? ''
    return runs().length === 1 && taskId !== '' && await admin.exists(`a2a:task:t:${taskId}`) === 1
  }, 1000)
  first.child.kill('SIGKILL')
  await first.exited
  t.equal(await answer, undefined, 'the first attempt got no answer')

  const second = await serve(t, ['--config', `${dir}/agent.yml`], env)
  const now = await send(second.url, false)
  t.equal(now.result.id, taskId, 'the retry gets the task the first attempt made')
  // A blocking retry waits for it to settle: the reaper fails it, its instance having died.
  const settled = await send(second.url, true)
  t.same([settled.result.id, settled.result.status.state], [taskId, 'failed'])
  t.same(runs(), [MESSAGE.messageId], 'the agent ran once')
})

t.test('a claim whose task never came (its instance died in between) is taken over once stale: the send runs', async t => {
  const redis = await privateRedis(t)
  const runs: string[] = []
  const executor: AgentExecutor = ctx => { runs.push(ctx.message.messageId); return 'done' }
  const app = await build(t, {
    executor,
    config: { tasks: { backend: 'kvcache', lease_ttl: 0.5 }, push_notifications: { backend: 'kvcache' }, services: { cache: { type: 'cache', url: redis.url } } }
  })
  const { messageHash } = await import('../services/tasks/send-claims.js')
  const { Redis } = await import('ioredis')
  const admin = new Redis(redis.port, '127.0.0.1')
  t.teardown(() => admin.disconnect())
  // What an instance killed between its claim and its insert leaves: a claim naming a task that is not stored.
  const message = { ...MESSAGE, messageId: 'orphaned-claim' }
  const orphan = { owner: 'anonymous', messageId: message.messageId, taskId: 'never-stored', hash: messageHash(message as any), at: Date.now() }
  await admin.set(`a2a:task:sent:${claimKey('anonymous', message.messageId)}`, claimText(orphan), 'PX', 600_000)
  const res = await call(app, 'message/send', { message })
  t.equal(res.body.result.status.state, 'completed', 'the send waited for the claim to go stale, then ran')
  t.not(res.body.result.id, 'never-stored')
  t.same(runs, [message.messageId])
  const again = await call(app, 'message/send', { message })
  t.equal(again.body.result.id, res.body.result.id, 'and its task is now the one a duplicate gets')
  t.same(runs, [message.messageId])
})
