// The developer console driven in a real browser: headless Chromium (Debian's package) through playwright-core.
// Every wait is a locator that waits for the state the page should reach, bounded by WAIT_MS.
import { existsSync, readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import Fastify from 'fastify'
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core'
import type { Socket } from 'node:net'
import a2a, { type A2AOptions, type AgentExecutor } from '../index.js'
import { BUILTIN_HINTS } from '../services/console/hints.js'
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
async function open (t: Teardown, url: string, width: 1280 | 420 = 1280, extra: BrowserContextOptions = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, ...extra })
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

/** Makes the console speak another A2A version, through its badge. */
async function speak (page: Page, version: '1.0' | '0.3'): Promise<void> {
  await page.click(`#versions button[data-version="${version}"]`)
  await page.locator(`#versions button[data-version="${version}"][aria-pressed="true"]`).waitFor()
}

const row = (page: Page, id: string, state: string) => page.locator(`#tasks tr[data-task-id="${id}"][data-state="${state}"]`)

/** The text of every state the page shows for a task: its row, its reply's badge, its events. */
async function spelled (page: Page, id: string): Promise<{ row: string | null, reply: string | null }> {
  return {
    row: await page.locator(`#tasks tr[data-task-id="${id}"] td.state`).textContent(),
    reply: await page.locator(`.msg.agent[data-task-id="${id}"] .who .state`).textContent()
  }
}

/** The width and height a PNG file's header gives. */
function pngSize (path: string): { width: number, height: number } {
  const header = readFileSync(path).subarray(0, 24)
  return { width: header.readUInt32BE(16), height: header.readUInt32BE(20) }
}

/** The agent embedded under /agent in a host app with a route of its own, listening on 127.0.0.1. */
async function embedded (t: Teardown, opts: A2AOptions): Promise<string> {
  const host = Fastify({ logger: false })
  host.get('/', async () => ({ host: true }))
  await host.register(a2a, { ...opts, prefix: '/agent' })
  const url = await host.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => host.close())
  return `${url}/agent`
}

/** An agent that echoes, asks on "ask" (input_required) and on "wait" runs until its task is canceled. */
const asking: AgentExecutor = async function * (ctx) {
  const part = ctx.message.parts[0]
  const text = part.kind === 'text' ? part.text : ''
  if (text === 'ask') {
    yield { kind: 'status', state: 'input_required', message: 'Which one?' }
    return
  }
  if (text === 'wait') {
    yield 'waiting'
    await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
    return
  }
  yield `echo: ${text}`
}

