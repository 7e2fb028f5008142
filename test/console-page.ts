// The developer console in a real browser, for the browser tests: headless Chromium (Debian's package) through
// playwright-core, launched once per test file and closed at its end. Every wait is a locator that waits for the state
// the page should reach, bounded by WAIT_MS.
import { existsSync } from 'node:fs'
import Fastify from 'fastify'
import t from 'tap'
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core'
import a2a, { type A2AOptions } from '../index.js'
import type { Teardown } from './helper.js'

const CHROMIUM = '/usr/bin/chromium'
const MISSING = `headless Chromium is required at ${CHROMIUM} for the console test: ` +
  'install it with "apt-get update && apt-get install -y chromium" (Debian), as .ci/run does'
export const WAIT_MS = 15_000

if (!existsSync(CHROMIUM)) throw new Error(MISSING)
const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], timeout: 60_000 })
t.teardown(() => browser.close())

/** Errors the page reported (uncaught exceptions, console errors), by page. */
export const pageErrors = new WeakMap<Page, string[]>()

/** A fresh browser context (its own sessionStorage) on `<url>/console`, loaded. */
export async function open (t: Teardown, url: string, width: 1280 | 420 = 1280, extra: BrowserContextOptions = {}): Promise<Page> {
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
export async function chat (page: Page, text: string): Promise<string> {
  const replies = await page.locator('.msg.agent').count()
  await page.fill('#chat-input', text)
  await page.press('#chat-input', 'Enter')
  const reply = page.locator('.msg.agent').nth(replies)
  await reply.and(page.locator('[data-task-id]')).waitFor()
  return await reply.getAttribute('data-task-id') as string
}

/** Makes the console speak another A2A version, through its badge. */
export async function speak (page: Page, version: '1.0' | '0.3'): Promise<void> {
  await page.click(`#versions button[data-version="${version}"]`)
  await page.locator(`#versions button[data-version="${version}"][aria-pressed="true"]`).waitFor()
}

/** The row of task `id` once it shows `state`. */
export const row = (page: Page, id: string, state: string) => page.locator(`#tasks tr[data-task-id="${id}"][data-state="${state}"]`)

/** The agent embedded under /agent in a host app with a route of its own, listening on 127.0.0.1. */
export async function embedded (t: Teardown, opts: A2AOptions): Promise<string> {
  const host = Fastify({ logger: false })
  host.get('/', async () => ({ host: true }))
  await host.register(a2a, { ...opts, prefix: '/agent' })
  const url = await host.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => host.close())
  return `${url}/agent`
}
