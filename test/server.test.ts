import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { CLI, receiver, rpc, serve, spawnChild, until, userMessage } from './helper.js'

async function post (url: string, body: unknown): Promise<any> {
  const res = await fetch(url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

t.test('the CLI serves the built-in agent over real HTTP and exits 0 on SIGTERM', async t => {
  const cwd = t.testdir({})
  t.equal(cwd, t.testdirName)
  const server = await serve(t, [])
  t.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.ok(server.logs.some(l => l.includes('security is off')), 'a warning says security is off')
  const health = await fetch(server.url + '/health')
  t.equal(health.status, 200)
  t.equal(((await health.json()) as any).agent, 'Echo Agent')
  const sent = await post(server.url, rpc('message/send', { message: userMessage('over the wire') }))
  t.equal(sent.status, 200)
  t.equal(sent.body.result.status.state, 'completed')
  t.equal(sent.body.result.artifacts[0].parts[0].text, 'over the wire')
  const got = await post(server.url, rpc('tasks/get', { id: sent.body.result.id }))
  t.equal(got.body.result.id, sent.body.result.id)
  const card = await fetch(server.url + '/.well-known/agent-card.json')
  t.equal(((await card.json()) as any).protocolVersion, '0.3.0')
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
})

t.test('SIGTERM lets an in-flight blocking send finish before the process exits 0', async t => {
  const dir = t.testdir({})
  const config = join(dir, 'agent.yml')
  writeFileSync(config, 'agent:\n  name: Slow\n  delay_ms: 400\nserver:\n  shutdown_timeout: 5\n')
  const server = await serve(t, ['--config', config])
  const pending = post(server.url, rpc('message/send', { message: userMessage('finish me') }))
  // The task is running once tasks/list shows it.
  for (let i = 0; i < 200; i++) {
    const list = await post(server.url, rpc('tasks/list', {}))
    if (list.body.result.tasks.length > 0) break
  }
  server.child.kill('SIGTERM')
  const res = await pending
  t.equal(res.body.result.status.state, 'completed')
  t.equal(await server.exited, 0)
})

t.test('tasks still running at the shutdown deadline become failed, and the process exits 0', async t => {
  const dir = t.testdir({})
  const config = join(dir, 'agent.yml')
  writeFileSync(config, 'agent:\n  name: Stuck\n  delay_ms: 60000\nserver:\n  shutdown_timeout: 0.2\n')
  const server = await serve(t, ['--config', config])
  const pending = post(server.url, rpc('message/send', { message: userMessage('never done') }))
  for (let i = 0; i < 200; i++) {
    const list = await post(server.url, rpc('tasks/list', {}))
    if (list.body.result.tasks.length > 0) break
  }
  server.child.kill('SIGTERM')
  const res = await pending
  t.equal(res.body.result.status.state, 'failed')
  t.match(res.body.result.status.message.parts[0].text, /server stopped/)
  t.equal(await server.exited, 0)
})

/** A module hook for `node --import`: it writes a line to stderr whenever the process resolves the package `got`. */
const TRACE_GOT = (() => {
  const hooks = 'export async function resolve (specifier, context, next) {' +
    ' if (specifier === "got") process.stderr.write("resolving got\\n"); return next(specifier, context) }'
  const register = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(hooks))})`
  return 'data:text/javascript,' + encodeURIComponent(register)
})()

t.test('the server loads got only when it first posts a webhook, and that delivery arrives', async t => {
  const dir = t.testdir({ 'agent.yml': 'push_notifications:\n  config:\n    allowed_networks: [127.0.0.0/8]\n' })
  const hook = await receiver(t)
  const server = await serve(t, ['--config', join(dir, 'agent.yml')], {}, ['--import', TRACE_GOT])
  const loads = () => server.logs.join('').split('resolving got').length - 1
  const plain = await post(server.url, rpc('message/send', { message: userMessage('no webhook') }))
  t.equal(plain.body.result.status.state, 'completed')
  const config = await post(server.url, rpc('tasks/pushNotificationConfig/set', {
    taskId: plain.body.result.id, pushNotificationConfig: { url: `${hook.url}/late` }
  }))
  t.equal(config.body.result.taskId, plain.body.result.id, 'a push config is stored')
  t.equal(loads(), 0, 'serving tasks and storing a push config did not load got')
  const pushed = await post(server.url, rpc('message/send', {
    message: userMessage('with a webhook'), configuration: { pushNotificationConfig: { url: `${hook.url}/hook` } }
  }))
  await until(() => hook.received.some(r => r.body?.status?.state === 'completed'))
  t.equal(hook.received[0].path, '/hook')
  t.equal(hook.received.at(-1)?.body.id, pushed.body.result.id, 'the delivery came through got, loaded on demand')
  t.equal(loads(), 1, 'got was resolved once')
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
})

t.test('flags override the environment, which overrides the file', async t => {
  const dir = t.testdir({})
  const config = join(dir, 'agent.yml')
  writeFileSync(config, 'agent:\n  name: From File\nserver:\n  port: 1\n')
  const server = await serve(t, ['--config', config], { PORT: '2' })
  t.match(server.url, /:\d{4,5}$/, '--port 0 won over PORT and the file')
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
})

t.test('serve with a bad config prints every problem and exits 1', async t => {
  const dir = t.testdir({ 'agent.yml': 'server:\n  port: -1\nbogus: 1\n' })
  const child = spawnChild(t, process.execPath, [CLI, 'serve', '--config', join(dir, 'agent.yml'), '--log-level', 'warn'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', chunk => { stderr += chunk })
  const code = await new Promise(resolve => child.on('exit', resolve))
  t.equal(code, 1)
  t.match(stderr, /server\.port: must be >= 0/)
  t.match(stderr, /bogus: unknown key/)
})