t.test('by default the console speaks v1.0: a chat streams its events and reply, push lands in the sink', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Console Demo Agent', delay_ms: 200 } } })
  const page = await open(t, url)
  t.equal(await page.locator('#agent-name').textContent(), 'Console Demo Agent', 'the card is shown')
  t.same(await page.locator('#versions button').allTextContents(), ['v1.0', 'v0.3'], 'the badge names both versions the server speaks')
  t.equal(await page.locator('#versions button[aria-pressed="true"]').textContent(), 'v1.0', 'and marks the one the console speaks')
  t.equal(await page.locator('#chat-method').textContent(), 'SendStreamingMessage')
  t.equal(await page.locator('#card-panel').getAttribute('open'), null, 'the agent card starts folded')
  t.ok(await page.locator('#card').isHidden())
  await page.click('#card-panel summary')
  await page.locator('#card').waitFor()
  t.match(await page.locator('#card').textContent(), /"protocolVersion": "0.3.0"/, 'unfolded, it shows the card')
  t.ok(await page.locator('#auth').isHidden(), 'no credentials form with security off')

  const id = await chat(page, 'hello from the browser')
  const reply = page.locator(`.msg.agent[data-task-id="${id}"]`)
  await reply.and(page.locator('[data-state="completed"]')).waitFor()
  t.equal(await reply.locator('.text').textContent(), 'hello from the browser', 'the streamed reply')
  await page.locator('#events li.head', { hasText: 'SendStreamingMessage' }).waitFor()
  await page.locator('#events li[data-kind="status-update"][data-state="in_progress"]').first().waitFor()
  t.equal(await page.locator('#events li[data-state="completed"]').count(), 1, 'each event is listed, the last one completed')
  t.same(await page.locator('#events li.event .kind').allTextContents(), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'],
    'under the names v1.0 gives them')
  await row(page, id, 'completed').waitFor()
  t.equal(await page.locator(`#tasks tr[data-task-id="${id}"] td.state`).textContent(), 'TASK_STATE_COMPLETED')
  for (const button of ['cancel', 'push']) {
    t.ok(await page.locator(`#tasks tr[data-task-id="${id}"] button.${button}`).isHidden(), `a finished task shows no ${button} button`)
  }
  const lines = (await page.locator('#events li.event').allTextContents()).map(line => line.replace(/^\d+/, ''))
  t.equal(new Set(lines).size, lines.length, 'no two event lines alike')

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
  t.equal(await page.locator(`#deliveries li[data-task-id="${pushedId}"][data-state="completed"] .state`).textContent(), 'TASK_STATE_COMPLETED',
    'a v1.0 push config gets v1.0 bodies')
  t.match(await page.locator('#sink-url').textContent(), `${url}/console/sink/`)
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('in v0.3 (default dialect) every event is the whole Task, and a line whose state did not change says what did', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Console Demo Agent', delay_ms: 200 } } })
  const page = await open(t, url)
  await speak(page, '0.3')
  t.equal(await page.locator('#chat-method').textContent(), 'message/stream')
  const id = await chat(page, 'hello in v0.3')
  await page.locator(`.msg.agent[data-task-id="${id}"][data-state="completed"]`).waitFor()
  await page.locator('#events li.head', { hasText: 'message/stream' }).waitFor()
  const lines = (await page.locator('#events li.event').allTextContents()).map(line => line.replace(/^\d+/, ''))
  t.equal(new Set(lines).size, lines.length, 'no two event lines alike')
  t.equal(await page.locator('#events li[data-state="in_progress"][data-change="artifact Agent-result"]').count(), 1, 'the artifact\'s arrival is named')
  await page.reload()
  await page.locator('body[data-ready="true"]').waitFor()
  t.equal(await page.locator('#versions button[aria-pressed="true"]').textContent(), 'v0.3', 'the choice lasts as long as the tab')
  t.same(pageErrors.get(page), [], 'no script error')
})

for (const dialect of ['default', 'a2a'] as const) {
  t.test(`${dialect} dialect: states are spelled as the selected version spells them, and again after a switch`, async t => {
    const { url } = await listen(t, { executor: asking, config: { protocol: { dialect } } })
    const page = await open(t, url)
    const done = await chat(page, 'hi')
    await row(page, done, 'completed').waitFor()
    const asked = await chat(page, 'ask')
    await row(page, asked, 'input_required').waitFor()
    const running = await chat(page, 'wait')
    await row(page, running, 'in_progress').waitFor()
    await page.locator(`.msg.agent[data-task-id="${running}"][data-state="in_progress"]`).waitFor()
    const v10 = { completed: 'TASK_STATE_COMPLETED', input_required: 'TASK_STATE_INPUT_REQUIRED', in_progress: 'TASK_STATE_WORKING' }
    const v03 = dialect === 'a2a'
      ? { completed: 'completed', input_required: 'input-required', in_progress: 'working' }
      : { completed: 'completed', input_required: 'input_required', in_progress: 'in_progress' }
    const check = async (names: typeof v10, when: string) => {
      t.same(await spelled(page, done), { row: names.completed, reply: names.completed }, `${when}: completed`)
      t.same(await spelled(page, asked), { row: names.input_required, reply: names.input_required }, `${when}: input required`)
      t.same(await spelled(page, running), { row: names.in_progress, reply: names.in_progress }, `${when}: working`)
      t.equal(await page.locator('#events li[data-state="in_progress"] .state').first().textContent(), names.in_progress, `${when}: the event log`)
    }
    await check(v10, 'v1.0')
    await speak(page, '0.3')
    await check(v03, 'v0.3')
    const again = await chat(page, 'hi again')
    await row(page, again, 'completed').waitFor()
    t.equal(await page.locator(`.msg.agent[data-task-id="${again}"] .who .state`).textContent(), 'completed', 'a task made in v0.3')
    await speak(page, '1.0')
    await check(v10, 'back in v1.0')
    await page.click(`#tasks tr[data-task-id="${running}"] button.cancel`)
    await row(page, running, 'canceled').waitFor()
    t.equal(await page.locator('#tasks-error').textContent(), '', 'every call of either version answered')
    t.same(pageErrors.get(page), [], 'no script error')
  })
}

