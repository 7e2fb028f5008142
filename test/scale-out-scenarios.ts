// The scenarios every shared backend passes with two instances in one process (test/scale-out.test.ts on Redis,
// test/scale-out-postgres.test.ts on PostgreSQL): tasks, streams, cancels and webhooks from either side.
import type { Test } from 'tap'
import type { A2AConfigInput, AgentExecutor } from '../index.js'
import { build, call, listen, postStream, receiver, rpc, until, userMessage, type Teardown } from './helper.js'

/** A backend the instances share. */
export interface SharedBackend {
  /** The config of an instance on it, with `extra`'s sections in place of its own. */
  shared: (extra?: A2AConfigInput) => A2AConfigInput
  /** Makes it empty for one test, and gives back what it took at the test's end. */
  fresh: (t: Teardown) => Promise<void>
}

/** An executor both instances run: waits for input on "ask", waits for cancel on "hang", echoes the rest. */
export const executor: AgentExecutor = async function * (ctx) {
  const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
  if (text === 'ask') {
    yield { kind: 'status', state: 'input_required', message: 'and then?' }
    return
  }
  if (text === 'hang') {
    await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
    return
  }
  if (text.startsWith('slow')) await new Promise(resolve => setTimeout(resolve, 200))
  yield `echo: ${text}`
}

