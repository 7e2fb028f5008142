// The developer console's layout in a real browser (headless Chromium through playwright-core, test/console-page.ts),
// at the two widths the docs' screenshots show; UPDATE_SCREENSHOT=1 remakes those screenshots.
import { readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { BUILTIN_SKILL } from '../services/a2a/agent-card.js'
import { createBuiltinAgent } from '../services/agent/builtin.js'
import type { AgentExecutor } from '../index.js'
import { chat, embedded, open, pageErrors, row } from './console-page.js'

const SCREENSHOTS = { 1280: fileURLToPath(new URL('../docs/console.png', import.meta.url)), 420: fileURLToPath(new URL('../docs/console-420.png', import.meta.url)) }

/** The width and height a PNG file's header gives. */
function pngSize (path: string): { width: number, height: number } {
  const header = readFileSync(path).subarray(0, 24)
  return { width: header.readUInt32BE(16), height: header.readUInt32BE(20) }
}

/** The task measured on screen: it stays in_progress, with its push and cancel buttons, until the test cancels it. */
const WATCHED = 'hello while you watch'

/** The built-in agent with a 1.5 s delay, except for the watched task, which is held until it is canceled. */
function demoAgent (): AgentExecutor {
  const quick = createBuiltinAgent({ delayMs: 1_500 })
  const held = createBuiltinAgent({ delayMs: 10 * 60_000 })
  return ctx => ctx.message.parts.some(part => part.kind === 'text' && part.text === WATCHED) ? held(ctx) : quick(ctx)
}

t.test('at 1280 and 420 px wide nothing overflows, the controls are in view, and the docs\' screenshots are that wide', async t => {
  // The card lists the built-in skill, as it does for the built-in agent, so the console shows its hints.
  const url = await embedded(t, { config: { agent: { name: 'Console Demo Agent', skills: [BUILTIN_SKILL] } }, executor: demoAgent() })
  for (const width of [1280, 420] as const) {
    const page = await open(t, url, width)
    await page.locator('#hints button').first().waitFor()
    const done = await chat(page, 'status')
    await page.locator(`.msg.agent[data-task-id="${done}"][data-state="completed"]`).waitFor()
    const long = await chat(page, 'a longer job')
    await row(page, long, 'in_progress').waitFor()
    await page.locator(`#tasks tr[data-task-id="${long}"] button.cancel`).click()
    await row(page, long, 'canceled').waitFor()
    const running = await chat(page, WATCHED)
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
    await page.locator(`#tasks tr[data-task-id="${running}"] button.cancel`).click()
    await row(page, running, 'canceled').waitFor()
    t.same(pageErrors.get(page), [], 'no script error')
  }
})
