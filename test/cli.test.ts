import { once } from 'node:events'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { initTemplate } from '../services/config/template.js'
import { runChild, spawnChild } from './processes.js'

// The build output: `npm test` builds before running tap.
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))
const PACKAGE = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))

// The test's own environment (tap's coverage settings included), without what would change the config.
const ENV = { ...process.env }
for (const name of ['A2A_CONFIG', 'HOST', 'PORT', 'LOG_LEVEL', 'REDIS_URL']) delete ENV[name]

interface Result { status: number | null, stdout: string, stderr: string }

// Runs the CLI; never rejects, a non-zero exit is in `status`.
// Each run's process group is killed at the end of the file at the latest (test/processes.ts).
async function run (cwd: string, ...args: string[]): Promise<Result> {
  const { status, stdout, stderr } = await runChild(t, process.execPath, [CLI, ...args], { cwd, env: ENV })
  return { status, stdout, stderr }
}

t.ok(existsSync(CLI), 'dist/cli.js exists (run `npm run build` first)')

t.test('--help and -h print the usage and exit 0', async t => {
  const dir = t.testdir({})
  for (const res of await Promise.all([run(dir, '--help'), run(dir, '-h')])) {
    t.equal(res.status, 0)
    t.match(res.stdout, /^Usage: fastify-a2a <command>/)
    t.match(res.stdout, /serve[\s\S]*validate[\s\S]*card[\s\S]*init[\s\S]*migrate[\s\S]*webhook-sink/)
    t.equal(res.stderr, '')
  }
})

t.test('every command prints its own usage with --help', async t => {
  const dir = t.testdir({})
  const commands = ['serve', 'validate', 'card', 'init', 'migrate', 'webhook-sink']
  const results = await Promise.all([...commands.map(c => run(dir, c, '--help')), run(dir, 'validate', '-h')])
  for (const [i, res] of results.entries()) {
    const command = commands[i] ?? 'validate'
    t.equal(res.status, 0, command)
    t.match(res.stdout, `Usage: fastify-a2a ${command} `)
  }
  t.match(results[0].stdout, /--host H[\s\S]*--port N/)
  t.match(results[3].stdout, /--force/)
  t.match(results[4].stdout, /--dry-run/)
  t.match(results[5].stdout, /--host H[\s\S]*--port N[\s\S]*--secret S/)
})

t.test('--version prints the package version', async t => {
  const res = await run(t.testdir({}), '--version')
  t.equal(res.status, 0)
  t.equal(res.stdout, `${PACKAGE.version}\n`)
})

t.test('an unknown or missing command prints the usage on stderr and exits 2', async t => {
  const dir = t.testdir({})
  const [unknown, missing, inherited] = await Promise.all([run(dir, 'bogus'), run(dir), run(dir, 'toString')])
  t.equal(unknown.status, 2)
  t.equal(unknown.stdout, '')
  t.match(unknown.stderr, 'unknown command "bogus"')
  t.match(unknown.stderr, 'Usage: fastify-a2a <command>')
  t.equal(missing.status, 2)
  t.match(missing.stderr, 'no command given')
  t.equal(inherited.status, 2)
})

t.test('an unknown flag or a stray argument prints the command usage on stderr and exits 2', async t => {
  const dir = t.testdir({})
  const [flag, positional, port] = await Promise.all([
    run(dir, 'validate', '--bogus'),
    run(dir, 'card', 'extra'),
    run(dir, 'serve', '--port', 'eighty')
  ])
  t.equal(flag.status, 2)
  t.match(flag.stderr, '--bogus')
  t.match(flag.stderr, 'Usage: fastify-a2a validate')
  t.equal(positional.status, 2)
  t.match(positional.stderr, 'Usage: fastify-a2a card')
  t.equal(port.status, 2)
  t.match(port.stderr, '--port must be a whole number, not "eighty"')
})

t.test('validate with no config file accepts the built-in defaults', async t => {
  const res = await run(t.testdir({}), 'validate')
  t.equal(res.status, 0)
  t.equal(res.stdout, 'ok: built-in defaults\n')
  t.equal(res.stderr, '')
})

t.test('validate finds ./agent.yml and takes --config', async t => {
  const dir = t.testdir({ 'agent.yml': 'agent:\n  name: Local\n', 'other.yml': 'server:\n  port: 9000\n' })
  const [local, long, short] = await Promise.all([
    run(dir, 'validate'),
    run(dir, 'validate', '--config', 'other.yml'),
    run(dir, 'validate', '-c', 'other.yml')
  ])
  t.equal(local.stdout, `ok: ${join(dir, 'agent.yml')}\n`)
  t.equal(long.stdout, `ok: ${join(dir, 'other.yml')}\n`)
  t.equal(short.stdout, `ok: ${join(dir, 'other.yml')}\n`)
})

