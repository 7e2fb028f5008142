/* eslint-disable no-template-curly-in-string -- the strings hold ${VAR} references on purpose */
// The docs cannot drift from the code: the configuration reference lists every key of the schema with the schema's
// default, the signature-verifying snippet verifies what the server signs, the client snippets run, and every
// relative link and anchor between the README and docs/ resolves.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import t from 'tap'
import { ConfigSchema } from '../schemas/config.js'
import { signatureHeaders, signingKey } from '../services/push/signing.js'
import { configKeys } from './config-keys.js'
import { runSnippet, snippet } from './doc-snippets.js'

const read = (path: string): string => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8')
const README = read('README.md')
const PAGES = readdirSync(new URL('../docs/', import.meta.url)).filter(name => name.endsWith('.md')).sort()

/** A default as the README writes it: `[a, b]`, `{k: [v]}`, `""`. */
function format (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(format).join(', ')}]`
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${k}: ${format(v)}`).join(', ')}}`
  return value === '' ? '""' : String(value)
}

/** The rows of the configuration tables: key → [default cell, the whole row]. */
function rows (text: string): Map<string, { def: string, row: string }> {
  const out = new Map<string, { def: string, row: string }>()
  for (const row of text.split('\n').filter(line => line.startsWith('| `'))) {
    const [key, def] = row.split(' | ').map(cell => cell.replace(/^\|\s*/, '').replaceAll('`', '').trim())
    out.set(key, { def, row })
  }
  return out
}

const configuration = read('docs/configuration.md')
const documented = rows(configuration)
const keys = configKeys(ConfigSchema)
const TOP_LEVEL = Object.keys(ConfigSchema.properties)

t.test('the configuration reference has a row for every key of the schema', async t => {
  t.ok(keys.length > 60, `${keys.length} keys found in the schema`)
  const missing = keys.filter(k => !documented.has(k.path)).map(k => k.path)
  t.same(missing, [], 'docs/configuration.md: add a `| \\`key\\` | default | meaning |` row for each')
})

t.test('the configuration reference has no row for a key the schema does not have', async t => {
  const known = new Set(keys.map(k => k.path))
  const stale = [...documented.keys()].filter(key => TOP_LEVEL.includes(key.split('.')[0]) && !known.has(key))
  t.same(stale, [], 'rows of keys that no longer exist')
})

t.test('each row shows the schema default', async t => {
  for (const { path, schema } of keys) {
    const row = documented.get(path)
    // A map's row (`services.<name>`) documents one entry, which has no default.
    if (row === undefined || schema.default === undefined || path.endsWith('.<name>')) continue
    const def = schema.default
    // Long texts (the built-in agent's description) are described rather than quoted.
    if (typeof def === 'string' && def.length > 40) continue
    if (typeof def === 'number') t.equal(Number(row.def), def, path)
    else t.equal(row.def, format(def), path)
  }
})

t.test('each list or map of objects names every key of its items', async t => {
  for (const { path, itemKeys } of keys) {
    const row = documented.get(path)
    if (row === undefined || itemKeys === undefined) continue
    const absent = itemKeys.filter(key => !new RegExp(`\\b${key}\\b`).test(row.row))
    t.same(absent, [], path)
  }
})

t.test('the configuration section gives the environment form of the config', async t => {
  for (const name of ['HOST', 'PORT', 'LOG_LEVEL', 'REDIS_URL', 'A2A_CONFIG', '${VAR}', '${VAR:default}', '${VAR:-default}', '${VAR:?message}']) {
    t.ok(configuration.includes(`\`${name}\``), name)
  }
  t.match(documented.get('server.host')?.row, /env `HOST`/)
  t.match(documented.get('server.port')?.row, /env `PORT`/)
  t.match(documented.get('server.log_level')?.row, /env `LOG_LEVEL`/)
  t.match(documented.get('services.<name>')?.row, /env `REDIS_URL`/)
})

t.test('the README starts a newcomer off and links every page of docs/; the pages have the sections a user looks for', async t => {
  t.ok(README.split('\n').length < 400, `README.md is ${README.split('\n').length} lines`)
  for (const heading of ['Quick start', 'Documentation', 'Compatibility', 'Architecture']) t.ok(README.includes(`\n## ${heading}\n`), heading)
  for (const page of PAGES) t.ok(README.includes(`](docs/${page}`), `README links docs/${page}`)
  const sections: Record<string, string[]> = {
    'getting-started.md': ['Usage', 'Standalone: the `fastify-a2a` command'],
    'embedding.md': ['Embedded: inside your Fastify app', 'The executor interface', 'Examples'],
    'configuration.md': ['Configuration'],
    'operations.md': ['HTTP surface', 'The agent card', 'Metrics', 'Reliability'],
    'protocol.md': ['Methods', 'A2A v1.0 methods', 'The gRPC binding', 'Streaming (`message/stream`, `tasks/resubscribe`)', 'Task states', 'Errors', 'Decisions where the contract is silent'],
    'push-notifications.md': ['Push notifications', 'Verifying a signature'],
    'security.md': ['Security'],
    'deploy.md': ['Docker and compose'],
    'testing.md': ['Testing'],
    'benchmarks.md': ['Benchmark']
  }
  for (const [page, headings] of Object.entries(sections)) {
    const text = read(`docs/${page}`)
    for (const heading of headings) t.ok(new RegExp(`(^|\\n)#+ ${heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`).test(text), `${page}: ${heading}`)
  }
  const embedding = read('docs/embedding.md')
  for (const file of ['examples/custom-executor.ts', 'examples/embedded-app.ts']) t.ok(embedding.includes(file), file)
})

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2. */
function anchorsOf (text: string): Set<string> {
  const out = new Set<string>()
  const seen = new Map<string, number>()
  let code = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) code = !code
    const m = code ? null : /^#{1,6}\s+(.*)$/.exec(line)
    if (m === null) continue
    const slug = m[1].trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replaceAll(' ', '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    out.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return out
}

