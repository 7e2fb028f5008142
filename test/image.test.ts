// The container image's file tree, built without a container runtime: the Dockerfile's steps replayed in a temporary
// folder (COPY from the repository, `npm ci` as a link to the repository's node_modules, every other RUN as written,
// with /app standing for the stage's folder), then the runtime stage started as its ENTRYPOINT and CMD say, with the
// gRPC binding on. An image built with a step of `npm run build` missing (the protos not copied beside dist/) fails
// here as it would fail in a container.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { freePort } from '../scripts/redis-server.js'
import { runChild, serve } from './helper.js'
import { grpcClients, unary } from './routes/grpc-client.js'

const repo = fileURLToPath(new URL('..', import.meta.url))

interface Step { op: string, args: string }
interface Stage { name: string | undefined, steps: Step[] }

/** The Dockerfile's stages and their instructions, continuation lines joined and comments left out. */
function stagesOf (dockerfile: string): Stage[] {
  const stages: Stage[] = []
  const lines = dockerfile.replace(/\\\n\s*/g, ' ').split('\n').map(l => l.trim()).filter(l => l !== '' && !l.startsWith('#'))
  for (const line of lines) {
    const [, op, args] = /^(\w+)\s+(.*)$/.exec(line) ?? []
    if (op === 'FROM') stages.push({ name: /\sAS\s+(\S+)$/i.exec(args)?.[1], steps: [] })
    else stages[stages.length - 1].steps.push({ op, args })
  }
  return stages
}

/**
 * Replays a stage in `dir` (its /app); `from` maps a stage name to its folder. Returns its ENV and start command. Its
 * RUN steps are children of `t` (test/processes.ts): a build cut short by a timeout is not left running.
 */
async function replay (t: Test, stage: Stage, dir: string, from: Map<string, string>): Promise<{ env: Record<string, string>, command: string[] }> {
  const env: Record<string, string> = {}
  let entrypoint: string[] = []
  let cmd: string[] = []
  mkdirSync(dir, { recursive: true })
  for (const { op, args } of stage.steps) {
    if (op === 'COPY') {
      const words = args.split(/\s+/)
      const source = words[0].startsWith('--from=') ? from.get(words.shift()!.slice('--from='.length)) : repo
      const dest = join(dir, words.pop()!.replace(/^\/app\/?/, ''))
      for (const pattern of words) {
        const base = source === repo ? repo : source!
        const relative = pattern.replace(/^\/app\/?/, '')
        const matches = relative.includes('*') ? matching(relative, base) : [relative]
        for (const match of matches) {
          const target = dest.endsWith('/') || matches.length > 1 || words.length > 1 ? join(dest, basename(match)) : dest
          cpSync(join(base, match), target, { recursive: true })
        }
      }
    } else if (op === 'RUN') {
      for (const part of args.split('&&').map(p => p.trim())) {
        if (part.startsWith('npm ci')) {
          if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'))
        } else if (/^(npm cache|chown)\b/.test(part)) {
          // Nothing to do outside a container: no npm cache in the image, no user to own the folder.
        } else {
          const run = await runChild(t, 'sh', ['-c', part.replaceAll('/app', dir)], { cwd: dir })
          if (run.status !== 0) throw new Error(`RUN ${part} failed (${run.status}): ${run.stdout}${run.stderr}`)
        }
      }
    } else if (op === 'ENV') {
      for (const m of args.matchAll(/(\w+)=(\S+)/g)) env[m[1]] = m[2]
    } else if (op === 'ENTRYPOINT') {
      entrypoint = JSON.parse(args)
    } else if (op === 'CMD') {
      cmd = JSON.parse(args)
    }
  }
  return { env, command: [...entrypoint, ...cmd] }
}

/** The files a `COPY` pattern with a `*` in its last part names (all the Dockerfile uses). */
function matching (pattern: string, base: string): string[] {
  const dir = dirname(pattern)
  const name = new RegExp(`^${basename(pattern).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*')}$`)
  return readdirSync(join(base, dir)).filter(entry => name.test(entry)).map(entry => join(dir, entry))
}

t.test("the image's file tree, built by the Dockerfile's steps, starts with the gRPC binding on and answers over it", async t => {
  t.setTimeout(600_000)
  const stages = stagesOf(readFileSync(join(repo, 'Dockerfile'), 'utf8'))
  t.equal(stages.length, 2, 'a build stage and a runtime stage')
  const root = t.testdir({})
  const folders = new Map<string, string>()
  const build = join(root, 'build')
  await replay(t, stages[0], build, folders)
  folders.set(stages[0].name as string, build)
  // The build copies the protos beside dist/services/grpc/protos.js, which loads them from there.
  for (const file of ['LICENSE', 'a2a/v1.0.1/a2a.proto', 'a2a/v0.3.0/a2a.proto', 'google/rpc/status.proto']) {
    t.ok(existsSync(join(build, 'dist/schemas/proto', file)), `the build put ${file} beside dist/`)
  }

  const app = join(root, 'app')
  const { env, command } = await replay(t, stages[1], app, folders)
  t.same(command, ['node', 'dist/cli.js', 'serve'])
  t.notOk(existsSync(join(app, 'services')), 'the runtime stage holds no sources')
  const grpcPort = await freePort()
  writeFileSync(join(app, 'agent.yml'), `protocol:\n  grpc:\n    enabled: true\n    port: ${grpcPort}\n    advertised_url: 127.0.0.1:${grpcPort}\n`)
  const { url, child, exited } = await serve(t, ['--config', 'agent.yml'], { ...env, HOST: '127.0.0.1', PORT: '0' }, [],
    { cli: join(app, command[1]), cwd: app })
  t.equal((await fetch(`${url}/health`)).status, 200, 'HTTP answers /health')
  const clients = grpcClients(t, `127.0.0.1:${grpcPort}`)
  const health = await unary(clients.health, 'check', { service: '' })
  t.equal(health.value?.status, 'SERVING', 'gRPC health: serving')
  const sent = await unary(clients.v1, 'SendMessage', {
    message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hello from the image' }] }
  }, { 'a2a-version': '1.0' })
  t.equal(sent.error, undefined, 'SendMessage answers over gRPC')
  t.match(sent.value, { task: { status: { state: 'TASK_STATE_COMPLETED' } } }, 'the built-in agent completes the task')
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM drains it and it exits 0')
})
