/* eslint-disable no-template-curly-in-string -- the strings hold ${VAR} references on purpose */
// The built CLI end to end: init → validate → card on one file, and push tried by hand with `serve` and
// `webhook-sink` (CONTRACT.md §1), each a real process over real HTTP.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse, parseDocument } from 'yaml'
import { buildAgentCard } from '../services/a2a/agent-card.js'
import { validateConfig } from '../services/config/load.js'
import { signatureHeaders, signingKey } from '../services/push/signing.js'
import { CLI, rpc, runChild, serve, spawnChild, userMessage } from './helper.js'

const SECRET = 'whsec_Y2xpLWZsb3dzLXNpZ25pbmctc2VjcmV0'

// The test's environment without what would change the config.
const ENV: Record<string, string | undefined> = { ...process.env }
for (const name of ['A2A_CONFIG', 'HOST', 'PORT', 'LOG_LEVEL', 'REDIS_URL', 'A2A_SIGNING_SECRET']) delete ENV[name]

interface Result { status: number | null, stdout: string, stderr: string }

// Each run's process group is killed at the end of the file at the latest (test/processes.ts).
async function run (cwd: string, args: string[], env: Record<string, string> = {}): Promise<Result> {
  const { status, stdout, stderr } = await runChild(t, process.execPath, [CLI, ...args], { cwd, env: { ...ENV, ...env } })
  return { status, stdout, stderr }
}

interface Sink {
  child: ChildProcess
  url: string
  exited: Promise<[number | null, string | null]>
  lines: () => string[]
  waitFor: (re: RegExp) => Promise<string>
}

