// Streams that survive a dropped connection (docs/architecture.md, "Resumable streams"), on one instance with the memory store:
// event ids on every frame, replay after `Last-Event-ID` in every version and binding, the resync path, and the
// refusals.
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import a2a, { type A2AOptions, type AgentExecutor } from '../../index.js'
import { postStream, rpc, userMessage, waitOrEchoInTwo, type Teardown } from '../helper.js'
import { Frames, RESUME_BINDINGS, RESYNC, chunks, dropAfter, dropping, gatedAgent, resyncThenEnd, textOf, untilCompleted, type Frame } from './resume-bindings.js'

/**
 * The plugin on 127.0.0.1. Its close ends every connection: a client that dropped a stream leaves a keep-alive
 * socket the server would otherwise wait seconds for.
 */
async function listen (t: Teardown, opts: A2AOptions): Promise<{ url: string }> {
  const app = Fastify({ logger: false, forceCloseConnections: true })
  await app.register(a2a, opts)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { url }
}

function increasing (t: Test, frames: Frame[], after: number): void {
  const ids = frames.map(f => f.id)
  t.ok(ids.every(id => typeof id === 'number'), 'every frame has an id')
  t.ok(ids.every((id, i) => (id as number) > (i === 0 ? after : ids[i - 1] as number)), `ids strictly increasing after ${after}: ${ids.join(' ')}`)
}

for (const binding of RESUME_BINDINGS) {
  for (const [how, cut] of [['header', 1], ['header', 3], ['metadata', 2]] as const) {
    t.test(`${binding.name}: dropped after ${cut} frame(s), resumed by ${how}: exactly what it missed, then live, then the end`, async t => {
      const agent = gatedAgent(4, 4)
      const { url } = await listen(t, { executor: agent.executor, config: binding.config })
      const text = `job-${how}-${cut}`
      const seen = await dropAfter(await dropping(binding, url, text), cut)
      increasing(t, seen, 0)
      const taskId = binding.taskId(seen[0].data)
      const lastId = seen[seen.length - 1].id as number

      const resumed = new Frames(await binding.resume(url, taskId, lastId, how))
      // What the first turn wrote before its gate can only come from what was kept: the task has gone no further.
      const replayed: Frame[] = []
      while (textOf(binding, seen) + textOf(binding, replayed) !== chunks(0, 4)) replayed.push(await resumed.next() as Frame)
      agent.open(text)
      const all = [...replayed, ...await resumed.rest()]
      t.equal(textOf(binding, seen) + textOf(binding, all), chunks(0, 8), 'every chunk once, in order')
      t.notOk(all.some(f => binding.said(f.data).startsWith('task ')), 'no snapshot: nothing was missing')
      t.equal(binding.said(all[all.length - 1].data), 'status completed', 'the final status last')
      increasing(t, all, lastId)
    })
  }

  t.test(`${binding.name}: an id older than what is kept gets the current task marked as a resync, then live events`, async t => {
    const agent = gatedAgent(6, 2)
    const { url } = await listen(t, { executor: agent.executor, config: { ...binding.config, server: { stream_replay: { max_events: 2 } } } })
    const seen = await dropAfter(await dropping(binding, url, 'old'), 1)
    const taskId = binding.taskId(seen[0].data)
    const resumed = new Frames(await binding.resume(url, taskId, seen[0].id))
    const first = await resumed.next() as Frame
    t.match(binding.said(first.data), /^task (working|in_progress)$/, 'the task as it stands')
    const task = first.data.result?.task ?? first.data.result ?? first.data.task
    t.equal((task.metadata as Record<string, unknown>)[RESYNC], true, 'marked as a resync')
    agent.open('old')
    const rest = await resumed.rest()
    t.equal(binding.said(rest[rest.length - 1].data), 'status completed')
    increasing(t, [first, ...rest], seen[0].id as number)
  })
}

t.test('frames carry ids in v1.0, REST and the a2a dialect; the seed dialect only with protocol.sse_event_ids', async t => {
  const executor: AgentExecutor = waitOrEchoInTwo
  const { url: seed } = await listen(t, { executor })
  const plain = await postStream(seed, rpc('message/stream', { message: userMessage('x') }))
  t.ok(plain.events.length >= 2)
  t.same(plain.ids, plain.events.map(() => undefined), 'the seed dialect: exactly data: lines')
  const { url: withIds } = await listen(t, { executor, config: { protocol: { sse_event_ids: true } } })
  const numbered = await postStream(withIds, rpc('message/stream', { message: userMessage('x') }))
  t.ok(numbered.ids.every((id, i) => typeof id === 'number' && (i === 0 || id > (numbered.ids[i - 1] as number))), `ids: ${numbered.ids.join(' ')}`)
  const last = numbered.events[numbered.events.length - 1].result
  const got: any = await (await fetch(withIds, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('tasks/get', { id: last.id })) })).json()
  t.equal(got.result.status.state, 'completed')

  // Resuming the seed dialect: its every result is the whole task, so it gets the task as it stands.
  const resumed = await postStream(withIds, rpc('tasks/resubscribe', { id: last.id }), { 'last-event-id': String(numbered.ids[0]) })
  t.equal(resumed.events.length, 1)
  t.match(resumed.events[0].result, { id: last.id, status: { state: 'completed' }, metadata: null })
})

