import { Writable } from 'node:stream'
import { pino } from 'pino'
import t, { type Test } from 'tap'
import type { Message } from '../../../schemas/task.js'
import { ANONYMOUS } from '../../../services/auth/principal.js'
import { StorageUnavailable } from '../../../services/kernel/errors.js'
import { SendDedupe, type DuplicateSend } from '../../../services/tasks/dedupe.js'
import { MemoryTaskEventBus } from '../../../services/tasks/event-bus.js'
import { TaskService } from '../../../services/tasks/task-service.js'
import { MemoryTaskStore } from '../../../services/tasks/memory-store.js'
import { messageHash } from '../../../services/tasks/send-claims.js'
import type { SendClaim, StoredTask } from '../../../services/tasks/store.js'
import { record } from './store-contract.js'

// The task service's side of idempotent sends (services/tasks/dedupe.ts), over the memory store: when a duplicate's
// answer is there already, a claim whose task never got its message, and a claim the store could not release.

const message = (messageId: string, extra: Partial<Message> = {}): Message =>
  ({ kind: 'message', role: 'user', messageId, parts: [{ kind: 'text', text: 'hi' }], ...extra }) as Message

function logged (): { log: ReturnType<typeof pino>, lines: () => any[] } {
  const out: string[] = []
  const stream = new Writable({ write (chunk, _enc, done) { out.push(String(chunk)); done() } })
  return { log: pino({ level: 'warn' }, stream), lines: () => out.map(line => JSON.parse(line)) }
}

function dedupe (t: Test, store = new MemoryTaskStore({ maxTasks: 100, ttlSeconds: 60 }), staleMs = 60_000) {
  t.teardown(() => store.close())
  const { log, lines } = logged()
  return { store, lines, dedupe: new SendDedupe({ store: store as any, windowMs: 600_000, staleMs, now: Date.now, log }) }
}

t.test('answered: a terminal task, or one interrupted since the claim, is the answer; one working, or interrupted before, is not yet', async t => {
  const { dedupe: d } = dedupe(t)
  const at = 1_000_000
  const claim: SendClaim = { owner: 'anonymous', messageId: 'm', taskId: 't', hash: 'h', at }
  const duplicate = (state: string, when: number): DuplicateSend => ({ claim, duplicate: record('t', when, { state: state as any }) })
  t.equal(d.answered(duplicate('completed', at - 10)), true, 'terminal')
  t.equal(d.answered(duplicate('input_required', at + 10)), true, 'interrupted by the turn the message started')
  t.equal(d.answered(duplicate('input_required', at - 10)), false, 'interrupted before the message came: its turn has not settled yet')
  t.equal(d.answered(duplicate('in_progress', at + 10)), false, 'working')
})

t.test('a claim naming a task that never got the message is taken over once stale: the send is the first', async t => {
  const { store, dedupe: d, lines } = dedupe(t, undefined, 50)
  const existing: StoredTask = record('task-1', Date.now())
  store.insertNow(existing)
  const m = message('joined', { taskId: 'task-1' })
  // Left by a send that claimed, then died before it appended its message.
  t.equal(store.claimSend({ owner: 'anonymous', messageId: 'joined', taskId: 'task-1', hash: messageHash(m), at: Date.now() }, 600_000), null)
  const claimed = await d.claim(m, ANONYMOUS)
  t.match(claimed, { owner: 'anonymous', messageId: 'joined', taskId: 'task-1', hash: messageHash(m) }, 'this send holds the claim now')
  t.match(lines(), [{ msg: 'a send claim whose task never came is taken over', taskId: 'task-1' }])
})

t.test('a claim its store could not release is logged and left to go stale', async t => {
  class Unreleasing extends MemoryTaskStore {
    override releaseSend (): void {
      throw new StorageUnavailable('redis connection closed')
    }
  }
  const store = new Unreleasing({ maxTasks: 100, ttlSeconds: 60 })
  const { dedupe: d, lines } = dedupe(t, store)
  const claimed = await d.claim(message('m-1'), ANONYMOUS) as SendClaim
  t.throws(() => d.run(claimed, () => { throw new Error('refused') }), { message: 'refused' })
  await new Promise(resolve => setImmediate(resolve))
  t.match(lines(), [{ msg: 'send claim not released', err: { message: 'redis connection closed' } }])
  t.same(store.claimSend({ ...claimed, taskId: 'other' }, 600_000), claimed, 'the key still holds')
})

t.test('the task service deduplicates while the window is above 0 and its store can claim', async t => {
  const service = (store: MemoryTaskStore, dedupeWindowMs?: number) =>
    new TaskService({ store, bus: new MemoryTaskEventBus(), executor: () => 'done', log: pino({ level: 'silent' }), toolsFor: () => ({}) as any, dedupeWindowMs })
  const store = new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 60 })
  t.teardown(() => store.close())
  t.ok(service(store, 600_000).dedupe, 'on')
  t.equal(service(store, 0).dedupe, undefined, 'a window of 0')
  t.equal(service(store).dedupe, undefined, 'no window')
  const unable = new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 60 })
  t.teardown(() => unable.close())
  Object.defineProperty(unable, 'claimSend', { value: undefined })
  t.equal(service(unable, 600_000).dedupe, undefined, 'a store without claimSend')
})
