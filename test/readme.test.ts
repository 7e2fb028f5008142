/* eslint-disable no-template-curly-in-string -- the strings hold ${VAR} references on purpose */
// README.md cannot drift from the code: its configuration reference lists every key of the schema with the schema's
// default, and its signature-verifying snippet verifies what the server signs.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { ConfigSchema } from '../schemas/config.js'
import { signatureHeaders, signingKey } from '../services/push/signing.js'
import { configKeys } from './config-keys.js'

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

/** A default as the README writes it: `[a, b]`, `{k: [v]}`, `""`. */
function format (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(format).join(', ')}]`
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${k}: ${format(v)}`).join(', ')}}`
  return value === '' ? '""' : String(value)
}

/** The text between a `## ` heading and the next one. */
function section (heading: string): string {
  const start = README.indexOf(`\n## ${heading}\n`)
  if (start < 0) throw new Error(`README.md has no "## ${heading}" section`)
  const end = README.indexOf('\n## ', start + 1)
  return README.slice(start, end < 0 ? undefined : end)
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

const configuration = section('Configuration')
const documented = rows(configuration)
const keys = configKeys(ConfigSchema)
const TOP_LEVEL = Object.keys(ConfigSchema.properties)

t.test('the configuration reference has a row for every key of the schema', async t => {
  t.ok(keys.length > 60, `${keys.length} keys found in the schema`)
  const missing = keys.filter(k => !documented.has(k.path)).map(k => k.path)
  t.same(missing, [], 'README.md, ## Configuration: add a `| \\`key\\` | default | meaning |` row for each')
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

t.test('the README has the sections a user looks for', async t => {
  for (const heading of ['Quick start', 'Usage', 'Configuration', 'HTTP surface', 'Methods', 'Docker and compose', 'Testing', 'Benchmark']) {
    t.ok(README.includes(`\n## ${heading}\n`), heading)
  }
  for (const heading of ['Embedded: inside your Fastify app', 'Examples', 'Push notifications', 'Verifying a signature', 'Security', 'Errors']) {
    t.ok(new RegExp(`\\n###+ ${heading}\\n`).test(README), heading)
  }
  for (const file of ['examples/custom-executor.ts', 'examples/embedded-app.ts']) t.ok(README.includes(file), file)
})

t.test("the README's signature check accepts what the server signs, and nothing else", async t => {
  const start = README.indexOf('#### Verifying a signature')
  const code = /```js\n([\s\S]*?)```/.exec(README.slice(start))?.[1]
  t.ok(code?.includes('function verify'), 'the snippet defines verify')
  const file = join(t.testdir({}), 'verify.mjs')
  writeFileSync(file, `${code}\nexport { verify }\n`)
  const { verify } = await import(pathToFileURL(file).href)
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

t.test("the README's client snippets run as written: @a2a-js/sdk 1.x in v1.0, 0.3.x in v0.3 in either dialect", async t => {
  const { listen } = await import('./helper.js')
  const { url } = await listen(t)
  const { url: a2aUrl } = await listen(t, { config: { protocol: { dialect: 'a2a' } } })
  const section = README.slice(README.indexOf('### Using the official A2A clients'), README.indexOf('### OpenRPC'))
  t.match(section, /```yaml\nprotocol:\n {2}dialect: a2a\n```/, 'the setting the v0.3 clients need')
  const [v1, v03, v03Stream] = [...section.matchAll(/```js\n([\s\S]*?)```/g)].map(m => m[1])
  t.ok(v03Stream, 'three snippets')
  const at = (code: string, base: string) => code.replaceAll('http://127.0.0.1:8000', base)
  // The suite has 1.x installed as @a2a-js/sdk-v1 beside 0.3.x; a user of the snippet has it as @a2a-js/sdk.
  const dir = t.testdir({
    'v1.mjs': `${at(v1, url).replaceAll("'@a2a-js/sdk", "'@a2a-js/sdk-v1")}\nexport { task }\n`,
    'v03.mjs': `${at(v03, url)}\nexport { answer }\n`,
    'v03-a2a.mjs': `${at(v03, a2aUrl)}\nexport { answer }\n`,
    'v03-stream.mjs': at(v03Stream, a2aUrl)
  })
  const logged: unknown[][] = []
  const log = console.log
  console.log = (...args: unknown[]) => { logged.push(args) }
  try {
    const { task } = await import(pathToFileURL(join(dir, 'v1.mjs')).href)
    t.equal(task.status.state, 3, 'TASK_STATE_COMPLETED')
    const { answer } = await import(pathToFileURL(join(dir, 'v03.mjs')).href)
    t.equal(answer.result.status.state, 'completed')
    const { answer: a2aAnswer } = await import(pathToFileURL(join(dir, 'v03-a2a.mjs')).href)
    t.equal(a2aAnswer.result.status.state, 'completed')
    t.notOk('metadata' in a2aAnswer.result, 'no metadata: null in the a2a dialect')
    await import(pathToFileURL(join(dir, 'v03-stream.mjs')).href)
  } finally {
    console.log = log
  }
  t.same(logged, [[true, 'hello'], ['completed'], ['completed'], ['working', false], ['completed', true]])
})
