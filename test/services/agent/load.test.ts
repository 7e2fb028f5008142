import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import t from 'tap'
import type { Task } from '../../../schemas/task.js'
import type { AgentExecutor, ExecutionContext } from '../../../services/agent/executor.js'
import { loadExecutor } from '../../../services/agent/load.js'
import { ANONYMOUS } from '../../../services/auth/principal.js'
import { validateConfig } from '../../../services/config/validate.js'
import { InvalidPluginOptions } from '../../../services/kernel/errors.js'

const fixtures = fileURLToPath(new URL('../../fixtures/executors/', import.meta.url))

/** Calls an executor once, outside any task service, with `text` as the message. */
async function invoke (executor: AgentExecutor, text: string, opts: { aborted?: boolean } = {}): Promise<{ result: unknown, toolCalls: string[] }> {
  const toolCalls: string[] = []
  const controller = new AbortController()
  if (opts.aborted === true) controller.abort()
  const ctx: ExecutionContext = {
    task: {} as Task,
    message: { role: 'user', messageId: 'm1', parts: [{ kind: 'text', text }] },
    signal: controller.signal,
    principal: ANONYMOUS,
    tools: {
      available: () => [],
      call: async name => {
        toolCalls.push(name)
        return { ok: true }
      }
    },
    log: pino({ level: 'silent' })
  }
  return { result: await executor(ctx), toolCalls }
}

t.test('builtin is the built-in agent, with its tools', async t => {
  const agent = await loadExecutor('builtin', { cwd: fixtures, delayMs: 0 })
  const { result, toolCalls } = await invoke(agent, 'status')
  t.same(toolCalls, ['status'])
  t.match(result, { kind: 'artifact', name: 'Agent-result', parts: [{ kind: 'data', data: { ok: true } }] })
})

t.test('echo is the built-in agent without tools', async t => {
  const agent = await loadExecutor('echo', { cwd: fixtures, delayMs: 0 })
  const { result, toolCalls } = await invoke(agent, 'status')
  t.same(toolCalls, [])
  t.same(result, { kind: 'artifact', name: 'Agent-result', parts: [{ kind: 'text', text: 'status' }] })
})

t.test('the built-in agents get the configured delay', async t => {
  // An aborted signal ends a delayed agent before it answers; without a delay it answers at once.
  for (const spec of ['builtin', 'echo']) {
    const delayed = await loadExecutor(spec, { cwd: fixtures, delayMs: 50 })
    t.equal((await invoke(delayed, 'hi', { aborted: true })).result, undefined, spec)
    const prompt = await loadExecutor(spec, { cwd: fixtures, delayMs: 0 })
    t.match((await invoke(prompt, 'hi', { aborted: true })).result, { kind: 'artifact' }, spec)
  }
})

t.test('a module path is resolved against cwd and its default export used', async t => {
  const agent = await loadExecutor('./default-export.js', { cwd: fixtures, delayMs: 0 })
  t.equal((await invoke(agent, 'hi')).result, 'default: hi')
  const fromParent = await loadExecutor('./executors/default-export.js', { cwd: `${fixtures}/..`, delayMs: 0 })
  t.equal(fromParent, agent, 'the same module, by another relative path')
  const absolute = await loadExecutor(`${fixtures}default-export.js`, { cwd: '/', delayMs: 0 })
  t.equal(absolute, agent, 'an absolute path ignores cwd')
})

t.test('a module whose default export is no function may export executor instead', async t => {
  const agent = await loadExecutor('./named-export.js', { cwd: fixtures, delayMs: 0 })
  t.equal((await invoke(agent, 'hi')).result, 'named: hi')
})

t.test('a module without an executor function is refused', async t => {
  await t.rejects(loadExecutor('./no-executor.js', { cwd: fixtures, delayMs: 0 }), {
    code: 'A2A_ERR_INVALID_OPTIONS',
    message: 'Invalid option: agent.executor: ./no-executor.js does not export an AgentExecutor function'
  })
})

t.test('a module that cannot be loaded is refused, naming the spec and the reason', async t => {
  const missing = await loadExecutor('./missing.js', { cwd: fixtures, delayMs: 0 }).catch(err => err)
  t.ok(missing instanceof InvalidPluginOptions)
  t.match(missing, {
    code: 'A2A_ERR_INVALID_OPTIONS',
    message: /^Invalid option: agent\.executor: cannot load \.\/missing\.js: Cannot find module .*missing\.js/
  })
  t.ok(missing.cause instanceof Error, 'the import error is kept as the cause')
  await t.rejects(loadExecutor('./broken.js', { cwd: fixtures, delayMs: 0 }), {
    code: 'A2A_ERR_INVALID_OPTIONS',
    message: 'Invalid option: agent.executor: cannot load ./broken.js: broken on purpose'
  })
})

t.test('a package specifier is looked up from cwd', async t => {
  const cwd = t.testdir({
    node_modules: {
      'my-agent': {
        'package.json': JSON.stringify({ name: 'my-agent', type: 'module', main: 'agent.js' }),
        'agent.js': 'export default async () => "from my-agent"\n'
      }
    }
  })
  const agent = await loadExecutor('my-agent', { cwd, delayMs: 0 })
  t.equal((await invoke(agent, 'hi')).result, 'from my-agent')
})

t.test('a package not found from cwd is looked up from this package, as a dependency of the host app', async t => {
  // A directory with no node_modules above it: t.testdir would sit inside this project, which has them.
  const cwd = await mkdtemp(join(tmpdir(), 'a2a-load-'))
  t.teardown(() => rm(cwd, { recursive: true, force: true }))
  // pino is installed beside this package and its default export is a function, which is all the loader checks.
  const { pino: expected } = await import('pino')
  t.equal(await loadExecutor('pino', { cwd, delayMs: 0 }), expected)
  await t.rejects(loadExecutor('no-such-agent-package', { cwd, delayMs: 0 }), {
    code: 'A2A_ERR_INVALID_OPTIONS',
    message: /^Invalid option: agent\.executor: cannot load no-such-agent-package: Cannot find package 'no-such-agent-package'/
  })
})

t.test('openai is the OpenAI-compatible executor, on the schema defaults when no llm settings are given', async t => {
  const withDefaults = await loadExecutor('openai', { cwd: fixtures, delayMs: 0 })
  t.equal(withDefaults.name, 'openaiAgent')
  const llm = { ...validateConfig({}).agent.llm, base_url: 'http://127.0.0.1:1/v1' }
  t.equal((await loadExecutor('openai', { cwd: fixtures, delayMs: 0, llm })).name, 'openaiAgent')
})
