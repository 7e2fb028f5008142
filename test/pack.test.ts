// The published package: `npm pack`, installed into a fresh project outside the repository, then used the two
// ways a user does: `npx fastify-a2a …` and `import a2a from 'fastify-a2a'` in a project with its own Fastify.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { freePort } from '../scripts/redis-server.js'
import { snippet } from './doc-snippets.js'
import { rpc, runChild, spawnChild, userMessage } from './helper.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DIST = join(ROOT, 'dist')
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const STEP_TIMEOUT_MS = 180_000

// npm install can take a while on a loaded machine; every step below has its own bound.
t.setTimeout(600_000)

// Nothing of the test run leaks into the installed project: no coverage loader, no config, no npm script context.
const ENV: Record<string, string | undefined> = {}
for (const [name, value] of Object.entries(process.env)) {
  const script = /^npm_(lifecycle|package|config)_/.test(name) && !/^npm_config_(cache|userconfig|registry)$/.test(name)
  if (!script && !['NODE_OPTIONS', 'A2A_CONFIG', 'HOST', 'PORT', 'LOG_LEVEL', 'REDIS_URL'].includes(name) && !name.startsWith('TAP')) {
    ENV[name] = value
  }
}
// The installed copy's dist/ carries source maps: its coverage, mapped back onto our sources, would blur the
// branch counts the source-level tests measure. Its children write none.
ENV._TAPJS_PROCESSINFO_COVERAGE_ = '0'

interface Result { status: number | null, stdout: string, stderr: string }

// Each step runs in a process group of its own (test/processes.ts), killed whole at STEP_TIMEOUT_MS, at the end of
// the file and when the file times out: npm's own children (a prepack build, npx's node) never outlive it.
async function run (cmd: string, args: string[], cwd: string): Promise<Result> {
  const { status, stdout, stderr } = await runChild(t, cmd, args, { cwd, env: ENV, timeoutMs: STEP_TIMEOUT_MS })
  return { status, stdout, stderr }
}

function filesUnder (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter(entry => entry.isFile())
    .map(entry => relative(ROOT, join(entry.parentPath, entry.name)).split('\\').join('/'))
}

