// The developer console driven in a real browser: headless Chromium (Debian's package) through playwright-core.
// Every wait is a locator that waits for the state the page should reach, bounded by WAIT_MS.
import { existsSync, readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import Fastify from 'fastify'
import { chromium, type Browser, type Page } from 'playwright-core'
import type { Socket } from 'node:net'
import a2a, { type A2AOptions, type AgentExecutor } from '../index.js'
import { listen, rpc, userMessage, type Teardown } from './helper.js'

const CHROMIUM = '/usr/bin/chromium'
const MISSING = `headless Chromium is required at ${CHROMIUM} for the console test: ` +
  'install it with "apt-get update && apt-get install -y chromium" (Debian), as .ci/run does'
const WAIT_MS = 15_000
const SCREENSHOTS = { 1280: fileURLToPath(new URL('../docs/console.png', import.meta.url)), 420: fileURLToPath(new URL('../docs/console-420.png', import.meta.url)) }
const API_KEY = 'console-browser-key-0123456789'

if (!existsSync(CHROMIUM)) throw new Error(MISSING)
const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], timeout: 60_000 })
t.teardown(() => browser.close())

/** Errors the page reported (uncaught exceptions, console errors), by page. */
const pageErrors = new WeakMap<Page, string[]>()

/** A fresh browser context (its own sessionStorage) on `<url>/console`, loaded. */
async function open (t: Teardown, url: string, width: 1280 | 420 = 1280): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(WAIT_MS)
  const errors: string[] = []
  pageErrors.set(page, errors)
  page.on('pageerror', err => errors.push(err.message))
  await page.goto(`${url}/console`)
  await page.locator('body[data-ready="true"]').waitFor()
  return page
}

/** Sends a chat message and returns the id of the task its reply belongs to, once the first event is shown. */
async function chat (page: Page, text: string): Promise<string> {
  const replies = await page.locator('.msg.agent').count()
  await page.fill('#chat-input', text)
  await page.press('#chat-input', 'Enter')
  const reply = page.locator('.msg.agent').nth(replies)
  await reply.and(page.locator('[data-task-id]')).waitFor()
  return await reply.getAttribute('data-task-id') as string
}

const row = (page: Page, id: string, state: string) => page.locator(`#tasks tr[data-task-id="${id}"][data-state="${state}"]`)

/** The agent embedded under /agent in a host app with a route of its own, listening on 127.0.0.1. */
async function embedded (t: Teardown, opts: A2AOptions): Promise<string> {
  const host = Fastify({ logger: false })
  host.get('/', async () => ({ host: true }))
  await host.register(a2a, { ...opts, prefix: '/agent' })
  const url = await host.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => host.close())
  return `${url}/agent`
}

