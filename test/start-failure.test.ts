// Row 9 of issue 39: a start that cannot listen (the HTTP port or the gRPC port taken), with the memory stores and
// with Redis. The built CLI (`npm run build` first) prints one line saying what failed and what to set, closes
// everything it opened (Redis clients, the queue worker, the reaper, the outbox relay, the gRPC server), and exits 1
// on its own: nothing is left to keep the process alive.
import { once } from 'node:events'
import { createServer, type Server } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { freePort } from '../scripts/redis-server.js'
import { CLI, kvcacheYaml, logCapture, privateRedis, spawnChild } from './helper.js'

/** As test/helper.ts `serve`: the compiled copies of the library's folders record no coverage. */
const CHILD_COVERAGE_EXCLUDE = String(/[\\/](node_modules|services|plugins|routes|schemas)[\\/]/)
/** Far above the second or two a failed start takes: a process still there by then has something left open. */
const GONE_WITHIN_MS = 30_000

/** A port of 127.0.0.1 held by a listener of this test. */
async function takenPort (t: Test): Promise<number> {
  const holder: Server = createServer().listen(0, '127.0.0.1')
  await once(holder, 'listening')
  t.teardown(() => holder.close())
  return (holder.address() as { port: number }).port
}

interface Run { code: number | null, stderr: string, stdout: string }

/** `fastify-a2a serve` with this config file, to its exit (killed, and failed, if it is not gone in time). */
async function serveToExit (t: Test, config: string, args: string[]): Promise<Run> {
  const dir = t.testdir({})
  writeFileSync(join(dir, 'agent.yml'), config)
  const child = spawnChild(t, process.execPath, [CLI, 'serve', '--config', 'agent.yml', ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'info', _TAPJS_PROCESSINFO_COV_EXCLUDE_: CHILD_COVERAGE_EXCLUDE },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', chunk => { stdout += chunk })
  child.stderr?.on('data', chunk => { stderr += chunk })
  const timer = setTimeout(() => child.kill('SIGKILL'), GONE_WITHIN_MS)
  // Never left behind, even by a test cut short by tap's own timeout: spawnChild kills its group then.
  const [code, signal] = await once(child, 'exit') as [number | null, string | null]
  clearTimeout(timer)
  t.equal(signal, null, 'gone on its own, not killed')
  return { code, stderr, stdout }
}

function oneLine (t: Test, run: Run, line: string): void {
  t.equal(run.code, 1, 'exit code 1')
  t.equal(run.stderr, `fastify-a2a: ${line}\n`, 'one line on stderr, no stack')
  t.notMatch(run.stdout, /agent serving/)
}

const GRPC = (port: number) => `
protocol:
  grpc:
    enabled: true
    port: ${port}
    advertised_url: 127.0.0.1:${port}
`

t.test('row 9: with its HTTP port taken, serve prints one line and exits 1', async t => {
  const port = await takenPort(t)
  const run = await serveToExit(t, 'agent:\n  name: Start Agent\n', ['--port', String(port)])
  oneLine(t, run, `cannot listen on 127.0.0.1:${port}: address in use (set server.port or PORT)`)
})

t.test('row 9: with its gRPC port taken, serve prints one line and exits 1', async t => {
  const port = await takenPort(t)
  const run = await serveToExit(t, GRPC(port), ['--port', '0'])
  oneLine(t, run, `cannot listen for gRPC on 127.0.0.1:${port}: address in use (set protocol.grpc.port)`)
  t.notMatch(run.stdout, /gRPC binding listening/)
})

t.test('row 9: on Redis, a taken HTTP port closes the gRPC server, the Redis clients and the workers, and exits 1', async t => {
  const redis = await privateRedis(t)
  const port = await takenPort(t)
  const run = await serveToExit(t, kvcacheYaml(redis.url) + GRPC(await freePort()), ['--port', String(port)])
  oneLine(t, run, `cannot listen on 127.0.0.1:${port}: address in use (set server.port or PORT)`)
  t.match(run.stdout, /gRPC binding listening/, 'gRPC was serving before the HTTP listen failed')
})

t.test('row 9: on Redis, a taken gRPC port closes the Redis clients and the workers, and exits 1', async t => {
  const redis = await privateRedis(t)
  const port = await takenPort(t)
  const run = await serveToExit(t, kvcacheYaml(redis.url) + GRPC(port), ['--port', '0'])
  oneLine(t, run, `cannot listen for gRPC on 127.0.0.1:${port}: address in use (set protocol.grpc.port)`)
})

t.test('row 9: on a Redis that does not answer, a taken HTTP port still prints one line and exits 1', async t => {
  const port = await takenPort(t)
  // Nothing listens there: every Redis command fails. Every close step is bounded (the webhook queue's worker is closed
  // by force, the clients quit within a bound), so the close ends on its own; the cut-off for a close that still hangs
  // is the next test's.
  const run = await serveToExit(t, kvcacheYaml(`redis://127.0.0.1:${await freePort()}`) + 'server:\n  shutdown_timeout: 1\n', ['--port', String(port)])
  oneLine(t, run, `cannot listen on 127.0.0.1:${port}: address in use (set server.port or PORT)`)
})

t.test('row 9: a close hook that hangs after a failed start is cut short shutdown_timeout + 5 s after the failure, exit code 1', async t => {
  // Every close step of the server is bounded, so the hang is made here: the agent plugin is replaced by one whose
  // close hook waits until the test ends. In process, with process.exit caught, so that the cut-off is measured.
  let release: () => void = () => {}
  const hanging = new Promise<void>(resolve => { release = resolve })
  t.teardown(() => release())
  const { default: fp } = await import('fastify-plugin')
  const plugin = fp(async (fastify: import('fastify').FastifyInstance) => {
    fastify.addHook('onClose', async () => await hanging)
  }, { name: 'fastify-a2a' })
  const { startServer } = await t.mockImport<typeof import('../server.js')>('../server.js', { '../index.js': { default: plugin } })
  const { validateConfig } = await import('../services/config/load.js')
  const exit = process.exit
  const exited = new Promise<number | undefined>(resolve => {
    process.exit = ((code?: number) => { resolve(code) }) as typeof process.exit
  })
  t.teardown(() => { process.exit = exit })
  const port = await takenPort(t)
  const logs = logCapture()
  const config = validateConfig({ server: { port, log_level: 'info', shutdown_timeout: 0 } })
  await t.rejects(startServer(config, { logStream: logs.stream }), { code: 'A2A_ERR_LISTEN' })
  t.equal(await exited, 1, 'exit code 1')
  t.match(logs.lines().find(l => l.msg === 'close after a failed start did not finish: exiting'), { level: 50, timeoutMs: 5_000 })
})