/** The lock's entries a package needs: itself and, transitively, its dependencies as Node resolves them. */
function lockClosure (start: string): Set<string> {
  const out = new Set<string>()
  const visit = (path: string): void => {
    if (out.has(path)) return
    out.add(path)
    for (const name of Object.keys(LOCK.packages[path].dependencies ?? {})) {
      // Nested first (`a/node_modules/b`), then each enclosing node_modules up to the root's.
      let base = path
      for (;;) {
        const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`
        if (LOCK.packages[candidate] !== undefined) {
          visit(candidate)
          break
        }
        if (base === '') throw new Error(`${name}, needed by ${path}, is not in package-lock.json`)
        const up = base.lastIndexOf('/node_modules/')
        base = up < 0 ? '' : base.slice(0, up)
      }
    }
  }
  visit(start)
  return out
}

if (!existsSync(join(DIST, 'cli.js')) || !existsSync(join(DIST, 'index.js'))) {
  throw new Error('dist/ is missing: run `npm run build` first (`npm test` builds before tap)')
}

// Outside the repository, so that nothing resolves from its node_modules.
const dir = mkdtempSync(join(tmpdir(), 'fastify-a2a-pack-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
let tarball = ''

t.test('npm pack ships dist/ whole, the README and nothing else', async t => {
  const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], ROOT)
  t.equal(packed.status, 0, packed.stderr)
  const [info] = JSON.parse(packed.stdout)
  tarball = info.filename
  t.ok(existsSync(join(dir, tarball)))
  const files: string[] = info.files.map((f: { path: string }) => f.path)
  t.same(filesUnder(DIST).filter(file => !files.includes(file)), [], 'every file of dist/ is packed')
  t.same(files.filter(f => !f.startsWith('dist/')).sort(), ['README.md', 'package.json'])
  t.notOk(files.some(f => f.startsWith('dist/test/') || (f.endsWith('.ts') && !f.endsWith('.d.ts'))), 'no tests, no TS sources')
  t.match(readFileSync(join(DIST, 'cli.js'), 'utf8'), /^#!\/usr\/bin\/env node\n/, 'the bin has its shebang')

  // A file the code reads next to itself (new URL('…', import.meta.url)) must be in the package too.
  for (const file of files.filter(f => f.endsWith('.js'))) {
    for (const [, target] of readFileSync(join(ROOT, file), 'utf8').matchAll(/new URL\(\s*['"]([^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/g)) {
      const path = posix.normalize(posix.join(posix.dirname(file), target)).replace(/\/$/, '')
      t.ok(files.some(f => f === path || f.startsWith(`${path}/`)), `${file} reads ${target}, which is packed`)
    }
  }
})

t.test('npm pack on a fresh clone (no dist/) builds first, and ships dist/', async t => {
  const clone = mkdtempSync(join(tmpdir(), 'fastify-a2a-clone-'))
  t.teardown(() => rmSync(clone, { recursive: true, force: true }))
  const tracked = await run('git', ['ls-files', '-z'], ROOT)
  t.equal(tracked.status, 0, tracked.stderr)
  for (const file of tracked.stdout.split('\0').filter(f => f !== '' && existsSync(join(ROOT, f)))) {
    mkdirSync(dirname(join(clone, file)), { recursive: true })
    copyFileSync(join(ROOT, file), join(clone, file))
  }
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'))
  t.notOk(existsSync(join(clone, 'dist')), 'no dist/ in the clone')
  const packed = await run('npm', ['pack', '--dry-run', '--json'], clone)
  t.equal(packed.status, 0, packed.stderr)
  const files: string[] = JSON.parse(packed.stdout)[0].files.map((f: { path: string }) => f.path)
  t.ok(files.includes('dist/cli.js') && files.includes('dist/index.js') && files.includes('dist/index.d.ts'), 'the build is packed')
  // The build's second step ran too: the gRPC binding's protos and the ahead-of-time config validator.
  t.ok(files.includes('dist/schemas/proto/a2a/v1.0.1/a2a.proto'), 'the protos are packed')
  t.ok(files.includes('dist/services/config/config-check.cjs'), 'the compiled config validator is packed')
})

t.test('the tarball installs offline into a fresh project, with the production dependencies only', async t => {
  // The npm cache holds the dependencies' tarballs (the repository's `npm ci` put them there) but not their registry
  // metadata, so `npm install <tarball> --offline` cannot resolve version ranges. A lockfile made of the repository
  // lock's production entries pins the same versions; `npm ci --offline` then installs them from the cache alone.
  // Fastify is a peer dependency (a dev dependency of the repository), so its entries come from the lock as well.
  const dependencies = { 'fastify-a2a': `file:${tarball}`, fastify: PACKAGE.peerDependencies.fastify }
  const packages: Record<string, unknown> = { '': { name: 'packed-app', version: '1.0.0', dependencies } }
  for (const [path, entry] of Object.entries<{ dev?: boolean }>(LOCK.packages)) {
    if (path !== '' && entry.dev !== true) packages[path] = entry
  }
  for (const path of lockClosure('node_modules/fastify')) packages[path] = { ...LOCK.packages[path], dev: undefined }
  packages['node_modules/fastify-a2a'] = {
    version: PACKAGE.version,
    resolved: `file:${tarball}`,
    dependencies: PACKAGE.dependencies,
    peerDependencies: PACKAGE.peerDependencies,
    bin: PACKAGE.bin,
    engines: PACKAGE.engines
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'packed-app', version: '1.0.0', private: true, type: 'module', dependencies }))
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name: 'packed-app', version: '1.0.0', lockfileVersion: 3, requires: true, packages }))
  const installed = await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], dir)
  t.equal(installed.status, 0, installed.stderr)
  t.ok(existsSync(join(dir, 'node_modules', 'fastify-a2a', 'dist', 'cli.js')))
  t.notOk(existsSync(join(dir, 'node_modules', 'tap')), 'no dev dependency')
})

t.test('npx fastify-a2a --help and --version work from the installed package', async t => {
  const [help, version] = await Promise.all([
    run('npx', ['--no', '--', 'fastify-a2a', '--help'], dir),
    run('npx', ['--no', '--', 'fastify-a2a', '--version'], dir)
  ])
  t.equal(help.status, 0, help.stderr)
  t.match(help.stdout, /^Usage: fastify-a2a <command>/)
  t.equal(version.status, 0, version.stderr)
  t.equal(version.stdout, `${PACKAGE.version}\n`)
})

t.test('npx fastify-a2a init writes agent.yml, which validate accepts and card reads', async t => {
  const npx = (...args: string[]) => run('npx', ['--no', '--', 'fastify-a2a', ...args], dir)
  const init = await npx('init')
  t.equal(init.status, 0, init.stderr)
  t.equal(init.stdout, `wrote ${join(dir, 'agent.yml')}\n`)
  const [validate, card] = await Promise.all([npx('validate'), npx('card')])
  t.equal(validate.status, 0, validate.stderr)
  t.equal(validate.stdout, `ok: ${join(dir, 'agent.yml')}\n`)
  t.equal(card.status, 0, card.stderr)
  t.match(JSON.parse(card.stdout), { name: 'Echo Agent', protocolVersion: '0.3.0', url: 'http://127.0.0.1:8000/' })
})

t.test('npx fastify-a2a serve answers over HTTP and exits 0 on SIGTERM', async t => {
  const child = spawnChild(t, 'npx', ['--no', '--', 'fastify-a2a', 'serve', '--port', '0'], {
    cwd: dir, env: { ...ENV, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe']
  })
  let serverPid = 0
  t.teardown(() => {
    try {
      if (serverPid !== 0) process.kill(serverPid, 'SIGKILL')
    } catch {
      // It has exited already.
    }
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  // npx runs the bin in a child process of its own: the server's pid comes from its log line.
  const serving = await new Promise<{ address: string, pid: number, config: string }>((resolve, reject) => {
    let buf = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const entry = JSON.parse(buf.slice(0, nl))
        buf = buf.slice(nl + 1)
        if (entry.msg === 'agent serving') resolve(entry)
      }
    })
    child.on('exit', code => reject(new Error(`npx exited with ${code}: ${stderr}`)))
  })
  serverPid = serving.pid
  t.match(serving.address, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.equal(serving.config, join(dir, 'agent.yml'), 'the agent.yml that init wrote')
  const health = await fetch(`${serving.address}/health`)
  t.equal(health.status, 200)
  t.match(await health.json(), { status: 'healthy', agent: 'Echo Agent', version: '1.0.0' })
  const sent = await fetch(`${serving.address}/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage('packed') }))
  })
  t.match(await sent.json(), { result: { status: { state: 'completed' }, artifacts: [{ parts: [{ text: 'packed' }] }] } })
  // The card's own example works on a fresh start: the default list_directory root was made.
  const listed = await fetch(`${serving.address}/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage('list_directory .') }))
  })
  t.match(await listed.json(), { result: { status: { state: 'completed' } } }, 'list_directory . on a fresh start')
  t.ok(existsSync(join(dir, 'workspace')), 'the default root, made at start')
  // Routes that serve files (the console) must find them in the installed package.
  t.ok((await fetch(`${serving.address}/console`)).status < 500, 'GET /console is not a server error')
  process.kill(serving.pid, 'SIGTERM')
  t.equal(await exited, 0)
})

t.test("import a2a from 'fastify-a2a' registers into the project's own Fastify", async t => {
  writeFileSync(join(dir, 'app.mjs'), `
import Fastify from 'fastify'
import a2a from 'fastify-a2a'

const app = Fastify()
app.get('/', async () => ({ host: true }))
await app.register(a2a, { prefix: '/agent', config: { agent: { name: 'Packed Agent' } } })
const card = await app.inject('/agent/.well-known/agent-card.json')
const sent = await app.inject({ method: 'POST', url: '/agent', payload: ${JSON.stringify(rpc('message/send', { message: userMessage('imported') }))} })
const host = await app.inject('/')
console.log(JSON.stringify({
  card: card.json(), sent: sent.json(), host: host.json(),
  plugin: import.meta.resolve('fastify-a2a'), fastify: import.meta.resolve('fastify')
}))
await app.close()
`)
  const res = await run(process.execPath, ['app.mjs'], dir)
  t.equal(res.status, 0, res.stderr)
  const out = JSON.parse(res.stdout)
  t.match(out.card, { name: 'Packed Agent', protocolVersion: '0.3.0' })
  t.match(out.sent, { result: { status: { state: 'completed' } } })
  t.same(out.host, { host: true })
  const modules = join(dir, 'node_modules')
  t.equal(dirname(dirname(fileURLToPath(out.plugin))), join(modules, 'fastify-a2a'))
  t.ok(fileURLToPath(out.fastify).startsWith(join(modules, 'fastify') + '/'), "the project's own fastify")
})

t.test('the package types check a TypeScript user of the plugin', async t => {
  writeFileSync(join(dir, 'check.ts'), `
import Fastify from 'fastify'
import a2a, { Type, type A2AConfigInput, type AgentExecutor } from 'fastify-a2a'

const executor: AgentExecutor = async function * ({ message }) {
  yield \`got \${message.parts.length} parts\`
}
const config: A2AConfigInput = { agent: { name: 'Typed' }, protocol: { dialect: 'a2a' } }
const app = Fastify()
await app.register(a2a, { prefix: '/agent', config, executor })
export const name: string = app.a2aConfig.agent.name
// @ts-expect-error: the config is typed
export const wrong: A2AConfigInput = { protocol: { dialect: 'soap' } }

// Every decorator is typed from the entry point; a method's params are inferred from its TypeBox schema.
app.a2aMethods.add({
  name: 'greet',
  summary: 'Says hello',
  params: Type.Object({ who: Type.String(), times: Type.Optional(Type.Integer()) }),
  handler (params, ctx) {
    const who: string = params.who.toUpperCase()
    const times: number | undefined = params.times
    // @ts-expect-error: not in the schema
    void params.nope
    return { text: who.repeat(times ?? 1), caller: ctx.principal.id }
  }
})
export const running: number = app.a2aTasks.running
export const streams: number = app.a2aStreams.size
app.addHook('onRequest', async request => {
  const caller: string | undefined = request.a2aPrincipal?.id
  void caller
})
`)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: true, types: [] },
    files: ['check.ts']
  }))
  const res = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], dir)
  t.equal(res.status, 0, res.stdout)
})

