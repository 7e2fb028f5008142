// The second half of the console's browser script (see script.ts): the task list kept live through resubscribe
// streams, the webhook sink panel, the chat form, credentials, and start-up.

/** Task rows, the sink, the chat and start-up; runs after SCRIPT_CORE in the same script element. */
export const SCRIPT_UI = String.raw`
// Tasks ------------------------------------------------------------------------------------------------------------
const pushReady = () => Boolean(card && card.capabilities && card.capabilities.pushNotifications && sinkUrl)
function tasksError (message) { $('tasks-error').textContent = message || '' }

function row (id) {
  const tr = el('tr')
  tr.dataset.taskId = id
  const idCell = el('td')
  idCell.append(el('code', '', short(id)))
  idCell.title = id
  const actions = el('td', 'actions')
  const cancel = el('button', 'cancel quiet', 'Cancel')
  const push = el('button', 'push quiet', 'Push')
  cancel.type = push.type = 'button'
  push.title = 'Deliver this task\'s next states to the webhook sink'
  cancel.addEventListener('click', () => cancelTask(id))
  push.addEventListener('click', () => pushTask(id))
  actions.append(push, cancel)
  tr.append(idCell, el('td', 'state'), el('td', 'updated'), actions)
  rows.set(id, tr)
  return tr
}
// Shows a task's state in its row. place makes the row when the page has none: 'top' (a task just started here,
// on the first page) or 'end' (a page being loaded); without it only a row on the page is updated. Nothing leaves
// a terminal state, so a late, older answer cannot undo a newer one.
function show (id, status, place) {
  let tr = rows.get(id)
  if (!tr) {
    if (!place) return
    tr = row(id)
    if (place === 'end') $('tasks').append(tr)
    else {
      $('tasks').prepend(tr)
      if (rows.size > PAGE_SIZE) {
        const last = $('tasks').lastElementChild
        rows.delete(last.dataset.taskId)
        last.remove()
        hasOlder = true
      }
      pager()
    }
  }
  if (TERMINAL.has(tr.dataset.state) && !TERMINAL.has(status.state)) return
  tr.dataset.state = status.state
  const cell = tr.querySelector('.state')
  cell.className = stateClass(status.state)
  cell.textContent = status.state
  tr.querySelector('.updated').textContent = clock(status.timestamp)
  // What cannot be used on a finished task is not shown.
  tr.querySelector('.cancel').hidden = tr.querySelector('.push').hidden = TERMINAL.has(status.state)
  tr.querySelector('.push').disabled = !pushReady()
}
function track (r, place) {
  if (r.kind === 'task' || r.kind === 'status-update') show(taskIdOf(r), r.status, place)
}
// The task list, PAGE_SIZE at a time through tasks/list. Page tokens are cursors, so a page is reached by walking
// from the first: a task started meanwhile never shifts a task out of sight.
async function listPage (index) {
  let token = ''
  for (let i = 0; ; i++) {
    const params = { pageSize: PAGE_SIZE, historyLength: 0 }
    if (token) params.pageToken = token
    const result = await rpc('tasks/list', params)
    if (i === index || !result.nextPageToken) return { index: i, tasks: result.tasks, older: Boolean(result.nextPageToken) }
    token = result.nextPageToken
  }
}
function pager () {
  const first = page * PAGE_SIZE
  $('tasks-pager').hidden = page === 0 && !hasOlder
  $('newer-tasks').disabled = page === 0
  $('older-tasks').disabled = !hasOlder
  $('tasks-page').textContent = rows.size === 0 ? 'no tasks' : 'tasks ' + (first + 1) + '–' + (first + rows.size)
}
async function loadTasks () {
  try {
    const listed = await listPage(page)
    tasksError('')
    page = listed.index
    hasOlder = listed.older
    for (const tr of rows.values()) tr.remove()
    rows.clear()
    for (const task of listed.tasks) show(task.id, task.status, 'end')
    pager()
    for (const task of listed.tasks) if (!TERMINAL.has(task.status.state)) watch(task.id)
  } catch (err) {
    tasksError('tasks/list: ' + err.message)
  }
}
function turnPage (by) {
  page = Math.max(0, page + by)
  loadTasks()
}
// Follows a running task with tasks/resubscribe until it ends; a few at a time.
function watch (id) {
  if (watched.has(id) || watched.size >= MAX_WATCHED) return
  watched.add(id)
  stream('tasks/resubscribe', { id }, track)
    .catch(err => tasksError('tasks/resubscribe ' + short(id) + ': ' + err.message))
    .finally(() => watched.delete(id))
}
async function cancelTask (id) {
  try {
    track(await rpc('tasks/cancel', { id }))
    tasksError('')
  } catch (err) {
    tasksError('tasks/cancel ' + short(id) + ': ' + err.message)
  }
}

// Push: the server's own webhook sink -----------------------------------------------------------------------------
function sinkToken () {
  let token = store.getItem(KEYS.sink)
  if (!token || !TOKEN.test(token)) {
    token = randomToken(24)
    store.setItem(KEYS.sink, token)
  }
  return token
}
const sinkConfig = () => ({ url: sinkUrl, token: 'console' })
function arm () {
  store.setItem(KEYS.armed, '1')
  clearTimeout(sinkTimer)
  sinkTimer = setTimeout(pollSink, SINK_POLL_MS)
}
async function pollSink () {
  try {
    const res = await fetch(new URL('console/sink/' + sinkToken(), base), { cache: 'no-store' })
    const body = await res.json()
    sinkUrl = body.url
    $('sink-url').textContent = sinkUrl || 'unavailable: the server listens on no TCP port'
    for (const delivery of body.deliveries.slice().reverse()) if (delivery.seq > lastSeq) addDelivery(delivery)
  } catch (err) {
    $('sink-url').textContent = 'unavailable: ' + err.message
  }
  $('try-push').disabled = !pushReady()
  $('try-push').title = pushReady() ? 'Send a message whose task reports to the sink' : 'Push notifications are off or the sink is unavailable'
  for (const tr of rows.values()) tr.querySelector('.push').disabled = !pushReady()
  if (store.getItem(KEYS.armed)) arm()
}
function addDelivery (d) {
  lastSeq = d.seq
  const li = el('li', 'delivery')
  if (d.taskId) li.dataset.taskId = d.taskId
  if (d.state) li.dataset.state = d.state
  li.append(el('span', 'n', clock(d.receivedAt)), el('code', '', short(d.taskId)), el('span', stateClass(d.state), d.state || '(not a task)'),
    el('span', 'hint', Object.keys(d.headers).filter(h => h.startsWith('webhook-') || h.startsWith('x-')).join(' ')))
  const details = el('details')
  let body = d.body
  try { body = JSON.stringify(JSON.parse(d.body), null, 2) } catch {}
  details.append(el('summary', '', 'body'), el('pre', '', body))
  li.append(details)
  const list = $('deliveries')
  list.prepend(li)
  while (list.children.length > 50) list.lastChild.remove()
}
async function pushTask (id) {
  try {
    await rpc('tasks/pushNotificationConfig/set', { taskId: id, pushNotificationConfig: sinkConfig() })
    arm()
    say('push config set on task ' + short(id))
  } catch (err) {
    tasksError('tasks/pushNotificationConfig/set ' + short(id) + ': ' + err.message)
  }
}

// Chat --------------------------------------------------------------------------------------------------------------
async function send (text, push) {
  const message = { kind: 'message', role: 'user', messageId: 'console-' + randomToken(12), parts: [{ kind: 'text', text }] }
  const params = { message }
  if (push) params.configuration = { pushNotificationConfig: sinkConfig() }
  const bubble = el('div', 'msg user')
  bubble.append(el('div', 'who', 'you'), el('div', 'text', text))
  $('transcript').append(bubble)
  appendLog(el('li', 'head', 'message/stream' + (push ? ' with push to the sink' : '')))
  const view = replyView()
  let id = null
  let lastId = null
  const onResult = (r, eventId) => {
    if (eventId !== null) lastId = eventId
    if (id === null) {
      id = taskIdOf(r)
      watched.add(id)
    }
    logEvent(r)
    view.apply(r)
    track(r, page === 0 ? 'top' : undefined)
  }
  try {
    await stream('message/stream', params, onResult)
  } catch (err) {
    // A connection cut mid-task, not an answer of the server's: the task goes on, so follow it again.
    if (id === null || err instanceof RpcError || !await resume(id, () => lastId, onResult)) {
      view.fail(err.message)
      say('message/stream: ' + err.message, true)
    }
  } finally {
    if (id !== null) watched.delete(id)
  }
}
// Follows a task whose stream was cut, from the last event seen (Last-Event-ID): what was missed, then live events.
// Without ids (the seed dialect) the task as it stands comes first. A few tries, further apart each time.
async function resume (id, lastId, onResult) {
  for (let attempt = 0; attempt < RESUME_TRIES; attempt++) {
    await new Promise(resolve => setTimeout(resolve, 250 * 2 ** attempt))
    const from = lastId()
    appendLog(el('li', 'head reconnect', 'connection lost: tasks/resubscribe' + (from === null ? '' : ' after event ' + from)))
    try {
      await stream('tasks/resubscribe', { id }, onResult, from)
      return true
    } catch (err) {
      if (err instanceof RpcError) return false
    }
  }
  return false
}
function onChat (event) {
  event.preventDefault()
  const text = $('chat-input').value.trim()
  if (text === '') return
  $('chat-input').value = ''
  send(text, false)
}

// Credentials and start-up ------------------------------------------------------------------------------------------
function saveCredentials (event) {
  event.preventDefault()
  for (const [field, key] of [['api-key', KEYS.apiKey], ['bearer', KEYS.bearer]]) {
    const value = $(field).value.trim()
    if (value) store.setItem(key, value)
    else store.removeItem(key)
  }
  say('credentials set for this tab')
  loadTasks()
}
async function loadCard () {
  const res = await fetch(new URL('.well-known/agent-card.json', base))
  card = await res.json()
  document.title = card.name + ' · A2A console'
  $('agent-name').textContent = card.name
  $('agent-meta').textContent = 'v' + card.version + ' · A2A ' + card.protocolVersion
  $('agent-description').textContent = card.description || ''
  $('card').textContent = JSON.stringify(card, null, 2)
  const schemes = card.securitySchemes || {}
  if (Object.keys(schemes).length > 0) $('auth').hidden = false
  if (schemes.apiKey && schemes.apiKey.name) apiKeyHeader = schemes.apiKey.name
  $('api-key-header').textContent = apiKeyHeader
}
async function start () {
  $('chat-form').addEventListener('submit', onChat)
  $('chat-input').addEventListener('keydown', event => {
    if (event.key === 'Enter' && !event.shiftKey) onChat(event)
  })
  $('auth-form').addEventListener('submit', saveCredentials)
  $('clear-auth').addEventListener('click', event => {
    $('api-key').value = $('bearer').value = ''
    saveCredentials(event)
  })
  $('refresh-tasks').addEventListener('click', loadTasks)
  $('newer-tasks').addEventListener('click', () => turnPage(-1))
  $('older-tasks').addEventListener('click', () => turnPage(1))
  $('try-push').addEventListener('click', () => {
    arm()
    send('push test', true)
  })
  $('api-key').value = store.getItem(KEYS.apiKey) || ''
  $('bearer').value = store.getItem(KEYS.bearer) || ''
  try {
    await loadCard()
  } catch (err) {
    say('agent card: ' + err.message, true)
  }
  await Promise.all([loadTasks(), pollSink()])
  document.body.dataset.ready = 'true'
}
start()
`
