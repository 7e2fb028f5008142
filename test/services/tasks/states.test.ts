import t from 'tap'
import { TASK_STATES, type Task, type TaskState } from '../../../schemas/task.js'
import { canTransition, isSettled, isTerminal } from '../../../services/tasks/states.js'
import { normalizeState, presentTask, stateName } from '../../../services/a2a/codec-v03.js'

const TERMINAL = ['completed', 'canceled', 'failed', 'rejected'] as const

function task (state: TaskState, historySize = 3): Task {
  return {
    id: 't1',
    contextId: 'c1',
    kind: 'task',
    status: { state, timestamp: '2025-01-01T00:00:00.000Z' },
    artifacts: [],
    history: Array.from({ length: historySize }, (_, i) => ({
      kind: 'message' as const, role: 'user' as const, messageId: `m${i}`, parts: [{ kind: 'text' as const, text: `${i}` }]
    })),
    metadata: null
  }
}

t.test('the transitions of CONTRACT.md §6 are allowed', async t => {
  const allowed: Array<[TaskState, TaskState]> = [
    ['submitted', 'in_progress'], ['submitted', 'canceled'],
    ['in_progress', 'completed'], ['in_progress', 'failed'], ['in_progress', 'canceled'],
    ['in_progress', 'input_required'], ['in_progress', 'auth_required'], ['in_progress', 'rejected'],
    ['input_required', 'in_progress'], ['input_required', 'canceled'],
    ['auth_required', 'in_progress'], ['auth_required', 'canceled']
  ]
  for (const [from, to] of allowed) t.equal(canTransition(from, to), true, `${from} -> ${to}`)
})

t.test('other transitions are illegal, and nothing leaves a terminal state', async t => {
  const illegal: Array<[TaskState, TaskState]> = [
    ['submitted', 'completed'], ['submitted', 'input_required'], ['submitted', 'submitted'],
    ['in_progress', 'submitted'], ['in_progress', 'in_progress'],
    ['input_required', 'completed'], ['input_required', 'auth_required'],
    ['auth_required', 'failed']
  ]
  for (const [from, to] of illegal) t.equal(canTransition(from, to), false, `${from} -> ${to}`)
  for (const from of TERMINAL) {
    for (const to of TASK_STATES) t.equal(canTransition(from, to), false, `${from} -> ${to}`)
  }
})

t.test('terminal states are completed, canceled, failed and rejected', async t => {
  for (const state of TASK_STATES) {
    t.equal(isTerminal(state), (TERMINAL as readonly string[]).includes(state), state)
  }
  t.equal(isTerminal('working'), false)
})

t.test('settled states are the terminal ones plus input_required and auth_required', async t => {
  for (const state of TERMINAL) t.equal(isSettled(state), true, state)
  t.equal(isSettled('input_required'), true)
  t.equal(isSettled('auth_required'), true)
  t.equal(isSettled('submitted'), false)
  t.equal(isSettled('in_progress'), false)
})

t.test('normalizeState accepts both spellings and refuses unknown names', async t => {
  for (const state of TASK_STATES) t.equal(normalizeState(state), state)
  t.equal(normalizeState('working'), 'in_progress')
  t.equal(normalizeState('input-required'), 'input_required')
  t.equal(normalizeState('auth-required'), 'auth_required')
  t.equal(normalizeState('running'), undefined)
  t.equal(normalizeState('constructor'), undefined)
  t.equal(normalizeState('toString'), undefined)
})

t.test('stateName writes the a2a names only in the a2a dialect', async t => {
  t.equal(stateName('in_progress', 'a2a'), 'working')
  t.equal(stateName('input_required', 'a2a'), 'input-required')
  t.equal(stateName('auth_required', 'a2a'), 'auth-required')
  t.equal(stateName('completed', 'a2a'), 'completed')
  for (const state of TASK_STATES) t.equal(stateName(state, 'default'), state)
})

t.test('presentTask returns the stored object itself when nothing changes', async t => {
  const stored = task('in_progress')
  t.equal(presentTask(stored, 'default'), stored)
  t.equal(presentTask(stored, 'default', 3), stored)
  t.equal(presentTask(stored, 'default', 10), stored)
  const done = { ...task('completed'), metadata: { by: 'test' } }
  t.equal(presentTask(done, 'a2a'), done)
})

t.test('presentTask leaves an unset metadata out in the a2a dialect only (the v0.3.0 schema has it an object)', async t => {
  const done = task('completed')
  t.equal(done.metadata, null)
  const shown = presentTask(done, 'a2a')
  t.notOk('metadata' in shown)
  t.same({ ...shown, metadata: null }, done)
  t.equal(done.metadata, null, 'the stored task is untouched')
  t.equal(presentTask(done, 'default'), done)
})

t.test('presentTask renames the state in the a2a dialect without touching the stored task', async t => {
  const stored = task('in_progress')
  const shown = presentTask(stored, 'a2a')
  t.ok(shown !== stored)
  t.equal(shown.status.state, 'working')
  t.equal(shown.status.timestamp, stored.status.timestamp)
  t.equal(shown.history, stored.history)
  t.equal(stored.status.state, 'in_progress')
})

t.test('presentTask cuts the history to the last N entries', async t => {
  const stored = task('input_required', 5)
  const none = presentTask(stored, 'default', 0)
  t.same(none.history, [])
  t.equal(none.status, stored.status)
  const two = presentTask(stored, 'a2a', 2)
  t.same(two.history.map(m => m.messageId), ['m3', 'm4'])
  t.equal(two.status.state, 'input-required')
  t.equal(stored.history.length, 5)
  t.equal(stored.status.state, 'input_required')
})
