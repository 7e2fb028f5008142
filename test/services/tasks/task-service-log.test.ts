import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import type { AgentExecutor } from '../../../services/agent/executor.js'
import { ANONYMOUS } from '../../../services/auth/principal.js'
import { MemoryTaskEventBus } from '../../../services/tasks/event-bus.js'
import { MemoryTaskStore } from '../../../services/tasks/memory-store.js'
import { TaskService } from '../../../services/tasks/task-service.js'

t.test("an executor's logger carries the task id, and is the same logger for the whole turn", async t => {
  const lines: any[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb() } })
  const loggers = new Set<unknown>()
  const executor: AgentExecutor = async ctx => {
    loggers.add(ctx.log)
    ctx.log.info({ step: 1 }, 'working')
    loggers.add(ctx.log)
    ctx.log.info({ step: 2 }, 'still working')
    return 'done'
  }
  const store = new MemoryTaskStore({ maxTasks: 10, ttlSeconds: 60 })
  const bus = new MemoryTaskEventBus()
  const service = new TaskService({
    store,
    bus,
    executor,
    log: pino({ level: 'info' }, stream),
    toolsFor: () => ({ available: () => [], call: async () => ({}) })
  })
  t.teardown(async () => {
    await service.drain(0)
    await store.close()
    await bus.close()
  })
  const record = await service.create({ kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'hi' }] }, ANONYMOUS)
  service.dispatch(record, ANONYMOUS)
  const settled = await service.waitSettled(record, 10_000)
  t.equal(settled.task.status.state, 'completed')
  t.equal(loggers.size, 1)
  t.match(lines, [
    { taskId: record.task.id, step: 1, msg: 'working' },
    { taskId: record.task.id, step: 2, msg: 'still working' }
  ])
})