t.test('validate prints every problem with its path on stderr and exits 1', async t => {
  const dir = t.testdir({
    'bad.yml': 'server:\n  port: eighty\npush_notifications:\n  bogus: 1\n  config:\n    timeout: 0\n'
  })
  const [res, missing] = await Promise.all([
    run(dir, 'validate', '--config', 'bad.yml'),
    run(dir, 'validate', '--config', 'missing.yml')
  ])
  t.equal(res.status, 1)
  t.equal(res.stdout, '')
  t.same(res.stderr.trim().split('\n').sort(), [
    'push_notifications.bogus: unknown key',
    'push_notifications.config.timeout: must be >= 1 (got 0)',
    'server.port: must be an integer (got "eighty")'
  ])
  t.equal(missing.status, 1)
  t.match(missing.stderr, 'missing.yml: cannot read the config file (ENOENT)')
})

t.test('card prints the agent card as JSON', async t => {
  const dir = t.testdir({ 'agent.yml': 'agent:\n  name: Card Agent\n  version: 2.0.0\n' })
  const [res, bad] = await Promise.all([run(dir, 'card'), run(dir, 'card', '--config', 'missing.yml')])
  t.equal(res.status, 0)
  t.match(JSON.parse(res.stdout), { name: 'Card Agent', version: '2.0.0', protocolVersion: '0.3.0' })
  t.match(res.stdout, /^{\n {2}"/)
  t.equal(bad.status, 1)
  t.equal(bad.stdout, '')
})

t.test('init writes the template, which validate accepts', async t => {
  const dir = t.testdir({})
  const [res, other] = await Promise.all([run(dir, 'init'), run(dir, 'init', '--file', 'conf.yml')])
  t.equal(res.status, 0)
  t.equal(res.stdout, `wrote ${join(dir, 'agent.yml')}\n`)
  t.equal(other.status, 0)
  t.equal(readFileSync(join(dir, 'agent.yml'), 'utf8'), initTemplate())
  t.equal(readFileSync(join(dir, 'conf.yml'), 'utf8'), initTemplate())
  const validated = await run(dir, 'validate')
  t.equal(validated.stdout, `ok: ${join(dir, 'agent.yml')}\n`)
  t.equal(validated.status, 0)
})

t.test('init refuses to overwrite a file unless --force is given', async t => {
  const dir = t.testdir({ 'agent.yml': 'mine: true\n' })
  const refused = await run(dir, 'init')
  t.equal(refused.status, 1)
  t.match(refused.stderr, `${join(dir, 'agent.yml')} exists; use --force to overwrite it`)
  t.equal(readFileSync(join(dir, 'agent.yml'), 'utf8'), 'mine: true\n')
  const forced = await run(dir, 'init', '--force')
  t.equal(forced.status, 0)
  t.equal(readFileSync(join(dir, 'agent.yml'), 'utf8'), initTemplate())
})

t.test('an unexpected error is printed and exits 1', async t => {
  const dir = t.testdir({})
  writeFileSync(join(dir, 'file'), '')
  const res = await run(dir, 'init', '--file', 'file/agent.yml')
  t.equal(res.status, 1)
  t.match(res.stderr, /fastify-a2a: .*ENOTDIR/)
})

t.test('webhook-sink refuses a bad port with its usage', async t => {
  const res = await run(t.testdir({}), 'webhook-sink', '--port', '90x')
  t.equal(res.status, 2)
  t.match(res.stderr, '--port must be a whole number, not "90x"')
  t.match(res.stderr, 'Usage: fastify-a2a webhook-sink')
})

t.test('webhook-sink prints its URL and each delivery, and exits 0 on SIGTERM and SIGINT', async t => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const child = spawnChild(t, process.execPath, [CLI, 'webhook-sink', '--port', '0', '--secret', 'plain'], {
      cwd: t.testdir({}), env: ENV, stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    const exited = once(child, 'exit')
    const waitFor = async (re: RegExp): Promise<RegExpExecArray> => {
      for (let match = re.exec(stdout); ; match = re.exec(stdout)) {
        if (match !== null) return match
        if (child.exitCode !== null) throw new Error(`exited early: ${stderr}`)
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    }
    const [, url] = await waitFor(/^webhook sink listening on (http:\/\/127\.0\.0\.1:\d+\/)/)
    const res = await fetch(`${url}hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-a2a-notification-token': 'tok-SECRET' },
      body: JSON.stringify({ id: 'task-1', kind: 'task', status: { state: 'completed' } })
    })
    t.equal(res.status, 204)
    const [line] = await waitFor(/^.* POST \/hook .*$/m)
    t.match(line, / task=task-1 state=completed x-a2a-notification-token=set .* signature=missing$/)
    t.notMatch(stdout, 'tok-SECRET')
    child.kill(signal)
    t.same(await exited, [0, null], signal)
    t.equal(stderr, '')
  }
})
