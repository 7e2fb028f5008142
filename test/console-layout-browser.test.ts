// The developer console's layout in a real browser (headless Chromium through playwright-core, test/console-page.ts),
// at the two widths the docs' screenshots show; UPDATE_SCREENSHOT=1 remakes those screenshots.
import { readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { chat, embedded, open, pageErrors, row } from './console-page.js'

const SCREENSHOTS = { 1280: fileURLToPath(new URL('../docs/console.png', import.meta.url)), 420: fileURLToPath(new URL('../docs/console-420.png', import.meta.url)) }

/** The width and height a PNG file's header gives. */
function pngSize (path: string): { width: number, height: number } {
  const header = readFileSync(path).subarray(0, 24)
  return { width: header.readUInt32BE(16), height: header.readUInt32BE(20) }
}

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