/** The relative links of a Markdown text, outside code blocks. */
function linksOf (text: string): string[] {
  const out: string[] = []
  let code = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) code = !code
    if (!code) for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1])) out.push(m[1])
  }
  return out
}

t.test('every relative link and anchor of the README and docs/ resolves, and none points outside the repository', async t => {
  const files = ['README.md', 'BENCHMARKS.md', 'RELIABILITY.md', ...PAGES.map(page => `docs/${page}`)]
  let checked = 0
  for (const file of files) {
    const text = read(file)
    t.notMatch(text, /CONTRACT\.md|\.\.\/shared\//, `${file} cites no file a user does not have`)
    for (const link of linksOf(text)) {
      const [path, anchor] = link.split('#')
      const target = path === '' ? file : normalize(join(dirname(file), path))
      t.ok(!target.startsWith('..') && existsSync(new URL(`../${target}`, import.meta.url)), `${file}: ${link} exists`)
      if (anchor !== undefined && target.endsWith('.md')) t.ok(anchorsOf(read(target)).has(anchor), `${file}: ${link} names a heading`)
      checked++
    }
  }
  t.ok(checked > 40, `${checked} links checked`)
})

t.test('the link check fails where it should: a missing heading, a missing file', async t => {
  t.notOk(anchorsOf('# Title\n## A `code` part\n').has('missing'))
  t.ok(anchorsOf('# Title\n## A `code` part (and more)\n').has('a-code-part-and-more'))
  t.ok(anchorsOf('## Same\n## Same\n').has('same-1'))
  t.same(linksOf('[a](x.md#y) [b](https://e.org)\n```\n[d](w)\n```\n[e](../f.md)'), ['x.md#y', '../f.md'])
})

t.test("the docs' signature check accepts what the server signs, and nothing else", async t => {
  const code = snippet('verify-signature')
  t.ok(code.includes('function verify'), 'the snippet defines verify')
  const { verify } = (await runSnippet(join(t.testdirName, 'modules'), `${code}\nexport { verify }\n`)).exports
  const body = JSON.stringify({ id: 'task-1', kind: 'task', status: { state: 'completed' } })
  const now = Math.floor(Date.now() / 1000)
  for (const secret of ['whsec_cmVhZG1lLXNlY3JldA==', 'a plain secret']) {
    const headers = signatureHeaders(signingKey(secret), 'msg_1', now, body)
    t.equal(verify(secret, headers, body), true, `a signed delivery verifies (${secret})`)
    t.equal(verify(secret, { ...headers, 'webhook-signature': `v1,bogus ${headers['webhook-signature']}` }, body), true, 'one good signature of several is enough')
    t.equal(verify(secret, headers, body.replace('completed', 'failed')), false, 'an altered body does not')
    t.equal(verify('whsec_b3RoZXI=', headers, body), false, 'another secret does not')
    t.equal(verify(secret, signatureHeaders(signingKey(secret), 'msg_1', now - 3600, body), body), false, 'a stale timestamp does not')
  }
})

t.test("the docs' client snippets run as written: @a2a-js/sdk 1.x in v1.0, 0.3.x in v0.3 in either dialect", async t => {
  const { listen } = await import('./helper.js')
  const { url } = await listen(t)
  const { url: a2aUrl } = await listen(t, { config: { protocol: { dialect: 'a2a' } } })
  const section = read('docs/clients.md')
  t.match(section, /```yaml\nprotocol:\n {2}dialect: a2a\n```/, 'the setting the v0.3 clients need')
  const [v1, v03, v03Stream] = [snippet('client-v1'), snippet('client-v03'), snippet('client-v03-stream')]
  const at = (code: string, base: string) => code.replaceAll('http://127.0.0.1:8000', base)
  // The suite has 1.x installed as @a2a-js/sdk-v1 beside 0.3.x; a user of the snippet has it as @a2a-js/sdk.
  const dir = join(t.testdirName, 'modules')
  const v1Run = await runSnippet(dir, `${at(v1, url).replaceAll("'@a2a-js/sdk", "'@a2a-js/sdk-v1")}\nexport { task }\n`)
  t.equal(v1Run.exports.task.status.state, 3, 'TASK_STATE_COMPLETED')
  const v03Run = await runSnippet(dir, `${at(v03, url)}\nexport { answer }\n`)
  t.equal(v03Run.exports.answer.result.status.state, 'completed')
  const a2aRun = await runSnippet(dir, `${at(v03, a2aUrl)}\nexport { answer }\n`)
  t.equal(a2aRun.exports.answer.result.status.state, 'completed')
  t.notOk('metadata' in a2aRun.exports.answer.result, 'no metadata: null in the a2a dialect')
  const streamRun = await runSnippet(dir, at(v03Stream, a2aUrl))
  const logged = [v1Run, v03Run, a2aRun, streamRun].flatMap(run => run.logged)
  t.same(logged, [[true, 'hello'], ['completed'], ['completed'], ['working', false], ['completed', true]])
})
