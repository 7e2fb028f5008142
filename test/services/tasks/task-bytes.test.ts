import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import { taskBytes, taskBytesChange, valueBytes } from '../../../services/tasks/task-bytes.js'

const message = (text: string) => ({ kind: 'message' as const, role: 'user' as const, messageId: `m-${text}`, parts: [{ kind: 'text' as const, text }] })
const artifact = (id: string, ...texts: string[]) => ({ artifactId: id, parts: texts.map(text => ({ kind: 'text' as const, text })) })

const base: Task = {
  id: 'task-1',
  contextId: 'ctx-1',
  kind: 'task',
  status: { state: 'in_progress', timestamp: '2026-01-01T00:00:00.000Z' },
  artifacts: [artifact('a', 'first')],
  history: [message('hello')],
  metadata: null
}

t.test('a string costs its length; objects, arrays and slots a fixed amount', async t => {
  t.equal(valueBytes('x'.repeat(1000)) - valueBytes(''), 1000)
  t.equal(valueBytes({ a: 'x'.repeat(100) }) - valueBytes({ a: '' }), 100)
  t.equal(valueBytes([1, 2]) - valueBytes([1]), valueBytes([1]) - valueBytes([]))
  t.ok(valueBytes(null) > 0 && valueBytes(true) === valueBytes(7))
})

t.test('the change of every kind of write is exactly the difference of the whole estimates', async t => {
  const a = base.artifacts[0]
  const changes: Array<[string, Task]> = [
    ['status', { ...base, status: { state: 'completed', timestamp: '2026-01-01T00:00:01.000Z', message: message('done') } }],
    ['history appended', { ...base, history: base.history.concat([message('x'.repeat(5000))]) }],
    ['history replaced', { ...base, history: [message('other')] }],
    ['artifact added', { ...base, artifacts: base.artifacts.concat([artifact('b', 'y'.repeat(300))]) }],
    ['parts appended', { ...base, artifacts: [{ ...a, parts: a.parts.concat([{ kind: 'text', text: 'z'.repeat(700) }]) }] }],
    ['artifact replaced', { ...base, artifacts: [artifact('a', 'replaced')] }],
    ['artifact renamed', { ...base, artifacts: [{ ...a, name: 'Named', parts: a.parts.concat([{ kind: 'text', text: 'more' }]) }] }],
    ['artifact removed', { ...base, artifacts: [] }],
    ['metadata set', { ...base, metadata: { k: 'v'.repeat(40) } }],
    ['nothing', { ...base }]
  ]
  for (const [name, next] of changes) {
    t.equal(taskBytes(base) + taskBytesChange(next, base), taskBytes(next), name)
  }
  const withMeta = { ...base, metadata: { k: 'v' } }
  t.equal(taskBytes(withMeta) + taskBytesChange(base, withMeta), taskBytes(base), 'metadata removed')
  const appended = changes[4][1]
  t.ok(taskBytesChange(appended, base) > 700 && taskBytesChange(appended, base) < 900, 'an appended part costs about its text')
})
