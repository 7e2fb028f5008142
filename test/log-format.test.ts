// The log format of `fastify-a2a serve` (the built CLI: `npm run build` first). On a terminal (a pseudo-terminal made
// by util-linux `script`) it writes readable lines, one per request, and Ctrl-C stops it; `A2A_LOG_FORMAT` or
// `--log-format` force either format; anything else is a usage error.
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import t, { type Test } from 'tap'
import { CLI, spawnChild } from './helper.js'

/** As test/helper.ts `serve`: the compiled copies of the library's folders record no coverage. */
const CHILD_COVERAGE_EXCLUDE = String(/[\\/](node_modules|services|plugins|routes|schemas)[\\/]/)
/** A generous upper bound, not a speed check: the process is killed (and the test fails) only past it. */
const GONE_WITHIN_MS = 30_000
/** Far below the force exit (shutdown_timeout + 5 s), and generous for a loaded machine. */
const PROMPT_EXIT_MS = 5_000
/** Ctrl-C, as typed on the terminal: its line discipline sends SIGINT to the server. */
const CTRL_C = '\u0003'

interface Run {
  child: ChildProcessWithoutNullStreams
  /** Everything written so far (stdout and stderr), colours removed. */
  output: () => string
  /** Resolves once the output matches. */
  waitFor: (pattern: RegExp) => Promise<RegExpMatchArray>
  exited: Promise<{ code: number | null, signal: string | null }>
}

/** Runs the CLI with `args`, through `script` (on a pseudo-terminal) when `terminal`; killed at teardown. */
function run (t: Test, args: string[], opts: { terminal?: boolean, env?: Record<string, string> } = {}): Run {
  // No CI here, whatever the run has: `auto` is pretty on a terminal only outside CI.
  const env = { PATH: process.env.PATH, LOG_LEVEL: 'info', _TAPJS_PROCESSINFO_COV_EXCLUDE_: CHILD_COVERAGE_EXCLUDE, ...opts.env }
  const command = [process.execPath, CLI, ...args]
  const child = opts.terminal === true
    ? spawnChild(t, 'script', ['-qfec', command.join(' '), '/dev/null'], { cwd: t.testdirName, env, stdio: 'pipe' }) as ChildProcessWithoutNullStreams
    : spawnChild(t, command[0], command.slice(1), { cwd: t.testdirName, env, stdio: 'pipe' }) as ChildProcessWithoutNullStreams
  let text = ''
  const waiting = new Set<() => void>()
  const onData = (chunk: Buffer): void => {
    // eslint-disable-next-line no-control-regex -- the colour escapes a terminal may get
    text += String(chunk).replace(/\u001b\[\d+m/g, '')
    for (const check of waiting) check()
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  const exited = new Promise<{ code: number | null, signal: string | null }>(resolve => {
    // Once its output has been read to the end, too.
    child.once('close', (code, signal) => resolve({ code, signal }))
  })
  const killer = setTimeout(() => child.kill('SIGKILL'), GONE_WITHIN_MS)
  exited.then(() => clearTimeout(killer), () => {})
  // A server left behind by a failed test: spawnChild kills its whole group (script and the server) at teardown.
  return {
    child,
    output: () => text,
    waitFor: async pattern => await new Promise((resolve, reject) => {
      const check = (): void => {
        const match = text.match(pattern)
        if (match !== null) {
          waiting.delete(check)
          resolve(match)
        }
      }
      waiting.add(check)
      check()
      exited.then(() => { if (waiting.delete(check)) reject(new Error(`exited before ${pattern}: ${text}`)) }, () => {})
    }),
    exited
  }
}

t.test('on a terminal, serve writes readable lines, one per request, and Ctrl-C stops it at once', async t => {
  t.testdir({})
  const server = run(t, ['serve', '--port', '0'], { terminal: true })
  const [, address] = await server.waitFor(/\] INFO: agent serving \{"address":"(http:\/\/[^"]+)"/)
  t.equal((await fetch(`${address}/health`)).status, 200)
  await server.waitFor(/\] INFO: GET \/health 200 \d+\.\d ms \{"reqId":"req-1"\}\r?\n/)
  const lines = server.output().split(/\r?\n/).filter(line => line !== '')
  t.same(lines.filter(line => !/^\[\d\d:\d\d:\d\d\.\d\d\d\] (INFO|WARN): /.test(line)), [], 'every line a readable one')
  t.notMatch(server.output(), /incoming request|request completed|"pid"|"hostname"/, 'one line per request, no JSON')

  const signalled = Date.now()
  server.child.stdin.write(CTRL_C)
  await server.exited
  const tookMs = Date.now() - signalled
  t.match(server.output(), /\] INFO: shutting down \{"signal":"SIGINT"\}/)
  t.ok(tookMs < PROMPT_EXIT_MS, `gone ${tookMs} ms after Ctrl-C`)
})

t.test('A2A_LOG_FORMAT=json keeps JSON lines on a terminal', async t => {
  t.testdir({})
  const server = run(t, ['serve', '--port', '0'], { terminal: true, env: { A2A_LOG_FORMAT: 'json' } })
  await server.waitFor(/"msg":"agent serving"\}\r?\n/)
  const entries = server.output().split(/\r?\n/).filter(line => line !== '').map(line => JSON.parse(line))
  t.match(entries.at(-1), { level: 30, msg: 'agent serving', address: /^http:/ }, 'every line JSON')
  server.child.stdin.write(CTRL_C)
  await server.exited
})

t.test('--log-format pretty writes readable lines to a pipe too, and wins over A2A_LOG_FORMAT', async t => {
  t.testdir({})
  const server = run(t, ['serve', '--port', '0', '--log-format', 'pretty'], { env: { A2A_LOG_FORMAT: 'json' } })
  await server.waitFor(/\] INFO: agent serving \{"address":"http:/)
  t.notMatch(server.output(), /^\{/m)
  server.child.kill('SIGTERM')
  t.same(await server.exited, { code: 0, signal: null })
})

t.test('a log format other than auto, json or pretty is a usage error', async t => {
  t.testdir({})
  for (const [args, env] of [[['--log-format', 'yaml'], {}], [[], { A2A_LOG_FORMAT: 'yaml' }]] as const) {
    const bad = run(t, ['serve', '--port', '0', ...args], { env })
    const { code } = await bad.exited
    t.equal(code, 2, JSON.stringify(args.length > 0 ? args : env))
    t.match(bad.output(), /^fastify-a2a: --log-format \(or \$A2A_LOG_FORMAT\) must be auto, json or pretty, not "yaml"\n\nUsage: fastify-a2a serve /)
  }
})
