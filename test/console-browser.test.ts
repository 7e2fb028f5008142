// The developer console driven in a real browser (headless Chromium through playwright-core, test/console-page.ts):
// the versions and their state names, the chat with its hints and Stop, a task's detail, ids, the task list, security.
import t from 'tap'
import type { Page } from 'playwright-core'
import type { AgentExecutor } from '../index.js'
import { BUILTIN_HINTS } from '../services/console/hints.js'
import { chat, embedded, open, pageErrors, row, speak } from './console-page.js'
import { listen, rpc, userMessage } from './helper.js'

const API_KEY = 'console-browser-key-0123456789'

/** The text of every state the page shows for a task: its row, its reply's badge, its events. */
async function spelled (page: Page, id: string): Promise<{ row: string | null, reply: string | null }> {
  return {
    row: await page.locator(`#tasks tr[data-task-id="${id}"] td.state`).textContent(),
    reply: await page.locator(`.msg.agent[data-task-id="${id}"] .who .state`).textContent()
  }
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

t.test('with an extension the card marks required, the console activates it and its chat gets through', async t => {
  const uri = 'urn:example:console-required:v1'
  let seen: readonly string[] | undefined
  const executor: AgentExecutor = async function * (ctx) {
    seen = ctx.extensions
    yield 'extended'
  }
  const { url } = await listen(t, { executor, config: { agent: { name: 'Extended Agent', extensions: [{ uri, required: true }] } } })
  // Without the extension, the server refuses the call the console makes.
  const refused = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify(rpc('SendMessage', { message: { role: 'ROLE_USER', messageId: 'no-extension', parts: [{ text: 'hi' }] } }))
  })
  t.equal((await refused.json() as { error?: { code: number } }).error?.code, -32008, 'refused without it')
  const page = await open(t, url)
  const id = await chat(page, 'hello')
  const reply = page.locator(`.msg.agent[data-task-id="${id}"]`)
  await reply.and(page.locator('[data-state="completed"]')).waitFor()
  t.equal(await reply.locator('.text').textContent(), 'extended', 'the agent answered')
  t.same(seen, [uri], 'the agent saw the extension activated')
  t.same(pageErrors.get(page), [], 'no script error')
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
  // Two clicks in a row: the first page's list may answer before the second's; the newest load is the one shown.
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
