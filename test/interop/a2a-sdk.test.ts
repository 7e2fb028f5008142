import { A2AClient } from '@a2a-js/sdk/client'
import t from 'tap'
import type { AgentExecutor } from '../../index.js'
import { listen, until } from '../helper.js'

let n = 0
const message = (text: string, extra: Record<string, unknown> = {}) =>
  ({ kind: 'message' as const, role: 'user' as const, messageId: `sdk-${++n}`, parts: [{ kind: 'text' as const, text }], ...extra })

t.test('the @a2a-js/sdk client drives message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe', async t => {
  const executor: AgentExecutor = async function * (ctx) {
    const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
    if (text === 'wait') {
      await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
      return
    }
    yield 'echo: '
    yield text
  }
  const { app, url } = await listen(t, { executor, config: { protocol: { dialect: 'a2a' } } })
  const client = await A2AClient.fromCardUrl(`${url}/.well-known/agent-card.json`)

  const sent = await client.sendMessage({ message: message('hi') }) as any
  t.notOk(sent.error)
  t.equal(sent.result.kind, 'task')
  t.equal(sent.result.status.state, 'completed')
  t.same(sent.result.artifacts[0].parts.map((p: any) => p.text), ['echo: ', 'hi'])

  const events: any[] = []
  for await (const event of client.sendMessageStream({ message: message('stream') })) events.push(event)
  t.same(events.map(e => e.kind), ['task', 'status-update', 'artifact-update', 'artifact-update', 'status-update'])
  const final = events[events.length - 1]
  t.equal(final.final, true)
  t.equal(final.status.state, 'completed')

  const got = await client.getTask({ id: final.taskId }) as any
  t.equal(got.result.id, final.taskId)
  t.equal(got.result.status.state, 'completed')

  const waiting = await client.sendMessage({ message: message('wait'), configuration: { blocking: false } }) as any
  const id = waiting.result.id
  await until(async () => (await app.a2aTasks.store.get(id))?.task.status.state === 'in_progress')
  const resubscribed: any[] = []
  const following = (async () => {
    for await (const event of client.resubscribeTask({ id })) resubscribed.push(event)
  })()
  await until(() => app.a2aStreams.size === 1)
  const canceled = await client.cancelTask({ id }) as any
  t.equal(canceled.result.status.state, 'canceled')
  await following
  t.equal(resubscribed[0].kind, 'task')
  t.match(resubscribed[resubscribed.length - 1], { kind: 'status-update', final: true, status: { state: 'canceled' } })

  const again = await client.cancelTask({ id }) as any
  t.equal(again.error.code, -32002)
  const missing = await client.getTask({ id: 'nope' }) as any
  t.equal(missing.error.code, -32001)
})