t.test('bad ids are -32602: not a number, negative, fractional, above the task\'s version, in either place', async t => {
  const { url } = await listen(t, { executor: waitOrEchoInTwo, config: { protocol: { dialect: 'a2a' } } })
  const done = await postStream(url, rpc('message/stream', { message: userMessage('x') }))
  const id = done.events[0].result.id as string
  const top = done.ids[done.ids.length - 1] as number
  const cases: Array<[Record<string, string>, Record<string, unknown>, RegExp]> = [
    [{ 'last-event-id': 'abc' }, {}, /^Last-Event-ID: must be the id of an event/],
    [{ 'last-event-id': '-1' }, {}, /^Last-Event-ID: must be/],
    [{ 'last-event-id': '1.5' }, {}, /^Last-Event-ID: must be/],
    [{}, { metadata: { lastEventId: 1.5 } }, /^params\.metadata\.lastEventId: must be/],
    [{}, { metadata: { lastEventId: 'x' } }, /^params\.metadata\.lastEventId: must be/],
    [{ 'last-event-id': String(top + 1) }, {}, new RegExp(`^lastEventId: ${top + 1} is not an event of task "${id}" \\(its last is ${top}\\)$`)]
  ]
  for (const [headers, params, data] of cases) {
    const res = await postStream(url, rpc('tasks/resubscribe', { id, ...params }), headers)
    t.equal(res.events.length, 1)
    t.match(res.events[0].error, { code: -32602, data }, JSON.stringify({ headers, params }))
  }
  const rest = await fetch(`${url}/tasks/${id}:subscribe`, { headers: { 'last-event-id': 'abc', 'a2a-version': '1.0' } })
  t.equal(rest.status, 400)
  t.match(await rest.json(), { error: { code: 400, status: 'INVALID_ARGUMENT' } })
})

t.test('a task that ended while the client was away: the rest of its events, then the end; v1.0 too', async t => {
  for (const binding of RESUME_BINDINGS.slice(0, 2)) {
    const agent = gatedAgent(2, 2)
    const { url } = await listen(t, { executor: agent.executor, config: binding.config })
    const seen = await dropAfter(await dropping(binding, url, 'away'), 1)
    agent.open('away')
    const taskId = binding.taskId(seen[0].data)
    // The task ends with the client away.
    for (;;) {
      const got: any = await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('tasks/get', { id: taskId })) })).json()
      if (got.result.status.state === 'completed') break
      await new Promise(resolve => setTimeout(resolve, 10))
    }
    const frames = await new Frames(await binding.resume(url, taskId, seen[0].id)).rest()
    t.equal(textOf(binding, frames), chunks(0, 4), binding.name)
    t.equal(binding.said(frames[frames.length - 1].data), 'status completed')
    // It has every event now: v0.3 gets an empty stream, v1.0 its usual refusal of a task that has ended.
    const again = await new Frames(await binding.resume(url, taskId, frames[frames.length - 1].id)).rest()
    if (binding.name.includes('v0.3')) t.same(again, [], 'nothing left')
    else t.equal(again[0].data.error.code, -32004)
  }
})

t.test('row 11: a v1.0 resume of a task that ended and whose events were evicted gets the task marked as a resync, then the end', async t => {
  for (const binding of RESUME_BINDINGS.filter(b => b.name.includes('v1.0'))) {
    for (const maxEvents of [0, 2]) {
      const agent = gatedAgent(2, 2)
      const config = { ...binding.config, server: { stream_replay: { max_events: maxEvents } } }
      const { url } = await listen(t, { executor: agent.executor, config })
      const seen = await dropAfter(await dropping(binding, url, 'evicted'), 1)
      agent.open('evicted')
      const taskId = binding.taskId(seen[0].data)
      await untilCompleted(url, taskId)
      const res = await binding.resume(url, taskId, seen[0].id)
      await resyncThenEnd(t, binding, res, `${binding.name}, max_events ${maxEvents}`)
    }
  }
})
