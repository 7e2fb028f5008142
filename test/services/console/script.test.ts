// The console's browser script keeps copies of what the server knows (state spellings, method names, the built-in
// agent's commands); these tests hold the copies to the originals.
import t from 'tap'
import { TASK_STATES, type Task } from '../../../schemas/task.js'
import { V10_STATES } from '../../../services/a2a/codec-v10.js'
import { stateName } from '../../../services/a2a/codec-v03.js'
import { V10_METHODS } from '../../../services/a2a/version.js'
import { BUILTIN_SKILL } from '../../../services/a2a/agent-card.js'
import { createBuiltinAgent } from '../../../services/agent/builtin.js'
import type { ExecutionContext, ExecutorEvent } from '../../../services/agent/executor.js'
import { TOOL_METHODS } from '../../../services/json-rpc/agent-tools.js'
import { consolePage } from '../../../services/console/page.js'
import { BUILTIN_HINTS, BUILTIN_SKILL_ID } from '../../../services/console/hints.js'
import { SCRIPT_CORE } from '../../../services/console/script.js'

/** A `const NAME = {...}` object literal of the script, written as JSON there so that it parses here. */
function literal (name: string): any {
  const m = new RegExp(`\\nconst ${name} = (\\{.*\\})\\n`).exec(SCRIPT_CORE)
  if (m === null) throw new Error(`no const ${name} in the script`)
  return JSON.parse(m[1])
}

t.test('the script spells states as the v1.0 codec and the v0.3 a2a dialect do', async t => {
  t.same(literal('V10_STATES'), V10_STATES)
  const a2a = literal('A2A_NAMES')
  for (const state of TASK_STATES) t.equal(a2a[state] ?? state, stateName(state, 'a2a'), state)
})

t.test('the script calls v1.0 methods by their v1.0 names', async t => {
  const methods = /\n {2}'1\.0': (\{[^\n]*\}),\n/.exec(SCRIPT_CORE)?.[1] as string
  const names = [...methods.matchAll(/: '([A-Za-z]+)'/g)].map(m => m[1])
  t.equal(names.length, 6)
  for (const name of names) t.ok(V10_METHODS.has(name), name)
})

/** What the built-in agent does with a message: the tool it calls, if any, and what it answers. */
async function run (text: string): Promise<{ tool: string | null, event: ExecutorEvent | undefined }> {
  let tool: string | null = null
  const ctx = {
    message: { kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'text', text }] },
    signal: new AbortController().signal,
    tools: {
      available: () => [...TOOL_METHODS],
      call: async (name: string) => { tool = name; return { ok: true } }
    }
  } as unknown as ExecutionContext & { task: Task }
  const event = await createBuiltinAgent()(ctx) as ExecutorEvent | undefined
  return { tool, event }
}

t.test('the hints offer every tool of the built-in agent, each as a message that runs it, and an echo', async t => {
  t.equal(BUILTIN_SKILL_ID, BUILTIN_SKILL.id)
  const ran: string[] = []
  for (const hint of BUILTIN_HINTS) {
    const { tool, event } = await run(hint.text)
    if (tool !== null) ran.push(tool)
    else t.match(event, { kind: 'artifact', parts: [{ kind: 'text', text: hint.text }] }, `${hint.text} is echoed`)
    t.ok(hint.title.length > 0)
  }
  t.same(ran.sort(), [...TOOL_METHODS].sort(), 'each tool once')
  t.same(JSON.parse(/\nconst BUILTIN_HINTS = (\[.*\])\n/.exec(consolePage('n', { dialect: 'default' }))?.[1] as string), BUILTIN_HINTS,
    'the page carries them')
})

t.test('the page tells the script the v0.3 dialect', async t => {
  t.match(consolePage('n', { dialect: 'a2a' }), '<html lang="en" data-dialect="a2a">')
  t.match(consolePage('n', { dialect: 'default' }), '<html lang="en" data-dialect="default">')
})
