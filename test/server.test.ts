import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { CLI, rpc, serve, userMessage } from './helper.js'

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
  const child = spawn(process.execPath, [CLI, 'serve', '--config', join(dir, 'agent.yml'), '--log-level', 'warn'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', chunk => { stderr += chunk })
  const code = await new Promise(resolve => child.on('exit', resolve))
  t.equal(code, 1)
  t.match(stderr, /server\.port: must be >= 0/)
  t.match(stderr, /bogus: unknown key/)
})
