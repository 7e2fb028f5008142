// The developer console and the docs' EventSource snippet in a real browser (headless Chromium through
// playwright-core, test/console-page.ts), following a task again after its connection is cut.
import type { Socket } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import a2a, { type A2AOptions, type AgentExecutor } from '../index.js'
import { WAIT_MS, chat, open, pageErrors, speak } from './console-page.js'
import { snippet } from './doc-snippets.js'
import type { Teardown } from './helper.js'

/** An agent whose task `text` writes c0..c3 once `open(text, 1)` is called, then c4..c7 once `open(text, 2)` is. */
function twoGates (): { executor: AgentExecutor, open: (text: string, gate: 1 | 2) => void } {
  const gates = new Map<string, () => void>()
  const waiting = new Map<string, Promise<void>>()
  const gate = (key: string): Promise<void> => {
    let promise = waiting.get(key)
    if (promise === undefined) {
      promise = new Promise<void>(resolve => gates.set(key, resolve))
      waiting.set(key, promise)
    }
    return promise
  }
  const executor: AgentExecutor = async function * (ctx) {
    const part = ctx.message.parts[0]
    const text = part.kind === 'text' ? part.text : ''
    for (const phase of [1, 2]) {
      await gate(`${text}/${phase}`)
      for (let i = (phase - 1) * 4; i < phase * 4; i++) yield `c${i} `
    }
  }
  return { executor, open: (text, phase) => { gate(`${text}/${phase}`); (gates.get(`${text}/${phase}`) as () => void)() } }
}

const CHUNKS = 'c0 c1 c2 c3 c4 c5 c6 c7 '

/** The plugin at the root on 127.0.0.1, with `cut()` to destroy every connection it has, as a failing network does. */
async function cuttable (t: Teardown, opts: A2AOptions): Promise<{ url: string, cut: () => void }> {
  const app = Fastify({ logger: false, forceCloseConnections: true })
  const sockets = new Set<Socket>()
  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  await app.register(a2a, opts)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { url, cut: () => { for (const socket of sockets) socket.destroy() } }
}

const CUTS = [
  { name: 'v1.0', version: '1.0', dialect: 'default', note: /^connection lost: SubscribeToTask after event \d+$/ },
  { name: 'v0.3, default dialect', version: '0.3', dialect: 'default', note: /^connection lost: tasks\/resubscribe$/ },
  { name: 'v0.3, a2a dialect', version: '0.3', dialect: 'a2a', note: /^connection lost: tasks\/resubscribe after event \d+$/ }
] as const

for (const { name, version, dialect, note } of CUTS) {
  t.test(`${name}: a chat whose connection is cut mid-task is followed again, and its reply has no gap`, async t => {
    const agent = twoGates()
    const { url, cut } = await cuttable(t, { executor: agent.executor, config: { protocol: { dialect } } })
    const page = await open(t, url)
    if (version !== '1.0') await speak(page, version)
    const text = `cut-${version}-${dialect}`
    agent.open(text, 1)
    const id = await chat(page, text)
    const reply = page.locator(`.msg.agent[data-task-id="${id}"]`)
    await reply.locator('.text', { hasText: 'c0 c1 c2 c3' }).waitFor()
    cut()
    agent.open(text, 2)
    await reply.and(page.locator('[data-state="completed"]')).waitFor()
    // Each chunk is a part of the one artifact, shown a line each.
    t.equal((await reply.locator('.text').textContent())?.replaceAll('\n', ''), CHUNKS, 'every chunk once, in order')
    t.match(await page.locator('#events li.reconnect').first().textContent(), note)
    t.same(pageErrors.get(page), [], 'no script error')
  })
}

t.test("the docs' EventSource snippet follows a task across a cut connection, resuming by Last-Event-ID", async t => {
  const follow = snippet('eventsource-follow')
  t.match(follow, /new EventSource/)
  const agent = twoGates()
  const { url, cut } = await cuttable(t, { executor: agent.executor })
  const page = await open(t, url)
  const sent: any = await (await fetch(`${url}/message:send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ message: { messageId: 'es-1', role: 'ROLE_USER', parts: [{ text: 'es' }] }, configuration: { returnImmediately: true } })
  })).json()
  const taskId = sent.task.id as string
  await page.evaluate(`${follow}
    window.got = ''
    window.opened = 0
    const source = follow(${JSON.stringify(taskId)}, text => { window.got += text }, state => { window.ended = state })
    source.addEventListener('open', () => { window.opened++ })`)
  // Functions, not strings: the page's Content-Security-Policy forbids eval. (No DOM types here: globalThis.)
  await page.waitForFunction(() => (globalThis as unknown as { opened: number }).opened === 1)
  agent.open('es', 1)
  await page.waitForFunction(() => (globalThis as unknown as { got: string }).got === 'c0 c1 c2 c3 ')
  cut()
  agent.open('es', 2)
  await page.waitForFunction(() => (globalThis as unknown as { ended: string }).ended === 'TASK_STATE_COMPLETED', undefined, { timeout: WAIT_MS })
  t.equal(await page.evaluate('window.got'), CHUNKS, 'every chunk once, in order, across the reconnect')
  t.equal(await page.evaluate('window.opened'), 2, 'EventSource reconnected once')
})