/** The docs' snippet at `file` in `folder` of the installed project, serving on a free port instead of `port`. */
async function serveSnippet (folder: string, file: string, code: string, port: number): Promise<string> {
  const free = await freePort()
  mkdirSync(join(dir, folder), { recursive: true })
  writeFileSync(join(dir, folder, file), code.replaceAll(`port: ${port}`, `port: ${free}`))
  return `http://127.0.0.1:${free}`
}

/** Starts `node file` in `folder` and waits until `probe` answers 200; killed at teardown. */
async function started (t: Test, folder: string, file: string, probe: string): Promise<void> {
  const child = spawnChild(t, process.execPath, [file], { cwd: join(dir, folder), env: ENV, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${file} exited with ${child.exitCode}: ${stderr}`)
    const res = await fetch(probe).catch(() => null)
    if (res?.status === 200) return
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

/** A message/send through JSON-RPC at `url`; the answer's result. */
async function sendText (url: string, text: string): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/send', { message: userMessage(text) })) })
  return (await res.json() as { result: any }).result
}

const commonjs = JSON.stringify({ name: 'cjs-host', version: '1.0.0', type: 'commonjs' })

t.test("the embedding page's CommonJS snippet runs in a CommonJS project: require('fastify-a2a')", async t => {
  const base = await serveSnippet('cjs-js', 'server.js', snippet('embed-commonjs'), 8000)
  writeFileSync(join(dir, 'cjs-js', 'package.json'), commonjs)
  await started(t, 'cjs-js', 'server.js', `${base}/agent/.well-known/agent-card.json`)
  t.match(await sendText(`${base}/agent`, 'from commonjs'), { status: { state: 'completed' }, artifacts: [{ parts: [{ text: 'from commonjs' }] }] })
})

t.test("the embedding page's CommonJS TypeScript snippet compiles with tsc --init's settings and runs", async t => {
  const base = await serveSnippet('cjs-ts', 'server.ts', snippet('embed-commonjs-ts'), 8000)
  writeFileSync(join(dir, 'cjs-ts', 'package.json'), commonjs)
  // What `tsc --init` (TypeScript 5.9) writes, less the options about emitting declarations and JSX.
  writeFileSync(join(dir, 'cjs-ts', 'tsconfig.json'), JSON.stringify({
    compilerOptions: { module: 'nodenext', target: 'esnext', types: [], strict: true, verbatimModuleSyntax: true, isolatedModules: true, moduleDetection: 'force', skipLibCheck: true, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true }
  }))
  const compiled = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], join(dir, 'cjs-ts'))
  t.equal(compiled.status, 0, compiled.stdout)
  await started(t, 'cjs-ts', 'server.js', `${base}/agent/.well-known/agent-card.json`)
  t.match(await sendText(`${base}/agent`, 'from typescript'), { status: { state: 'completed' } })
})

t.test("the embedding page's TypeScript examples compile in an ES module project and serve what they say", async t => {
  const esm = { compilerOptions: { module: 'nodenext', target: 'es2022', types: [], strict: true, skipLibCheck: true } }
  for (const [name, code, port, agentPath, text, answer] of [
    ['esm-ts', snippet('embed-esm-ts'), 3000, '/agent', 'hello', 'You said: hello'],
    ['word-reverser', snippet('embed-word-reverser'), 8000, '', 'hello world', 'olleh dlrow']
  ] as const) {
    const base = await serveSnippet(name, 'server.ts', code, port)
    writeFileSync(join(dir, name, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module' }))
    writeFileSync(join(dir, name, 'tsconfig.json'), JSON.stringify(esm))
    const compiled = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], join(dir, name))
    t.equal(compiled.status, 0, `${name}: ${compiled.stdout}`)
    await started(t, name, 'server.js', `${base}${agentPath}/.well-known/agent-card.json`)
    const result = await sendText(`${base}${agentPath}`, text)
    t.equal(result.status.state, 'completed', name)
    t.equal(result.artifacts.map((a: any) => a.parts.map((p: any) => p.text).join('')).join(''), answer, name)
  }
})