/** `fastify-a2a webhook-sink` on a free port; killed at teardown. */
async function sink (t: Test, args: string[]): Promise<Sink> {
  const child = spawnChild(t, process.execPath, [CLI, 'webhook-sink', '--port', '0', ...args], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const lines = () => stdout.split('\n').filter(line => line !== '')
  const waitFor = async (re: RegExp): Promise<string> => {
    for (;;) {
      const line = lines().find(l => re.test(l))
      if (line !== undefined) return line
      if (child.exitCode !== null) throw new Error(`webhook-sink exited early: ${stderr}`)
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  }
  const [, url] = /listening on (\S+)/.exec(await waitFor(/^webhook sink listening on /)) as RegExpExecArray
  return { child, url, exited, lines, waitFor }
}

t.ok(existsSync(CLI), 'dist/cli.js exists (run `npm run build` first)')

t.test('init writes a file that validate accepts, that card reads, and whose edits validate reports by path', async t => {
  const dir = t.testdir({})
  t.equal((await run(dir, ['init', '-f', 'agent.yml'])).status, 0)
  const validated = await run(dir, ['validate'])
  t.equal(validated.status, 0)
  t.equal(validated.stdout, `ok: ${join(dir, 'agent.yml')}\n`)

  const card = await run(dir, ['card'])
  t.equal(card.status, 0)
  t.equal(card.stderr, '')
  const fromFile = validateConfig(parse(readFileSync(join(dir, 'agent.yml'), 'utf8')))
  t.same(JSON.parse(card.stdout), buildAgentCard(fromFile, { prefix: '/' }), 'card prints exactly the agent card of the file')
  t.equal(card.stdout, `${JSON.stringify(buildAgentCard(validateConfig({}), { prefix: '/' }), null, 2)}\n`, 'the template is the defaults')

  // Three mistakes in the written file, its comments kept: every one is reported, each with its key's path.
  const doc = parseDocument(readFileSync(join(dir, 'agent.yml'), 'utf8'))
  doc.setIn(['server', 'port'], 70000)
  doc.setIn(['protocol', 'dialect'], 'jsonrpc')
  doc.setIn(['push_notifications', 'config', 'retries'], 5)
  writeFileSync(join(dir, 'edited.yml'), String(doc))
  const bad = await run(dir, ['validate', '--config', 'edited.yml'])
  t.equal(bad.status, 1)
  t.equal(bad.stdout, '')
  t.same(bad.stderr.trim().split('\n').sort(), [
    'protocol.dialect: must be one of default, a2a (got "jsonrpc")',
    'push_notifications.config.retries: unknown key (did you mean push_notifications.config.max_retries?)',
    'server.port: must be <= 65535 (got 70000)'
  ])
  const badCard = await run(dir, ['card', '--config', 'edited.yml'])
  t.equal(badCard.status, 1)
  t.equal(badCard.stderr, bad.stderr, 'card reports the same problems')
})

t.test('card follows A2A_CONFIG and the environment substitution of the file', async t => {
  const dir = t.testdir({ 'mine.yml': 'agent:\n  name: ${AGENT_NAME:?set AGENT_NAME}\n  url: https://agent.example.com/a2a/\n' })
  const named = await run(dir, ['card'], { A2A_CONFIG: 'mine.yml', AGENT_NAME: 'Env Agent' })
  t.equal(named.status, 0)
  t.match(JSON.parse(named.stdout), { name: 'Env Agent', url: 'https://agent.example.com/a2a/' })
  const unnamed = await run(dir, ['card'], { A2A_CONFIG: 'mine.yml' })
  t.equal(unnamed.status, 1)
  t.equal(unnamed.stderr, 'agent.name: environment variable AGENT_NAME is not set: set AGENT_NAME\n')
})

t.test('webhook-sink checks signatures: valid, invalid (wrong secret, altered body, stale) and missing', async t => {
  const { url, lines, waitFor } = await sink(t, ['--host', '127.0.0.1', '-s', SECRET])
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/)
  const body = JSON.stringify({ id: 'task-9', kind: 'task', status: { state: 'completed' } })
  const now = Math.floor(Date.now() / 1000)
  const deliveries: Array<[string, Record<string, string>, string]> = [
    ['/valid', signatureHeaders(signingKey(SECRET), 'msg_valid', now, body), body],
    ['/wrong', signatureHeaders(signingKey('whsec_b3RoZXI='), 'msg_wrong', now, body), body],
    ['/altered', signatureHeaders(signingKey(SECRET), 'msg_altered', now, body), body.replace('completed', 'failed')],
    ['/stale', signatureHeaders(signingKey(SECRET), 'msg_stale', now - 3600, body), body],
    ['/unsigned', {}, body]
  ]
  for (const [path, headers, payload] of deliveries) {
    const res = await fetch(`${url.slice(0, -1)}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload })
    t.equal(res.status, 204, path)
  }
  await waitFor(/POST \/unsigned /)
  const [, ...printed] = lines()
  t.equal(printed.length, 5, 'one line per delivery')
  t.match(printed[0], / POST \/valid task=task-9 state=completed .* webhook-id=msg_valid signature=valid$/)
  t.match(printed[1], / POST \/wrong .* signature=invalid$/)
  t.match(printed[2], / POST \/altered task=task-9 state=failed .* signature=invalid$/)
  t.match(printed[3], / POST \/stale .* signature=invalid$/)
  t.match(printed[4], / POST \/unsigned .* signature=missing$/)
})

t.test('push by hand: serve signs each delivery and webhook-sink prints it with a valid signature', async t => {
  const dir = t.testdir({
    'agent.yml': [
      'protocol:',
      '  dialect: a2a',
      'push_notifications:',
      '  config:',
      '    allowed_networks: [127.0.0.0/8]',
      '    signing_secret: "${A2A_SIGNING_SECRET:-}"',
      ''
    ].join('\n')
  })
  const receiver = await sink(t, ['--secret', SECRET])
  const server = await serve(t, ['--config', join(dir, 'agent.yml')], { A2A_SIGNING_SECRET: SECRET })
  const res = await fetch(`${server.url}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(rpc('message/send', {
      message: userMessage('push me'),
      configuration: { pushNotificationConfig: { url: `${receiver.url}hook`, token: 'tok-SECRET' } }
    }))
  })
  const task = ((await res.json()) as any).result
  t.equal(task.status.state, 'completed')
  const done = await receiver.waitFor(/ state=completed /)
  const working = await receiver.waitFor(/ state=working /)
  for (const line of [working, done]) {
    t.match(line, new RegExp(` POST /hook task=${task.id} state=\\w+ x-a2a-notification-token=set authorization=unset x-api-key=unset webhook-id=\\S+ signature=valid$`))
  }
  t.notMatch(receiver.lines().join('\n'), 'tok-SECRET', 'the token is never printed')
  server.child.kill('SIGTERM')
  receiver.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  t.same(await receiver.exited, [0, null])
})
