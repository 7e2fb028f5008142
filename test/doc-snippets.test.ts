// The docs' runnable blocks (test/doc-snippets.ts): every block a reader would run is marked, every block marked to
// run is run by some test, and the ones that need a live server, a shell and the command run here as written, with
// only their addresses changed: the quick start's curl calls, two instances on one Redis, and the clients' recipes
// for a prefixed mount that asks for an API key.
import { chmodSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { freePort } from '../scripts/redis-server.js'
import { RUNNABLE_LANGUAGES, docSnippets, parseSnippets, runSnippet, snippet } from './doc-snippets.js'
import { CLI, listen, listenGrpc, postgresSchema, privateRedis, runChild, serve, testDatabase, type Teardown } from './helper.js'

const ROOT = new URL('../', import.meta.url)

/** The text of every test source (which names the snippets it runs). */
function testSources (): string {
  const dir = new URL('test/', ROOT)
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter(file => file.endsWith('.ts') && !file.startsWith('fixtures'))
    .map(file => readFileSync(new URL(file, dir), 'utf8'))
    .join('\n')
}

t.test('every block of the docs that a reader would run is marked: run by a test that names it, or not run and why', async t => {
  const blocks = docSnippets()
  const runnable = blocks.filter(s => RUNNABLE_LANGUAGES.includes(s.lang))
  t.ok(runnable.length > 20, `${runnable.length} runnable blocks`)
  for (const s of runnable) t.ok(s.run !== undefined || s.notRun !== undefined, `${s.file}:${s.line} (${s.lang}) has <!-- run: NAME --> or <!-- not run: REASON -->`)
  for (const s of blocks.filter(s => s.run !== undefined)) t.ok(RUNNABLE_LANGUAGES.includes(s.lang), `${s.file}:${s.line}: marked to run, and a ${s.lang} block can be run`)
  const names = blocks.flatMap(s => s.run ?? [])
  t.same(names.filter((name, i) => names.indexOf(name) !== i), [], 'each name marks one block')
  const sources = testSources()
  for (const name of names) t.ok(sources.includes(`snippet('${name}')`), `a test runs ${name} (snippet('${name}'))`)
  t.ok(names.length >= 12, `${names.length} blocks run`)
})

t.test('the marker check sees a missing marker and reads both kinds', async t => {
  const parsed = parseSnippets('x.md', 'Text\n\n```sh\nls\n```\n<!-- run: a -->\n```js\n1\n```\n<!-- not run: why -->\n```ts\n2\n```\n')
  t.same(parsed.map(s => [s.line, s.lang, s.run, s.notRun, s.code]), [
    [3, 'sh', undefined, undefined, 'ls\n'],
    [7, 'js', 'a', undefined, '1\n'],
    [11, 'ts', undefined, 'why', '2\n']
  ])
  t.throws(() => snippet('no-such-block'), /no block of the docs is marked <!-- run: no-such-block -->/)
})

/**
 * A folder to run a shell block in, as a reader would in a project with the package installed: `npx fastify-a2a`
 * finds the built CLI in its node_modules/.bin.
 */
function project (t: Test): string {
  const dir = t.testdir({ 'package.json': JSON.stringify({ name: 'docs-reader', version: '1.0.0', private: true }) })
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true })
  const bin = join(dir, 'node_modules', '.bin', 'fastify-a2a')
  writeFileSync(bin, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`)
  chmodSync(bin, 0o755)
  return dir
}

/** Runs a shell block with bash in `dir` (its process group killed when it ends or the test does). */
async function bash (t: Teardown, dir: string, code: string) {
  // The servers a block starts record no coverage (the in-process tests measure the library).
  const env = { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', NODE_OPTIONS: '' }
  return await runChild(t, 'bash', ['-e', '-c', code], { cwd: dir, env, timeoutMs: 90_000 })
}

t.test("the README's quick start: health, the card and a message/send with curl", async t => {
  const dir = project(t)
  const { url } = await serve(t, [])
  const run = await bash(t, dir, snippet('quickstart-curl').replaceAll('http://127.0.0.1:8000', url))
  t.equal(run.status, 0, run.stderr)
  t.match(run.stdout, /"status":"healthy"/)
  t.match(run.stdout, /"name":"Echo Agent"/)
  t.match(run.stdout, /"state":"completed"/)
  t.match(run.stdout, /"text":"hello"/)
})

/**
 * A scale-out recipe (`recipe`, a snippet's text) run as written, with the store's URL `from` in it replaced by `to`
 * and its ports by free ones: a task made on one instance is read on the other, then both drain on SIGTERM.
 */
async function twoInstances (t: Test, recipe: string, from: string, to: string): Promise<void> {
  const [a, b] = [await freePort(), await freePort()]
  const code = recipe
    .replaceAll(from, to)
    .replaceAll('8001', String(a))
    .replaceAll('8002', String(b))
  const dir = project(t)
  const run = await bash(t, dir, code)
  t.equal(run.status, 0, run.stderr)
  // The block ends with its `wait`: both servers took the SIGTERM and exited (a server left running would hold the
  // shell's stderr open until the timeout).
  t.notOk(run.timedOut, 'both servers exited on their own')
  const id = /^task (\S+)$/m.exec(run.stdout)?.[1]
  t.ok(id, 'the send answered a task id')
  const got = JSON.parse(run.stdout.trim().split('\n').pop() ?? '')
  t.match(got, { result: { id, status: { state: 'completed' } } }, 'the other instance reads it')
  for (const log of ['a.log', 'b.log']) {
    const lines = readFileSync(join(dir, log), 'utf8').trim().split('\n').map(line => JSON.parse(line))
    t.ok(lines.some(line => line.msg === 'agent serving'), `${log}: served`)
    t.ok(lines.some(line => line.msg === 'shutting down' && line.signal === 'SIGTERM'), `${log}: the server took the SIGTERM`)
  }
}

t.test('scale-out: two instances on one Redis, a task made on one is read on the other, then both drain', async t => {
  await twoInstances(t, snippet('two-instances-redis'), 'redis://127.0.0.1:6379', (await privateRedis(t)).url)
})

t.test('scale-out: two instances on one PostgreSQL, a task made on one is read on the other, then both drain', async t => {
  await twoInstances(t, snippet('two-instances-postgres'), 'postgres://postgres@127.0.0.1:5432/postgres', `"${await postgresSchema(t, await testDatabase(t))}"`)
})

const API_KEY = 'docs-recipe-key'
const secured = {
  security: {
    enabled: true,
    auth: { api_key: { keys: [{ key: API_KEY, scopes: ['agent:admin'], id: 'docs' }] } },
    scope_hierarchy: { 'agent:admin': ['agent:read', 'agent:execute'] }
  }
}

/** A JS block's `console.log` calls, run as a module of its own in the test's folder with `env` set meanwhile. */
async function runModule (t: Test, code: string, env: Record<string, string>): Promise<unknown[][]> {
  return (await runSnippet(join(t.testdirName, 'modules'), code, env)).logged
}

/** The 1.x recipe as the suite has the package (`@a2a-js/sdk-v1`), at `base`, with `options` added to the factory's. */
function v1Recipe (base: string, options = '', imports = ''): string {
  return imports + snippet('client-v1-prefix-api-key')
    .replaceAll("'@a2a-js/sdk", "'@a2a-js/sdk-v1")
    .replaceAll('http://127.0.0.1:8000', base)
    .replace('clientConfig: { interceptors: [apiKey] }', `clientConfig: { interceptors: [apiKey] }${options}`)
}

t.test('the v1.0 client recipe reaches a prefixed mount that asks for an API key, over JSON-RPC and HTTP+JSON', async t => {
  const { url } = await listen(t, { prefix: '/agent', config: secured })
  t.same(await runModule(t, v1Recipe(url), { A2A_API_KEY: API_KEY }), [[3]], 'TASK_STATE_COMPLETED over JSON-RPC')
  t.same(await runModule(t, v1Recipe(url, ", preferredTransports: ['HTTP+JSON']"), { A2A_API_KEY: API_KEY }), [[3]], 'and over HTTP+JSON')
  await t.rejects(runModule(t, v1Recipe(url), { A2A_API_KEY: 'wrong' }), 'a wrong key is refused')
  await t.rejects(runModule(t, v1Recipe(url).replace("/agent/')", "/agent')"), { A2A_API_KEY: API_KEY }), 'without the slash the client looks for the card at the root')
})

t.test('the v1.0 client recipe reaches the same server over gRPC, the key in the metadata', async t => {
  const { url } = await listenGrpc(t, { prefix: '/agent', config: { ...secured, protocol: { grpc: { advertised_url: '' } } } })
  const grpc = ", transports: [new GrpcTransportFactory()], preferredTransports: ['GRPC']"
  const code = v1Recipe(url, grpc, "import { GrpcTransportFactory } from '@a2a-js/sdk-v1/client/grpc'\n")
  t.same(await runModule(t, code, { A2A_API_KEY: API_KEY }), [[3]], 'TASK_STATE_COMPLETED over gRPC')
  await t.rejects(runModule(t, code, { A2A_API_KEY: 'wrong' }), 'a wrong key is refused')
})

t.test('the v0.3 client recipe reaches a prefixed mount that asks for an API key', async t => {
  const { url } = await listen(t, { prefix: '/agent', config: { ...secured, protocol: { dialect: 'a2a' } } })
  const code = snippet('client-v03-prefix-api-key').replaceAll('http://127.0.0.1:8000', url)
  t.same(await runModule(t, code, { A2A_API_KEY: API_KEY }), [['completed']])
  // Refused, the client returns the JSON-RPC error answer: it has no result to read a state from.
  await t.rejects(runModule(t, code, { A2A_API_KEY: 'wrong' }), /reading 'status'/, 'a wrong key is refused')
})

t.test("the protocol page's gRPC client follows the card's default gRPC URL", async t => {
  const { url } = await listenGrpc(t, { config: { protocol: { grpc: { advertised_url: '' } } } })
  const code = snippet('client-grpc').replaceAll("'@a2a-js/sdk", "'@a2a-js/sdk-v1").replaceAll('http://127.0.0.1:8000', url)
  t.same(await runModule(t, code, {}), [['grpc', 'TASK_STATE_COMPLETED']])
})
