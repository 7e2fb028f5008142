// The developer console driven in a real browser: headless Chromium (Debian's package) through playwright-core.
// Every wait is a locator that waits for the state the page should reach, bounded by WAIT_MS.
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import Fastify from 'fastify'
import { chromium, type Browser, type Page } from 'playwright-core'
import a2a, { type A2AOptions } from '../index.js'
import { listen, rpc, userMessage, type Teardown } from './helper.js'

const CHROMIUM = '/usr/bin/chromium'
const MISSING = `headless Chromium is required at ${CHROMIUM} for the console test: ` +
  'install it with "apt-get update && apt-get install -y chromium" (Debian), as .ci/run does'
const WAIT_MS = 15_000
const SCREENSHOT = fileURLToPath(new URL('../docs/console.png', import.meta.url))
const API_KEY = 'console-browser-key-0123456789'

if (!existsSync(CHROMIUM)) throw new Error(MISSING)
const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], timeout: 60_000 })
t.teardown(() => browser.close())

/** Errors the page reported (uncaught exceptions, console errors), by page. */
const pageErrors = new WeakMap<Page, string[]>()

/** A fresh browser context (its own sessionStorage) on `<url>/console`, loaded. */
async function open (t: Teardown, url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
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
  t.ok(await page.locator(`#tasks tr[data-task-id="${id}"] button.cancel`).isDisabled(), 'a finished task cannot be canceled')

  await page.locator('#try-push:enabled').click()
  const pushed = page.locator('.msg.agent').nth(1)
  await pushed.and(page.locator('[data-state="completed"]')).waitFor()
  const pushedId = await pushed.getAttribute('data-task-id') as string
  await page.locator(`#deliveries li[data-task-id="${pushedId}"][data-state="completed"]`).waitFor()
  await page.locator(`#deliveries li[data-task-id="${pushedId}"][data-state="in_progress"]`).waitFor()
  t.match(await page.locator('#sink-url').textContent(), `${url}/console/sink/`)

  if (process.env.UPDATE_SCREENSHOT === '1') {
    await mkdir(new URL('../docs/', import.meta.url), { recursive: true })
    await page.screenshot({ path: SCREENSHOT })
  }
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
  await page.locator(`.msg.agent[data-task-id="${id}"][data-state="canceled"]`).waitFor()
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