t.test('the empty chat offers the built-in agent\'s commands; a click fills the input', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Hint Agent' } } })
  const page = await open(t, url)
  const hints = page.locator('#hints button')
  t.same(await hints.allTextContents(), BUILTIN_HINTS.map(hint => hint.text), 'one per command')
  t.same(await hints.evaluateAll(buttons => buttons.map(b => (b as unknown as { title: string }).title)), BUILTIN_HINTS.map(hint => hint.title),
    'each says what it does')
  await hints.filter({ hasText: /^capabilities$/ }).click()
  t.equal(await page.inputValue('#chat-input'), 'capabilities', 'the hint fills the input, unsent')
  t.equal(await page.locator('.msg').count(), 0)
  await page.press('#chat-input', 'Enter')
  const reply = page.locator('.msg.agent[data-state="completed"]')
  await reply.waitFor()
  t.match(JSON.parse(await reply.locator('.text').textContent() as string), { agent: 'Hint Agent', methods: [] }, 'the capabilities tool answered')
  t.ok(await page.locator('#hints').isHidden(), 'the hints leave once the chat has begun')

  const custom = await listen(t, {
    config: { agent: { name: 'Skilled Agent', skills: [{ id: 'weather', name: 'Weather', tags: ['weather'], examples: ['rain in Paris?', 'wind in Oslo?'] }] } }
  })
  const other = await open(t, custom.url)
  const offered = other.locator('#hints button')
  t.same(await offered.allTextContents(), ['rain in Paris?', 'wind in Oslo?'], 'another agent\'s hints are its skills\' examples')
  t.equal(await offered.first().getAttribute('title'), 'Weather')
  t.same(pageErrors.get(page), [], 'no script error')
  t.same(pageErrors.get(other), [], 'no script error')
})

