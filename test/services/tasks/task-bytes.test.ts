import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import { keyCount, taskBytes, taskBytesChange, valueBytes } from '../../../services/tasks/task-bytes.js'

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
  t.ok(taskBytesChange(appended, base) > 700 && taskBytesChange(appended, base) < 1000, 'an appended part costs about its text and its two keys')
})

t.test('text with any character outside Latin-1 counts two bytes a character, as V8 holds it: 4M \'漢\' about twice 4M \'a\'', async t => {
  const n = 4_000_000
  t.equal(valueBytes('漢'.repeat(n)) - valueBytes(''), 2 * n)
  t.equal(valueBytes('é'.repeat(n)) - valueBytes(''), n, 'Latin-1 text stays one byte a character')
  t.equal(valueBytes('a'.repeat(n - 1) + '漢') - valueBytes(''), 2 * n, 'one such character makes the whole string two-byte')
  t.equal(valueBytes({ 漢字: 0 }) - valueBytes({ ab: 0 }), 2, 'keys too')
  const task = { ...base, history: [{ ...message('m'), parts: [{ kind: 'text' as const, text: '漢'.repeat(n) }] }] }
  const added = taskBytes(task) - taskBytes({ ...base, history: [message('m')] })
  t.ok(added > 2 * n - 100 && added < 2 * n + 100, 'a task holding it')
})

t.test('an object key costs about what the heap holds for it, not its name\'s length', async t => {
  const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 0]))
  const perKey = (valueBytes(many) - valueBytes({})) / 1000
  t.ok(perKey > 60 && perKey < 90, `${perKey} bytes a key`)
})

t.test('keyCount counts the keys and array items of every object and array together, and stops past its bound', async t => {
  t.equal(keyCount({ a: 1, b: { c: [1, 2, { d: 'x' }] } }, 100), 7)
  t.equal(keyCount('text', 100), 0)
  t.equal(keyCount(null, 100), 0)
  t.equal(keyCount({ a: { b: { c: 1 } }, d: 1, e: 1 }, 2), 3, 'an object past the bound')
  t.equal(keyCount([[1, 2, 3], [4, 5]], 3), 4, 'an array past the bound')
  t.equal(keyCount([{ a: 1, b: 2 }, { c: 3 }], 2), 3, 'the walk stops once past it')
  t.equal(keyCount(Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 0])), 10), 11, 'the count is capped')
})

/** The heap a value made by `make` holds, measured after full collections (as in services/tasks/task-bytes.ts). */
function heapOf (make: () => unknown): { value: unknown, bytes: number } {
  gc()
  gc()
  const before = process.memoryUsage().heapUsed
  const value = make()
  gc()
  gc()
  return { value, bytes: process.memoryUsage().heapUsed - before }
}

v8.setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

t.test('the estimate is within 0.5x to 2x of the measured heap for Latin-1 text, two-byte text and many keys', async t => {
  const cases: Array<[string, () => unknown]> = [
    ['Latin-1 text', () => JSON.parse(JSON.stringify({ kind: 'text', text: 'é'.repeat(4_000_000) }))],
    ['two-byte text', () => JSON.parse(JSON.stringify({ kind: 'text', text: '漢'.repeat(4_000_000) }))],
    ['many keys in one object', () => JSON.parse('{' + Array.from({ length: 200_000 }, (_, i) => `"k${i}":0`).join(',') + '}')],
    ['many one-key objects with names of their own', () => JSON.parse('[' + Array.from({ length: 50_000 }, (_, i) => `{"k${i}":0}`).join(',') + ']')]
  ]
  for (const [name, make] of cases) {
    const { value, bytes } = heapOf(make)
    const ratio = valueBytes(value) / bytes
    t.ok(ratio > 0.5 && ratio < 2, `${name}: estimate / heap = ${ratio.toFixed(2)}`)
  }
  // Small objects that share their key names share one hidden class: counted over, never under.
  const { value, bytes } = heapOf(() => JSON.parse(JSON.stringify(Array.from({ length: 50_000 }, (_, i) => ({ kind: 'text', text: `part ${i}` })))))
  const ratio = valueBytes(value) / bytes
  t.ok(ratio > 1 && ratio < 4, `many small text parts: estimate / heap = ${ratio.toFixed(2)}`)
})