t.test('a chat message streams its events and reply; the task reaches completed; push lands in the sink', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Console Demo Agent', delay_ms: 200 } } })
  const page = await open(t, url)
  t.equal(await page.locator('#agent-name').textContent(), 'Console Demo Agent', 'the card is shown')
  t.match(await page.locator('#card').textContent(), /"protocolVersion": "0.3.0"/)
  t.ok(await page.locator('#auth').isHidden(), 'no credentials form with security off')

  const id = await chat(page, 'hello from the browser')
  const reply = page.locator(`.msg.agent[data-task-id="${id}"]`)
  await reply.and(page.locator('[data-state="completed"]')).waitFor()
  t.equal(await reply.locator('.text').textContent(), 'hello from the browser', 'the streamed reply')
  await page.locator('#events li[data-state="in_progress"]').first().waitFor()
  t.equal(await page.locator('#events li[data-state="completed"]').count(), 1, 'each event is listed, the last one completed')
  await row(page, id, 'completed').waitFor()
  for (const button of ['cancel', 'push']) {
    t.ok(await page.locator(`#tasks tr[data-task-id="${id}"] button.${button}`).isHidden(), `a finished task shows no ${button} button`)
  }
  // Default dialect: every result is the whole Task, so the second in_progress one says what it brought.
  const lines = (await page.locator('#events li.event').allTextContents()).map(line => line.replace(/^\d+/, ''))
  t.equal(new Set(lines).size, lines.length, 'no two event lines alike')
  t.equal(await page.locator('#events li[data-state="in_progress"][data-change="artifact Agent-result"]').count(), 1, 'the artifact\'s arrival is named')

  const statusId = await chat(page, 'status')
  const statusReply = page.locator(`.msg.agent[data-task-id="${statusId}"][data-state="completed"]`)
  await statusReply.waitFor()
  const shown = JSON.parse(await statusReply.locator('.text').textContent() as string)
  t.match(shown, { status: 'ok', agent: 'Console Demo Agent' }, 'the status reply is its JSON, once')

  const replies = await page.locator('.msg.agent').count()
  await page.locator('#try-push:enabled').click()
  const pushed = page.locator('.msg.agent').nth(replies)
  await pushed.and(page.locator('[data-state="completed"]')).waitFor()
  const pushedId = await pushed.getAttribute('data-task-id') as string
  await page.locator(`#deliveries li[data-task-id="${pushedId}"][data-state="completed"]`).waitFor()
  await page.locator(`#deliveries li[data-task-id="${pushedId}"][data-state="in_progress"]`).waitFor()
  t.match(await page.locator('#sink-url').textContent(), `${url}/console/sink/`)

  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('under a prefix, a long task is shown running, its Push button points it at the sink, Cancel cancels it', async t => {
  const url = await embedded(t, { config: { agent: { name: 'Long Agent', delay_ms: 600_000 } } })
  const page = await open(t, url)
  const id = await chat(page, 'a long job')
  await page.locator(`.msg.agent[data-task-id="${id}"][data-state="in_progress"]`).waitFor()
  await page.locator('#events li[data-state="in_progress"]').first().waitFor()
  await row(page, id, 'in_progress').waitFor()
  await page.locator(`#tasks tr[data-task-id="${id}"] button.push:enabled`).click()
  await page.locator('#status', { hasText: `push config set on task ${id.slice(0, 8)}` }).waitFor()
  await page.locator(`#tasks tr[data-task-id="${id}"] button.cancel`).click()
  await row(page, id, 'canceled').waitFor()
  await page.locator(`#deliveries li[data-task-id="${id}"][data-state="canceled"]`).waitFor()
  t.match(await page.locator('#sink-url').textContent(), `${url}/console/sink/`, 'the sink URL carries the prefix')
  const canceled = page.locator(`.msg.agent[data-task-id="${id}"][data-state="canceled"]`)
  await canceled.waitFor()
  t.equal(await canceled.locator('.text').textContent(), 'Canceled before the agent answered.', 'a canceled reply says so')
  await page.locator('#events li[data-state="canceled"]').waitFor()
  t.equal(await page.locator('#tasks-error').textContent(), '')
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('tasks started elsewhere are listed and followed live through tasks/resubscribe', async t => {
  const url = await embedded(t, { config: { agent: { name: 'Long Agent', delay_ms: 600_000 } } })
  const page = await open(t, url)
  const post = async (body: unknown): Promise<any> => (await fetch(`${url}/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body)
  })).json()
  const task = (await post(rpc('message/send', { message: userMessage('elsewhere'), configuration: { blocking: false } }))).result
  await page.click('#refresh-tasks')
  await row(page, task.id, 'in_progress').waitFor()
  // Canceled outside the page: only the resubscribe stream can tell the page.
  t.equal((await post(rpc('tasks/cancel', { id: task.id }))).result.status.state, 'canceled')
  await row(page, task.id, 'canceled').waitFor()
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('with security on, calls fail until an API key is given, then succeed; it stays in sessionStorage', async t => {
  const { url } = await listen(t, {
    config: {
      protocol: { dialect: 'a2a' },
      security: { enabled: true, auth: { api_key: { header: 'X-Console-Key', keys: [{ key: API_KEY, scopes: ['admin'] }] } } },
      console: { enabled: true }
    }
  })
  const page = await open(t, url)
  t.equal(await page.locator('#api-key-header').textContent(), 'X-Console-Key', 'the header name comes from the card')
  await page.locator('#tasks-error', { hasText: 'HTTP 401' }).waitFor()
  await page.fill('#api-key', 'wrong-key')
  await page.click('#save-auth')
  await page.locator('#tasks-error', { hasText: 'invalid credentials' }).waitFor()
  await page.fill('#api-key', API_KEY)
  await page.click('#save-auth')
  await page.locator('#tasks-error:empty').waitFor({ state: 'attached' })
  const id = await chat(page, 'secured hello')
  const reply = page.locator(`.msg.agent[data-task-id="${id}"][data-state="completed"]`)
  await reply.waitFor()
  t.equal(await reply.locator('.text').textContent(), 'secured hello', 'the reply, from an a2a-dialect artifact-update')
  await page.locator('#events li[data-kind="artifact-update"]').waitFor()
  await page.locator('#events li[data-kind="status-update"][data-state="working"]').waitFor()
  await row(page, id, 'completed').waitFor()
  // A string, evaluated in the page: the test's own TypeScript has no DOM types.
  const stored = await page.evaluate('({ session: sessionStorage.getItem("a2a-console-api-key"), local: localStorage.length })')
  t.same(stored, { session: API_KEY, local: 0 })
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('the task list pages through tasks/list, ten at a time; a task started on the first page pushes the oldest on', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Paged Agent' } } })
  const post = async (body: unknown): Promise<any> => (await fetch(`${url}/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body)
  })).json()
  const made: string[] = []
  for (let i = 0; i < 23; i++) made.unshift((await post(rpc('message/send', { message: userMessage(`task ${i}`) }))).result.id)
  const page = await open(t, url)
  const ids = async () => await page.locator('#tasks tr').evaluateAll(trs => trs.map(tr => (tr as unknown as { dataset: { taskId: string } }).dataset.taskId))
  const at = async (text: string) => await page.locator('#tasks-page', { hasText: text }).waitFor()

  await at('tasks 1–10')
  t.same(await ids(), made.slice(0, 10), 'the newest ten')
  t.ok(await page.locator('#newer-tasks').isDisabled())
  await page.click('#older-tasks')
  await at('tasks 11–20')
  t.same(await ids(), made.slice(10, 20))
  await page.click('#older-tasks')
  await at('tasks 21–23')
  t.same(await ids(), made.slice(20))
  t.ok(await page.locator('#older-tasks').isDisabled(), 'the last page')
  await page.click('#newer-tasks')
  await page.click('#newer-tasks')
  await at('tasks 1–10')

  const id = await chat(page, 'one more')
  await row(page, id, 'completed').waitFor()
  t.same(await ids(), [id, ...made.slice(0, 9)], 'the new task on top, still ten rows')
  await page.click('#older-tasks')
  await at('tasks 11–20')
  t.same(await ids(), made.slice(9, 19), 'the one pushed off leads the next page')
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('at 1280 and 420 px wide nothing overflows its panel, and the buttons of a running task are in view', async t => {
  const url = await embedded(t, { config: { agent: { name: 'Console Demo Agent', delay_ms: 1_500 } } })
  for (const width of [1280, 420] as const) {
    const page = await open(t, url, width)
    await chat(page, 'status')
    await page.locator('.msg.agent[data-state="completed"]').first().waitFor()
    const long = await chat(page, 'a longer job')
    await row(page, long, 'in_progress').waitFor()
    await page.locator(`#tasks tr[data-task-id="${long}"] button.cancel`).click()
    await row(page, long, 'canceled').waitFor()
    const running = await chat(page, 'hello while you watch')
    await row(page, running, 'in_progress').waitFor()
    const overflow = await page.evaluate(`[...document.querySelectorAll('.panel, #tasks-panel table')]
      .filter(node => node.scrollWidth > node.clientWidth).map(node => node.id || node.tagName)`)
    t.same(overflow, [], `${width} px: no panel is wider inside than out`)
    const panel = await page.locator('#tasks-panel').boundingBox()
    for (const button of ['push', 'cancel']) {
      const box = await page.locator(`#tasks tr[data-task-id="${running}"] button.${button}`).boundingBox()
      t.ok(box && panel && box.x >= panel.x && box.x + box.width <= panel.x + panel.width, `${width} px: ${button} lies inside the tasks panel`)
    }
    if (process.env.UPDATE_SCREENSHOT === '1') {
      await mkdir(new URL('../docs/', import.meta.url), { recursive: true })
      await page.screenshot({ path: SCREENSHOTS[width], fullPage: width === 420 })
    }
    t.same(pageErrors.get(page), [], 'no script error')
  }
})

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

for (const dialect of ['default', 'a2a'] as const) {
  t.test(`${dialect} dialect: a chat whose connection is cut mid-task is followed again, and its reply has no gap`, async t => {
    const agent = twoGates()
    const { url, cut } = await cuttable(t, { executor: agent.executor, config: { protocol: { dialect } } })
    const page = await open(t, url)
    const text = `cut-${dialect}`
    agent.open(text, 1)
    const id = await chat(page, text)
    const reply = page.locator(`.msg.agent[data-task-id="${id}"]`)
    await reply.locator('.text', { hasText: 'c0 c1 c2 c3' }).waitFor()
    cut()
    agent.open(text, 2)
    await reply.and(page.locator('[data-state="completed"]')).waitFor()
    // Each chunk is a part of the one artifact, shown a line each.
    t.equal((await reply.locator('.text').textContent())?.replaceAll('\n', ''), CHUNKS, 'every chunk once, in order')
    const note = await page.locator('#events li.reconnect').first().textContent()
    t.match(note, dialect === 'a2a' ? /^connection lost: tasks\/resubscribe after event \d+$/ : /^connection lost: tasks\/resubscribe$/)
    t.same(pageErrors.get(page), [], 'no script error')
  })
}

t.test("the docs' EventSource snippet follows a task across a cut connection, resuming by Last-Event-ID", async t => {
  const protocol = readFileSync(new URL('../docs/protocol.md', import.meta.url), 'utf8')
  const section = protocol.slice(protocol.indexOf('#### Reconnecting a stream'))
  const snippet = /```js\n([\s\S]*?)```/.exec(section)?.[1] as string
  t.match(snippet, /new EventSource/)
  const agent = twoGates()
  const { url, cut } = await cuttable(t, { executor: agent.executor })
  const page = await open(t, url)
  const sent: any = await (await fetch(`${url}/message:send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ message: { messageId: 'es-1', role: 'ROLE_USER', parts: [{ text: 'es' }] }, configuration: { returnImmediately: true } })
  })).json()
  const taskId = sent.task.id as string
  await page.evaluate(`${snippet}
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
