// The examples/ folder: each example runs over real HTTP, imported (its build function) and as the program a user
// starts (`node --import ./scripts/ts-import.js examples/<name>.ts`).
import { fileURLToPath } from 'node:url'
import { A2AClient } from '@a2a-js/sdk/client'
import type { Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import * as customExecutor from '../examples/custom-executor.js'
import * as embeddedApp from '../examples/embedded-app.js'
import { TS_IMPORT, postStream, rpc, spawnChild, until, userMessage } from './helper.js'

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url))

async function listen (t: Test, app: FastifyInstance): Promise<string> {
  t.teardown(() => app.close())
  return await app.listen({ host: '127.0.0.1', port: 0 })
}

async function post (url: string, body: unknown): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return await res.json()
}

/** Starts `examples/<name>.ts` as a program on a free port; resolves with its address once it listens. */
async function runExample (t: Test, name: string): Promise<{ url: string, exited: Promise<number | null>, stop: () => void }> {
  const env: Record<string, string | undefined> = { ...process.env, PORT: '0', HOST: undefined }
  const child = spawnChild(t, process.execPath, ['--import', TS_IMPORT, `${EXAMPLES}${name}.ts`], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const match = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(out)
      if (match !== null) resolve(match[1])
    })
    child.on('exit', code => reject(new Error(`${name} exited with ${code}: ${stderr}`)))
  })
  return { url, exited, stop: () => child.kill('SIGTERM') }
}

t.test('custom-executor: the word reverser streams one chunk per word after a progress status', async t => {
  const url = await listen(t, await customExecutor.buildApp())
  const client = await A2AClient.fromCardUrl(`${url}/.well-known/agent-card.json`)
  t.match(await client.getAgentCard(), { name: 'Word Reverser', skills: [{ id: 'reverse' }] })

  const events = []
  for await (const event of client.sendMessageStream({ message: userMessage('hello  brave world') as any })) events.push(event)
  const statuses = events.filter(e => e.kind === 'status-update') as TaskStatusUpdateEvent[]
  t.equal(statuses[0].status.state, 'working')
  t.match(statuses.find(s => s.status.message !== undefined)?.status.message?.parts, [{ kind: 'text', text: 'Reversing 3 word(s)…' }])
  t.match(statuses[statuses.length - 1], { final: true, status: { state: 'completed' } })
  const chunks = events.filter(e => e.kind === 'artifact-update') as TaskArtifactUpdateEvent[]
  t.equal(chunks.map(c => c.artifact.parts.map(p => (p.kind === 'text' ? p.text : '')).join('')).join(''), 'olleh evarb dlrow')
  t.equal(chunks[0].artifact.name, customExecutor.ARTIFACT_NAME)
  t.equal(chunks[chunks.length - 1].lastChunk, true)

  const sent = (await client.sendMessage({ message: userMessage('abc def') as any }) as { result: Task }).result
  t.same(sent.artifacts?.map(a => [a.name, a.parts.map(p => (p.kind === 'text' ? p.text : '')).join('')]), [['reversed', 'cba fed']])
})

t.test('custom-executor: no words asks for input, and the answer resumes the task', async t => {
  const url = await listen(t, await customExecutor.buildApp())
  const first = await post(url, rpc('message/send', { message: { kind: 'message', role: 'user', messageId: 'x1', parts: [{ kind: 'data', data: { a: 1 } }] } }))
  t.equal(first.result.status.state, 'input-required', 'the a2a dialect spelling')
  t.equal(first.result.status.message.parts[0].text, 'Send me some words to reverse.')
  const second = await post(url, rpc('message/send', { message: userMessage('later', { taskId: first.result.id }) }))
  t.equal(second.result.status.state, 'completed')
  t.equal(second.result.artifacts[0].parts[0].text, 'retal')
})

t.test('custom-executor: tasks/cancel stops the reverser between words', async t => {
  const app = await customExecutor.buildApp({ delayMs: 60_000 })
  const url = await listen(t, app)
  const started = await post(url, rpc('message/send', { message: userMessage('one two'), configuration: { blocking: false } }))
  const id = started.result.id
  await until(async () => (await post(url, rpc('tasks/get', { id }))).result.status.state === 'working')
  const canceled = await post(url, rpc('tasks/cancel', { id }))
  t.equal(canceled.result.status.state, 'canceled')
  const after = await post(url, rpc('tasks/get', { id }))
  t.equal(after.result.status.state, 'canceled')
  t.same(after.result.artifacts, [], 'no word was written')
})

t.test('embedded-app: the host keeps its routes, hook and error handler; the agent lives under /agent', async t => {
  const url = await listen(t, await embeddedApp.buildApp())
  const home = await fetch(`${url}/`)
  t.same(await home.json(), { app: 'host', agent: '/agent' })
  t.equal(home.headers.get('x-host'), 'embedded-app')
  const boom = await fetch(`${url}/boom`)
  t.equal(boom.status, 500)
  t.same(await boom.json(), { host: 'error', message: 'host route failed' })

  const card = await (await fetch(`${url}/agent/.well-known/agent-card.json`)).json() as { name: string, url: string }
  t.equal(card.name, 'Embedded Greeter')
  t.equal(card.url, `${url}/agent/`)
  const parts = [{ kind: 'text', text: 'good' }, { kind: 'data', data: { ignored: true } }, { kind: 'text', text: 'morning' }]
  const sent = await post(`${url}/agent`, rpc('message/send', { message: userMessage('', { parts }) }))
  t.equal(sent.result.status.state, 'completed')
  const [result, status] = sent.result.artifacts
  t.equal(result.parts[0].text, 'Hello anonymous, you said: good morning')
  t.same(status.parts[0].data, { agent: 'Embedded Greeter', tools: ['status', 'capabilities', 'list_directory'] })
  const streamed = await postStream(`${url}/agent`, rpc('message/stream', { message: userMessage('streamed') }))
  t.equal(streamed.events[streamed.events.length - 1].result.status.state, 'completed')
  const bad = await fetch(`${url}/agent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' })
  t.equal(bad.status, 400, 'the agent answers its own parse errors, not the host handler')
  t.match(await bad.json(), { error: { code: -32700 } })
})

t.test('listenAddress takes HOST and PORT from the environment, else the defaults', async t => {
  t.same(customExecutor.listenAddress({}), { host: '127.0.0.1', port: 8000 })
  t.same(embeddedApp.listenAddress({}), { host: '127.0.0.1', port: 3000 })
  t.same(embeddedApp.listenAddress({ HOST: '0.0.0.0', PORT: '9000' }), { host: '0.0.0.0', port: 9000 })
})

t.test('each example runs as a program, serves, and stops on SIGTERM', async t => {
  // Both at once: most of each run is node compiling the example's TypeScript as it loads.
  await Promise.all([['custom-executor', '/'], ['embedded-app', '/agent']].map(async ([name, path]) => {
    const example = await runExample(t, name)
    const sent = await post(`${example.url}${path}`, rpc('message/send', { message: userMessage('run me') }))
    t.equal(sent.result.status.state, 'completed', name)
    example.stop()
    t.equal(await example.exited, 0, `${name} exits 0`)
  }))
})
