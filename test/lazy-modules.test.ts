// What the package's own modules load only when a configuration uses them (docs/architecture.md, "What loads when"),
// seen from a server of the build: the Redis stores, the YAML parser, the `init` template, the OpenAI executor, the
// console's page and the OpenRPC and OpenAPI generators.
// test/lazy-imports.test.ts checks the packages in this process; our modules are ES modules, which leave no cache to
// read, so a child process reports every module it resolves (test/fixtures/processes/modules-loaded.mjs).
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { runChild } from './processes.js'

const FIXTURE = fileURLToPath(new URL('./fixtures/processes/modules-loaded.mjs', import.meta.url))
const LAZY = {
  'the Redis task store': /\/dist\/services\/tasks\/redis-store\.js$/,
  'the Redis event bus': /\/dist\/services\/tasks\/redis-event-bus\.js$/,
  'the Redis push config store': /\/dist\/services\/push\/redis-store\.js$/,
  'the YAML parser': /\/node_modules\/yaml\//,
  'the init template': /\/dist\/services\/config\/template\.js$/,
  'the OpenAI executor': /\/dist\/services\/agent\/openai\.js$/,
  "the console's page": /\/dist\/services\/console\/page\.js$/,
  'the OpenRPC generator': /\/dist\/services\/json-rpc\/openrpc\.js$/,
  'the OpenAPI generator': /\/dist\/services\/rest\/openapi\.js$/
}

async function loaded (t: Test, file: string, mode?: 'nosend' | 'pages'): Promise<string[]> {
  const run = await runChild(t, process.execPath, [FIXTURE, file, ...(mode === undefined ? [] : [mode])], { timeoutMs: 60_000 })
  t.equal(run.status, 0, run.stderr)
  const urls = run.stdout.split('\n')
  t.ok(urls.some(url => url.endsWith('/dist/server.js')), 'the hook saw the server load')
  return Object.entries(LAZY).filter(([, pattern]) => urls.some(url => pattern.test(url))).map(([name]) => name)
}

t.test('the server on the built-in defaults, with no config file, loads none of them through a send', async t => {
  t.same(await loaded(t, ''), [])
})

t.test('a config file brings the YAML parser; the OpenAI executor comes with its config', async t => {
  t.same(await loaded(t, 'agent:\n  name: Lazy\n  executor: openai\n  llm:\n    api_key: sk-test\n', 'nosend'), ['the YAML parser', 'the OpenAI executor'])
})

t.test('the console and the service documents load their modules when first asked for', async t => {
  t.same(await loaded(t, '', 'pages'), ["the console's page", 'the OpenRPC generator', 'the OpenAPI generator'])
})
