import t from 'tap'
import type { Message, Task } from '../../../schemas/task.js'
import { contextMessages, estimateTokens, resultText, taskMessages } from '../../../services/agent/openai-messages.js'

let n = 0
const user = (...parts: Message['parts']): Message => ({ kind: 'message', role: 'user', messageId: `u${++n}`, parts })
const agent = (...parts: Message['parts']): Message => ({ kind: 'message', role: 'agent', messageId: `a${++n}`, parts })
const txt = (text: string) => ({ kind: 'text' as const, text })
const callPart = (id: string, name: string, args = '{}') => ({ kind: 'data' as const, data: { tool_call: { id, name, arguments: args } } })
const resultPart = (id: string, name: string, outcome: Record<string, unknown>) => ({ kind: 'data' as const, data: { tool_result: { id, name, ...outcome } } })

function task (history: Message[], results: string[] = []): Task {
  return {
    id: 't',
    contextId: 'c',
    kind: 'task',
    status: { state: 'in_progress', timestamp: '' },
    artifacts: results.map((text, i) => ({ artifactId: `r${i}`, name: 'Agent-result', parts: [txt(text)] })),
    history,
    metadata: null
  }
}

t.test('tokens are estimated as characters / 4, rounded up', async t => {
  t.same(['', 'a', 'abcd', 'abcde'].map(estimateTokens), [0, 1, 1, 2])
})

t.test('the result text is the Agent-result artifacts, turns a blank line apart; other artifacts are not sent', async t => {
  const withOther = task([], ['one', 'two'])
  withOther.artifacts.push({ artifactId: 'x', name: 'chart', parts: [txt('no')] })
  t.equal(resultText(withOther), 'one\n\ntwo')
})

t.test('user text keeps data parts as JSON and leaves file parts out', async t => {
  const message = user(txt('see '), { kind: 'data', data: { a: 1 } }, { kind: 'file', file: { uri: 'https://x.example/f' } })
  t.same(taskMessages(task([message]), message), [{ role: 'user', content: 'see {"a":1}' }])
})

t.test('context exchanges: user messages then the answer, newest kept whole within the budget', async t => {
  const older = task([user(txt('aaaa'))], ['bbbb'])
  const asked = task([user(txt('cccc')), agent(callPart('q', 'ask_user')), user(txt('dddd'))])
  t.same(contextMessages([older, asked], 10), [
    { role: 'user', content: 'aaaa' }, { role: 'assistant', content: 'bbbb' },
    { role: 'user', content: 'cccc' }, { role: 'user', content: 'dddd' }
  ])
  t.same(contextMessages([older, asked], 3), [{ role: 'user', content: 'cccc' }, { role: 'user', content: 'dddd' }])
  t.same(contextMessages([older, asked], 1), [])
  t.same(contextMessages([], 100), [])
})

t.test('a task replays its calls and results; agent parts that are not tool records are left out', async t => {
  const first = user(txt('go'))
  const current = user(txt('and now?'))
  const history = [
    first,
    agent(txt('a note'), { kind: 'data', data: { other: true } }, callPart('a', 'status'), callPart('b', 'list_directory', '{"path":"."}')),
    agent(resultPart('a', 'status', { result: { status: 'ok' } })),
    agent(resultPart('b', 'list_directory', { error: { code: -32011, message: 'needs scope files:read' } })),
    current,
    user(txt('queued after'))
  ]
  t.same(taskMessages(task(history, ['done']), current), [
    { role: 'user', content: 'go' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'status', arguments: '{}' } },
        { id: 'b', type: 'function', function: { name: 'list_directory', arguments: '{"path":"."}' } }
      ]
    },
    { role: 'tool', tool_call_id: 'a', content: '{"result":{"status":"ok"}}' },
    { role: 'tool', tool_call_id: 'b', content: '{"error":{"code":-32011,"message":"needs scope files:read"}}' },
    { role: 'assistant', content: 'done' },
    { role: 'user', content: 'and now?' }
  ])
})

t.test('a message not in the history follows the whole history', async t => {
  const outside = user(txt('outside'))
  t.same(taskMessages(task([user(txt('in'))]), outside), [{ role: 'user', content: 'in' }, { role: 'user', content: 'outside' }])
})

t.test('the answer to a pending ask_user is its tool result, and earlier text joins the asking message', async t => {
  const answer = user(txt('src'))
  const history = [user(txt('list')), agent(callPart('q', 'ask_user', '{"question":"Which?"}')), answer]
  t.same(taskMessages(task(history, ['Let me ask.']), answer).slice(1), [
    { role: 'assistant', content: 'Let me ask.', tool_calls: [{ id: 'q', type: 'function', function: { name: 'ask_user', arguments: '{"question":"Which?"}' } }] },
    { role: 'tool', tool_call_id: 'q', content: 'src' }
  ])
})