t.test('a task row opens its detail: history and artifacts by GetTask, its state timeline, the sink\'s deliveries', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Detail Agent', delay_ms: 200 } } })
  const page = await open(t, url)
  const other = await chat(page, 'another task')
  await row(page, other, 'completed').waitFor()
  await page.locator('#try-push:enabled').click()
  const pushed = page.locator('.msg.agent').nth(1)
  await pushed.and(page.locator('[data-state="completed"]')).waitFor()
  const id = await pushed.getAttribute('data-task-id') as string
  await page.locator(`#deliveries li[data-task-id="${id}"][data-state="completed"]`).waitFor()
  await page.locator(`#deliveries li[data-task-id="${id}"][data-state="in_progress"]`).waitFor()
  t.ok(await page.locator('#detail-panel').isHidden(), 'no detail until a row is clicked')

  await page.click(`#tasks tr[data-task-id="${id}"] td.state`)
  await page.locator(`#detail-panel[data-task-id="${id}"][data-loaded="true"]`).waitFor()
  t.ok(await page.locator(`#tasks tr[data-task-id="${id}"].selected`).isVisible(), 'its row is marked')
  t.equal(await page.locator('#detail-id code').getAttribute('title'), id)
  t.equal(await page.locator('#detail-state').textContent(), 'TASK_STATE_COMPLETED')
  t.match(await page.locator('#detail-meta').textContent(), /^context [0-9a-f]{8}copy · GetTask, historyLength 50$/)
  t.same(await page.locator('#detail-history li[data-role="user"] .text').allTextContents(), ['push test'], 'the history')
  t.match(await page.locator('#detail-artifacts .artifact h4').textContent(), /^Agent-result/)
  t.equal(await page.locator('#detail-artifacts .artifact pre').textContent(), 'push test', 'the artifacts')
  const steps = page.locator('#detail-timeline li')
  t.same(await steps.evaluateAll(lis => lis.map(li => (li as unknown as { dataset: { state: string } }).dataset.state)), ['submitted', 'in_progress', 'completed'],
    'the states seen, in order')
  t.same(await steps.locator('.state').allTextContents(), ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'])
  t.match(await page.locator('#detail-timeline li[data-state="completed"] .hint').textContent(), /stream.*push.*get|stream.*get.*push/, 'and where each was seen')
  const delivered = page.locator('#detail-deliveries li.delivery')
  t.same((await delivered.evaluateAll(lis => lis.map(li => (li as unknown as { dataset: { taskId: string } }).dataset.taskId))).filter(d => d !== id), [],
    'the deliveries of this task only')
  t.ok(await page.locator('#detail-deliveries li[data-state="completed"]').count() >= 1, 'its completed delivery')
  t.ok(await page.locator('#detail-deliveries li[data-state="in_progress"]').count() >= 1, 'its in_progress one')

  await speak(page, '0.3')
  await page.locator('#detail-meta', { hasText: 'tasks/get, historyLength 50' }).waitFor()
  await page.locator(`#detail-panel[data-task-id="${id}"][data-loaded="true"]`).waitFor()
  t.equal(await page.locator('#detail-state').textContent(), 'completed', 'read again in v0.3')
  t.same(await steps.locator('.state').allTextContents(), ['submitted', 'in_progress', 'completed'])

  await page.focus(`#tasks tr[data-task-id="${other}"]`)
  await page.keyboard.press('Enter')
  await page.locator(`#detail-panel[data-task-id="${other}"][data-loaded="true"]`).waitFor()
  t.same(await page.locator('#detail-history li .text').allTextContents(), ['another task'], 'another row (Enter on it), another task')
  t.equal(await page.locator('#detail-deliveries li').textContent(), 'none')
  await page.click('#detail-close')
  t.ok(await page.locator('#detail-panel').isHidden(), 'closed')
  t.equal(await page.locator('#tasks tr.selected').count(), 0)
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('ids show whole on hover and copy whole: through the clipboard, else by selecting them', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Copy Agent' } } })
  const page = await open(t, url, 1280, { permissions: ['clipboard-read', 'clipboard-write'] })
  const id = await chat(page, 'copy me')
  await row(page, id, 'completed').waitFor()
  const cell = page.locator(`#tasks tr[data-task-id="${id}"] .id`)
  t.equal(await cell.locator('code').textContent(), id.slice(0, 8), 'short in the list')
  t.equal(await cell.locator('code').getAttribute('title'), id, 'whole on hover')
  t.equal(await page.locator(`#events li.event .id code[title="${id}"]`).count(), 4, 'in the event log too')
  await cell.locator('button.copy').click()
  await page.locator('#status', { hasText: `copied ${id}` }).waitFor()
  t.equal(await page.evaluate('navigator.clipboard.readText()'), id, 'the whole id is on the clipboard')
  t.ok(await page.locator('#detail-panel').isHidden(), 'copying is not opening')

  const bare = await open(t, url)
  await bare.evaluate('Object.defineProperty(Navigator.prototype, "clipboard", { get: () => undefined })')
  const listed = bare.locator(`#tasks tr[data-task-id="${id}"] .id`)
  await listed.locator('button.copy').click()
  await bare.locator('#status', { hasText: `selected ${id}` }).waitFor()
  t.equal(await listed.locator('code').textContent(), id, 'without a clipboard the id is shown whole')
  t.equal(await bare.evaluate('getSelection().toString()'), id, 'and selected')
  t.same(pageErrors.get(page), [], 'no script error')
  t.same(pageErrors.get(bare), [], 'no script error')
})

t.test('Stop cancels the running task of the last message; it is off before and after', async t => {
  const { url } = await listen(t, { config: { agent: { name: 'Long Agent', delay_ms: 600_000 } } })
  const page = await open(t, url)
  t.ok(await page.locator('#stop').isDisabled(), 'nothing to stop yet')
  const id = await chat(page, 'a long job')
  await page.locator(`.msg.agent[data-task-id="${id}"][data-state="in_progress"]`).waitFor()
  await page.click(`#tasks tr[data-task-id="${id}"] td.state`)
  await page.locator(`#detail-panel[data-task-id="${id}"][data-loaded="true"]`).waitFor()
  t.equal(await page.locator('#detail-state').textContent(), 'TASK_STATE_WORKING')
  await page.locator('#stop:enabled').click()
  const canceled = page.locator(`.msg.agent[data-task-id="${id}"][data-state="canceled"]`)
  await canceled.waitFor()
  t.equal(await canceled.locator('.text').textContent(), 'Canceled before the agent answered.')
  await row(page, id, 'canceled').waitFor()
  await page.locator('#stop:disabled').waitFor()
  await page.locator('#detail-state[data-state="canceled"]').waitFor()
  t.equal(await page.locator('#detail-state').textContent(), 'TASK_STATE_CANCELED', 'the open detail follows')
  await page.locator('#detail-timeline li[data-state="canceled"]').waitFor()
  t.equal(await page.locator('#tasks-error').textContent(), '')
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
  t.ok(await page.locator('#detail-panel').isHidden(), 'the row\'s buttons open no detail')
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('tasks started elsewhere are listed and followed live through SubscribeToTask', async t => {
  const url = await embedded(t, { config: { agent: { name: 'Long Agent', delay_ms: 600_000 } } })
  const page = await open(t, url)
  const post = async (body: unknown): Promise<any> => (await fetch(`${url}/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body)
  })).json()
  const task = (await post(rpc('message/send', { message: userMessage('elsewhere'), configuration: { blocking: false } }))).result
  await page.click('#refresh-tasks')
  await row(page, task.id, 'in_progress').waitFor()
  // Canceled outside the page: only the subscribe stream can tell the page.
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
  await speak(page, '0.3')
  const id = await chat(page, 'secured hello')
  const reply = page.locator(`.msg.agent[data-task-id="${id}"][data-state="completed"]`)
  await reply.waitFor()
  t.equal(await reply.locator('.text').textContent(), 'secured hello', 'the reply, from an a2a-dialect artifact-update')
  await page.locator('#events li[data-kind="artifact-update"]').waitFor()
  const working = page.locator('#events li[data-kind="status-update"][data-state="in_progress"]')
  await working.waitFor()
  t.equal(await working.locator('.state').textContent(), 'working', 'spelled as the a2a dialect spells it')
  await row(page, id, 'completed').waitFor()
  // A string, evaluated in the page: the test's own TypeScript has no DOM types.
  const stored = await page.evaluate('({ session: sessionStorage.getItem("a2a-console-api-key"), local: localStorage.length })')
  t.same(stored, { session: API_KEY, local: 0 })
  t.same(pageErrors.get(page), [], 'no script error')
})

t.test('the task list pages through ListTasks, ten at a time; a task started on the first page pushes the oldest on', async t => {
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

t.test('at 1280 and 420 px wide nothing overflows, the controls are in view, and the docs\' screenshots are that wide', async t => {
  const url = await embedded(t, { config: { agent: { name: 'Console Demo Agent', delay_ms: 1_500 } } })
  for (const width of [1280, 420] as const) {
    const page = await open(t, url, width)
    await page.locator('#hints button').first().waitFor()
    const done = await chat(page, 'status')
    await page.locator(`.msg.agent[data-task-id="${done}"][data-state="completed"]`).waitFor()
    const long = await chat(page, 'a longer job')
    await row(page, long, 'in_progress').waitFor()
    await page.locator(`#tasks tr[data-task-id="${long}"] button.cancel`).click()
    await row(page, long, 'canceled').waitFor()
    const running = await chat(page, 'hello while you watch')
    await row(page, running, 'in_progress').waitFor()
    await page.click(`#tasks tr[data-task-id="${done}"] td.state`)
    await page.locator(`#detail-panel[data-task-id="${done}"][data-loaded="true"]`).waitFor()
    const overflow = await page.evaluate(`[document.documentElement, ...document.querySelectorAll('.panel, #tasks-panel table, .detail-grid')]
      .filter(node => node.scrollWidth > node.clientWidth).map(node => node.id || node.className || node.tagName)`)
    t.same(overflow, [], `${width} px: nothing is wider inside than out, the page included`)
    const controls = ['#versions button[data-version="1.0"]', '#versions button[data-version="0.3"]', '#send', '#stop', '#refresh-tasks', '#try-push',
      `#tasks tr[data-task-id="${running}"] button.push`, `#tasks tr[data-task-id="${running}"] button.cancel`,
      `#tasks tr[data-task-id="${running}"] button.copy`, '#detail-refresh', '#detail-close', '#card-panel summary']
    for (const selector of controls) {
      const box = await page.locator(selector).boundingBox()
      t.ok(box && box.width > 0 && box.x >= 0 && box.x + box.width <= width, `${width} px: ${selector} is in view`)
    }
    const panel = await page.locator('#tasks-panel').boundingBox()
    for (const button of ['push', 'cancel']) {
      const box = await page.locator(`#tasks tr[data-task-id="${running}"] button.${button}`).boundingBox()
      t.ok(box && panel && box.x >= panel.x && box.x + box.width <= panel.x + panel.width, `${width} px: ${button} lies inside the tasks panel`)
    }
    if (process.env.UPDATE_SCREENSHOT === '1') {
      await mkdir(new URL('../docs/', import.meta.url), { recursive: true })
      await page.screenshot({ path: SCREENSHOTS[width], fullPage: true })
    }
    t.equal(pngSize(SCREENSHOTS[width]).width, width, `${width} px: the screenshot in docs/ is that wide (UPDATE_SCREENSHOT=1 remakes it)`)
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
