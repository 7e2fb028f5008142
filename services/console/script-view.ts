// The console's views of results (see script.ts): the stream event log, the chat reply, what the console has seen of
// each task's states, a sink delivery, and the task detail.

/** Views; runs after SCRIPT_CORE and before SCRIPT_UI in the same script element. */
export const SCRIPT_VIEW = String.raw`
// A data part beside a text part is the same answer for programs (the built-in tools send both): the text is shown.
function textOf (parts) {
  const list = parts || []
  const hasText = list.some(p => p.kind === 'text')
  return list.filter(p => !(hasText && p.kind === 'data'))
    .map(p => p.kind === 'text' ? p.text : p.kind === 'data' ? JSON.stringify(p.data, null, 2) : '[' + p.kind + ']').join('\n')
}
// What a reply says when the agent wrote nothing, by state.
const QUIET = {
  canceled: 'Canceled before the agent answered.',
  failed: 'The task failed.',
  rejected: 'The agent declined the task.',
  completed: 'Completed, with no reply.',
  input_required: 'The agent is waiting for your input.',
  auth_required: 'The agent is waiting for authorization.'
}
const seen = new Map()
// For a whole Task (v0.3 default dialect), what changed since the last one of the same task: which artifacts grew,
// or "status" when only the status did; '' for the first one and for a new state.
function changeOf (task) {
  const parts = {}
  for (const a of task.artifacts || []) parts[a.artifactId] = JSON.stringify(a.parts)
  const before = seen.get(task.id)
  if (TERMINAL.has(task.status.state)) seen.delete(task.id)
  else seen.set(task.id, { state: task.status.state, parts })
  if (!before || before.state !== task.status.state) return ''
  const grown = (task.artifacts || []).filter(a => before.parts[a.artifactId] !== parts[a.artifactId])
  return grown.length > 0 ? 'artifact ' + grown.map(a => a.name || short(a.artifactId)).join(', ') : 'status'
}

function logEvent (result) {
  const li = el('li', 'event')
  const state = stateOf(result)
  li.dataset.kind = result.kind
  if (state) li.dataset.state = state
  li.append(el('span', 'n', ++eventCount), el('span', 'kind', result.onWire), stateView(state), idView(taskIdOf(result)))
  if (result.kind === 'artifact-update') li.append(el('span', '', result.artifact.name || result.artifact.artifactId))
  const change = result.kind === 'task' ? changeOf(result) : ''
  if (change) {
    li.dataset.change = change
    li.append(el('span', 'hint', change))
  }
  appendLog(li)
}
function appendLog (li) {
  const list = $('events')
  list.append(li)
  while (list.children.length > MAX_EVENTS) list.firstChild.remove()
  list.scrollTop = list.scrollHeight
}

// A chat reply: the agent's artifacts as they build up, else its status message.
function replyView () {
  const bubble = el('div', 'msg agent')
  const who = el('div', 'who')
  const badge = el('span', 'state')
  const text = el('div', 'text', '…')
  who.append(el('span', '', 'agent'), badge)
  bubble.append(who, text)
  $('transcript').append(bubble)
  const artifacts = new Map()
  let status = ''
  function render () {
    const shown = [...artifacts.values()].map(a => textOf(a.parts)).join('\n')
    text.textContent = shown || status || QUIET[bubble.dataset.state] || '…'
    $('transcript').scrollTop = $('transcript').scrollHeight
  }
  function setState (state) {
    bubble.dataset.state = state
    showState(badge, state)
  }
  return {
    apply (r) {
      bubble.dataset.taskId = taskIdOf(r)
      if (r.kind === 'task') {
        artifacts.clear()
        for (const a of r.artifacts || []) artifacts.set(a.artifactId, a)
      } else if (r.kind === 'artifact-update') {
        const old = artifacts.get(r.artifact.artifactId)
        artifacts.set(r.artifact.artifactId, r.append && old ? Object.assign({}, old, { parts: old.parts.concat(r.artifact.parts) }) : r.artifact)
      } else if (r.kind === 'message') {
        status = textOf(r.parts)
      }
      if (r.status && r.status.message) status = textOf(r.status.message.parts)
      if (stateOf(r)) setState(stateOf(r))
      render()
    },
    fail (message) {
      setState('error')
      text.textContent = message
      text.classList.add('error')
    }
  }
}

// What the console has seen of a task's states, each once by state and time, with where it was seen: its streams,
// a task list, GetTask, CancelTask or a push delivery to the sink.
function observe (id, status, via) {
  let states = timelines.get(id)
  if (!states) {
    states = new Map()
    timelines.set(id, states)
    if (timelines.size > MAX_TIMELINES) timelines.delete(timelines.keys().next().value)
  }
  const at = status.timestamp || ''
  const key = at + ' ' + status.state
  const entry = states.get(key) || { state: status.state, at, via: new Set() }
  entry.via.add(via)
  states.set(key, entry)
  if (id === detail.id) renderTimeline()
}

// A delivery the sink got: when, the task, its state, the headers that tell deliveries apart, the body.
function deliveryView (d) {
  const li = el('li', 'delivery')
  li.dataset.seq = d.seq
  if (d.taskId) li.dataset.taskId = d.taskId
  if (d.state) li.dataset.state = stored(d.state)
  li.append(el('span', 'n', clock(d.receivedAt)))
  if (d.taskId) li.append(idView(d.taskId))
  li.append(d.state ? stateView(stored(d.state)) : el('span', 'hint', '(not a task)'),
    el('span', 'hint', Object.keys(d.headers).filter(h => h.startsWith('webhook-') || h.startsWith('x-')).join(' ')))
  const details = el('details')
  let body = d.body
  try { body = JSON.stringify(JSON.parse(d.body), null, 2) } catch {}
  details.append(el('summary', '', 'body'), el('pre', '', body))
  li.append(details)
  return li
}
// The task status a delivery carries (a v0.3 Task or a v1.0 {task}), or null.
function deliveredStatus (d) {
  try { return resultOf(JSON.parse(d.body)).status || null } catch { return null }
}

// Task detail --------------------------------------------------------------------------------------------------------
// One task at a time, from GetTask (with its last HISTORY_LENGTH messages), the sink and what the console has seen.
const detail = { id: null, seq: 0 }
function renderTimeline () {
  const entries = [...(timelines.get(detail.id) || new Map()).values()].sort((a, b) => a.at < b.at ? -1 : a.at > b.at ? 1 : 0)
  $('detail-timeline').replaceChildren(...entries.map(e => {
    const li = el('li', 'step')
    li.dataset.state = e.state
    li.append(el('span', 'n', e.at ? clock(e.at) : ''), stateView(e.state), el('span', 'hint', [...e.via].join(', ')))
    return li
  }))
}
function renderTask (task) {
  showState($('detail-state'), task.status.state)
  const meta = $('detail-meta')
  meta.replaceChildren('context ', idView(task.contextId), ' · ' + METHODS[version].get + ', historyLength ' + HISTORY_LENGTH)
  $('detail-history').replaceChildren(...(task.history.length === 0 ? [el('li', 'hint', 'none')] : task.history.map(m => {
    const li = el('li', 'message')
    li.dataset.role = m.role
    li.append(el('span', 'n', m.role), idView(m.messageId), el('span', 'text', textOf(m.parts)))
    return li
  })))
  $('detail-artifacts').replaceChildren(...(task.artifacts.length === 0 ? [el('p', 'hint', 'none')] : task.artifacts.map(a => {
    const box = el('div', 'artifact')
    const head = el('h4', '', a.name || 'artifact')
    head.append(idView(a.artifactId))
    box.append(head, el('pre', '', textOf(a.parts)))
    return box
  })))
}
async function openDetail (id) {
  const seq = ++detail.seq
  const panel = $('detail-panel')
  if (detail.id !== id) {
    for (const list of ['detail-timeline', 'detail-history', 'detail-artifacts', 'detail-deliveries', 'detail-meta']) $(list).replaceChildren()
    showState($('detail-state'), '')
    $('detail-id').replaceChildren(idView(id))
    panel.scrollIntoView({ block: 'nearest' })
  }
  detail.id = id
  panel.hidden = false
  panel.dataset.taskId = id
  delete panel.dataset.loaded
  for (const tr of rows.values()) tr.classList.toggle('selected', tr.dataset.taskId === id)
  const [got, sink] = await Promise.allSettled([rpc('get', { id, historyLength: HISTORY_LENGTH }), readSink()])
  if (seq !== detail.seq) return
  $('detail-error').textContent = got.status === 'fulfilled' ? '' : METHODS[version].get + ': ' + got.reason.message
  if (got.status === 'fulfilled') {
    const task = taskOf(got.value)
    observe(id, task.status, 'get')
    renderTask(task)
  }
  const deliveries = sink.status === 'fulfilled' ? sink.value.deliveries.filter(d => d.taskId === id) : []
  for (const d of deliveries) {
    const status = deliveredStatus(d)
    if (status) observe(id, status, 'push')
  }
  $('detail-deliveries').replaceChildren(...(deliveries.length === 0 ? [el('li', 'hint', sink.status === 'fulfilled' ? 'none' : 'sink: ' + sink.reason.message)] : deliveries.map(deliveryView)))
  renderTimeline()
  panel.dataset.loaded = 'true'
}
function closeDetail () {
  detail.id = null
  detail.seq++
  $('detail-panel').hidden = true
  for (const tr of rows.values()) tr.classList.remove('selected')
}
`