/** Runs the scenarios on `backend`. */
export function scaleOutScenarios (t: Test, backend: SharedBackend): void {
  t.test('two instances serve every task from either side', async t => {
    await backend.fresh(t)
    const a = await listen(t, { executor, config: backend.shared() })
    const b = await listen(t, { executor, config: backend.shared() })

    const sent = await call(a.app, 'message/send', { message: userMessage('hello') })
    t.equal(sent.body.result.status.state, 'completed')
    const got = await call(b.app, 'tasks/get', { id: sent.body.result.id })
    t.same(got.body.result, sent.body.result, 'send on A, get on B')
    const listed = await call(b.app, 'tasks/list', {})
    t.same(listed.body.result.tasks.map((x: any) => x.id), [sent.body.result.id])

    const asked = await call(a.app, 'message/send', { message: userMessage('ask') })
    t.equal(asked.body.result.status.state, 'input_required')
    const answered = await call(b.app, 'message/send', { message: userMessage('more', { taskId: asked.body.result.id }) })
    t.equal(answered.body.result.status.state, 'completed', 'an input_required task created on A continues on B')
    t.equal(answered.body.result.history.length, 2)

    const hanging = await call(a.app, 'message/send', { message: userMessage('hang'), configuration: { blocking: false } })
    const id = hanging.body.result.id
    await until(async () => (await call(b.app, 'tasks/get', { id })).body.result.status.state === 'in_progress')
    const following = postStream(b.url, rpc('tasks/resubscribe', { id }))
    await until(() => b.app.a2aStreams.size === 1)
    const canceled = await call(b.app, 'tasks/cancel', { id })
    t.equal(canceled.body.result.status.state, 'canceled', 'cancel on B of a task running on A')
    await until(() => a.app.a2aTasks.running === 0)
    const stream = await following
    t.equal(stream.events[stream.events.length - 1].result.status.state, 'canceled')
  })

  t.test('a stream on A and a resubscribe on B see the same events, in order', async t => {
    await backend.fresh(t)
    const a = await listen(t, { executor, config: backend.shared() })
    const b = await listen(t, { executor, config: backend.shared() })
    const gate = await call(a.app, 'message/send', { message: userMessage('ask') })
    const id = gate.body.result.id
    const onA = postStream(a.url, rpc('message/stream', { message: userMessage('slow one', { taskId: id }) }))
    await until(async () => (await call(b.app, 'tasks/get', { id })).body.result.status.state === 'in_progress')
    const onB = await postStream(b.url, rpc('tasks/resubscribe', { id }))
    const streamA = await onA
    const lastA = streamA.events[streamA.events.length - 1].result
    const lastB = onB.events[onB.events.length - 1].result
    t.equal(lastA.status.state, 'completed')
    t.same(lastB, lastA, 'B ends with the same final task')
  })

  t.test('20 concurrent tasks with push configs over both instances: every state delivered exactly once', async t => {
    await backend.fresh(t)
    const hook = await receiver(t)
    const a = await build(t, { executor, config: backend.shared() })
    const b = await build(t, { executor, config: backend.shared() })
    const sends = Array.from({ length: 20 }, (_, i) => call(i % 2 === 0 ? a : b, 'message/send', {
      message: userMessage(`task ${i}`),
      configuration: { pushNotificationConfig: { url: `${hook.url}/hook` } }
    }))
    const tasks = (await Promise.all(sends)).map(r => r.body.result)
    t.ok(tasks.every(x => x.status.state === 'completed'))
    await until(() => hook.received.length >= 40)
    // Give any duplicate a chance to show up before counting.
    await until(async () => (await Promise.all([a, b].map(app => app.a2aNotifier.backlog()))).every(p => p === 0))
    const seen = new Map<string, number>()
    for (const r of hook.received) {
      const key = `${r.body.id}/${r.body.status.state}`
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
    t.equal(seen.size, 40, 'in_progress and completed for each of the 20 tasks')
    t.ok([...seen.values()].every(n => n === 1), 'each exactly once')
    for (const task of tasks) {
      const states = hook.received.filter(r => r.body.id === task.id).map(r => r.body.status.state)
      t.same(states, ['in_progress', 'completed'], `in order for ${task.id}`)
    }
  })

  t.test('a blocking send on A ends with the cancel made on B at once, though A\'s executor has not stopped yet', async t => {
    await backend.fresh(t)
    let release = (): void => {}
    const stubborn = new Promise<void>(resolve => { release = resolve })
    // An executor that does not heed the abort: its run ends only when the test lets it.
    const slowToStop: AgentExecutor = async () => { await stubborn }
    const a = await listen(t, { executor: slowToStop, config: backend.shared({ server: { shutdown_timeout: 0.5, request_timeout: 120 } }) })
    const b = await listen(t, { executor: slowToStop, config: backend.shared() })
    t.teardown(() => release())
    const sending = call(a.app, 'message/send', { message: userMessage('wait for me') })
    let id = ''
    await until(async () => {
      id = (await call(b.app, 'tasks/list', {})).body.result.tasks[0]?.id ?? ''
      return id !== ''
    })
    t.equal((await call(b.app, 'tasks/cancel', { id })).body.result.status.state, 'canceled')
    const sent = await sending
    t.equal(sent.body.result.status.state, 'canceled', 'the wait on A heard the cancel with the abort request')
    t.equal(a.app.a2aTasks.running, 1, 'A\'s run is still going: the wait did not end with it')
    release()
    await until(() => a.app.a2aTasks.running === 0)
    t.equal((await call(b.app, 'tasks/get', { id })).body.result.status.state, 'canceled')
  })

  t.test('a blocking send on A whose task another instance finishes is answered once A\'s run ends', async t => {
    await backend.fresh(t)
    let open = (): void => {}
    const gate = new Promise<void>(resolve => { open = resolve })
    const gated: AgentExecutor = async function * (ctx) {
      const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
      if (text === 'gate') await gate
      yield `echo: ${text}`
    }
    const a = await listen(t, { executor: gated, config: backend.shared() })
    const b = await listen(t, { executor: gated, config: backend.shared() })
    t.teardown(() => open())
    const sending = call(a.app, 'message/send', { message: userMessage('gate') })
    let id = ''
    await until(async () => {
      const task = (await call(b.app, 'tasks/list', {})).body.result.tasks[0]
      id = task?.status.state === 'in_progress' ? task.id : ''
      return id !== ''
    })
    // B takes the next message of the task and finishes it, while A's turn still waits at the gate.
    const joined = await call(b.app, 'message/send', { message: userMessage('from b', { taskId: id }) })
    t.equal(joined.body.result.status.state, 'completed')
    open()
    const sent = await sending
    t.equal(sent.body.result.status.state, 'completed', 'A\'s wait read the task when its run ended')
    t.equal(sent.body.result.id, id)
  })
}
