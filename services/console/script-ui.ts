// The console's task list, kept live through subscribe streams, and its webhook sink panel (see script.ts).

/** Task rows and the sink; runs after SCRIPT_VIEW in the same script element. */
export const SCRIPT_UI = String.raw`
// Tasks ------------------------------------------------------------------------------------------------------------
const pushReady = () => Boolean(card && card.capabilities && card.capabilities.pushNotifications && sinkUrl)
function tasksError (message) { $('tasks-error').textContent = message || '' }

// A row opens the task's detail; its buttons act on the task alone.
function row (id) {
  const tr = el('tr')
  tr.dataset.taskId = id
  tr.tabIndex = 0
  tr.title = 'Show task ' + id
  const idCell = el('td')
  idCell.append(idView(id))
  const actions = el('td', 'actions')
  const cancel = el('button', 'cancel quiet', 'Cancel')
  const push = el('button', 'push quiet', 'Push')
  cancel.type = push.type = 'button'
  push.title = 'Deliver this task\'s next states to the webhook sink'
  cancel.addEventListener('click', event => {
    event.stopPropagation()
    cancelTask(id)
  })
  push.addEventListener('click', event => {
    event.stopPropagation()
    pushTask(id)
  })
  tr.addEventListener('click', () => openDetail(id))
  tr.addEventListener('keydown', event => {
    if (event.key === 'Enter' && event.target === tr) openDetail(id)
  })
  actions.append(push, cancel)
  tr.append(idCell, el('td', 'state'), el('td', 'updated'), actions)
  tr.classList.toggle('selected', id === detail.id)
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
  showState(tr.cells[1], status.state)
  tr.cells[2].textContent = clock(status.timestamp)
  // What cannot be used on a finished task is not shown.
  tr.querySelector('.cancel').hidden = tr.querySelector('.push').hidden = TERMINAL.has(status.state)
  tr.querySelector('.push').disabled = !pushReady()
}
// A result seen by the console (via: 'stream', 'cancel'): the row, the task's timeline, and the open detail when
// its task reaches another state (its history and artifacts have grown).
function track (r, place, via) {
  if (r.kind !== 'task' && r.kind !== 'status-update') return
  const id = taskIdOf(r)
  const before = $('detail-state').dataset.state
  show(id, r.status, place)
  observe(id, r.status, via || 'stream')
  if (id === detail.id && before !== r.status.state) openDetail(id)
}
// The task list, PAGE_SIZE at a time. Page tokens are cursors, so a page is reached by walking from the first: a
// task started meanwhile never shifts a task out of sight.
async function listPage (index) {
  let token = ''
  for (let i = 0; ; i++) {
    const params = { pageSize: PAGE_SIZE, historyLength: 0 }
    if (token) params.pageToken = token
    const result = await rpc('list', params)
    const tasks = result.tasks.map(taskOf)
    if (i === index || !result.nextPageToken) return { index: i, tasks, older: Boolean(result.nextPageToken) }
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
// Loads of the task list started, so that only the newest one is shown: pages turned quickly, or a refresh during a
// turn, answer in any order.
let loads = 0
async function loadTasks () {
  const load = ++loads
  try {
    const listed = await listPage(page)
    if (load !== loads) return
    tasksError('')
    page = listed.index
    hasOlder = listed.older
    for (const tr of rows.values()) tr.remove()
    rows.clear()
    for (const task of listed.tasks) {
      show(task.id, task.status, 'end')
      observe(task.id, task.status, 'list')
    }
    pager()
    for (const task of listed.tasks) if (!TERMINAL.has(task.status.state)) watch(task.id)
  } catch (err) {
    if (load === loads) tasksError(METHODS[version].list + ': ' + err.message)
  }
}
function turnPage (by) {
  page = Math.max(0, page + by)
  loadTasks()
}
// Follows a running task until it ends; a few at a time.
function watch (id) {
  if (watched.has(id) || watched.size >= MAX_WATCHED) return
  const v = version
  watched.add(id)
  stream(v, 'subscribe', { id }, r => track(r))
    .catch(err => tasksError(METHODS[v].subscribe + ' ' + short(id) + ': ' + err.message))
    .finally(() => watched.delete(id))
}
async function cancelTask (id) {
  try {
    track(resultOf(await rpc('cancel', { id })), undefined, 'cancel')
    tasksError('')
  } catch (err) {
    tasksError(METHODS[version].cancel + ' ' + short(id) + ': ' + err.message)
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
async function readSink () {
  const res = await fetch(new URL('console/sink/' + sinkToken(), base), { cache: 'no-store' })
  return res.json()
}
function arm () {
  store.setItem(KEYS.armed, '1')
  clearTimeout(sinkTimer)
  sinkTimer = setTimeout(pollSink, SINK_POLL_MS)
}
async function pollSink () {
  try {
    const body = await readSink()
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
// A new delivery: listed, in its task's timeline, and in the open detail when it is that task's.
function addDelivery (d) {
  lastSeq = d.seq
  const list = $('deliveries')
  list.prepend(deliveryView(d))
  while (list.children.length > 50) list.lastChild.remove()
  const status = d.taskId ? deliveredStatus(d) : null
  if (status) observe(d.taskId, status, 'push')
  const shown = $('detail-deliveries')
  if (d.taskId === detail.id && $('detail-panel').dataset.loaded && !shown.querySelector('li[data-seq="' + d.seq + '"]')) {
    for (const hint of shown.querySelectorAll('li.hint')) hint.remove()
    shown.prepend(deliveryView(d))
  }
}
async function pushTask (id) {
  try {
    await rpc('push', pushParams(version, id))
    arm()
    say('push config set on task ' + short(id))
  } catch (err) {
    tasksError(METHODS[version].push + ' ' + short(id) + ': ' + err.message)
  }
}
`
