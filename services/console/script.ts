// The developer console's browser script, inlined into the page. Plain JavaScript for any current browser: JSON-RPC
// over fetch, SSE read from a fetch body (EventSource cannot POST), every URL relative to the page, and only
// textContent for what the server sends. Written without template literals so that it fits in String.raw.

/** The first half of the script: JSON-RPC, SSE and the chat reply view; script-ui.ts holds the rest. */
export const SCRIPT_CORE = String.raw`
'use strict'
const TERMINAL = new Set(['completed', 'canceled', 'failed', 'rejected'])
const MAX_WATCHED = 4
const MAX_EVENTS = 200
const PAGE_SIZE = 10
const RESUME_TRIES = 5
const SINK_POLL_MS = 1500
const TOKEN = /^[A-Za-z0-9_-]{16,64}$/
const KEYS = { apiKey: 'a2a-console-api-key', bearer: 'a2a-console-bearer', sink: 'a2a-console-sink', armed: 'a2a-console-push' }
const store = window.sessionStorage
// The agent lives where the console's own path ends: "/console" under the plugin prefix.
const base = new URL(location.pathname.replace(/\/console\/?$/, '/'), location.href)
const $ = id => document.getElementById(id)
const rows = new Map()
const watched = new Set()
let card = null
let apiKeyHeader = 'X-API-Key'
let rpcId = 0
let sinkUrl = null
let sinkTimer = null
let lastSeq = 0
let eventCount = 0
let page = 0
let hasOlder = false

function el (tag, cls, text) {
  const node = document.createElement(tag)
  if (cls) node.className = cls
  if (text !== undefined && text !== null) node.textContent = String(text)
  return node
}
const short = id => String(id || '').slice(0, 8)
const clock = iso => (iso ? new Date(iso) : new Date()).toLocaleTimeString()
const stateClass = state => 'state s-' + String(state || '').replace(/[^a-z_-]/g, '')
function randomToken (bytes) {
  const raw = crypto.getRandomValues(new Uint8Array(bytes))
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}
function say (text, isError) {
  $('status').textContent = text
  $('status').classList.toggle('error', Boolean(isError))
}

// JSON-RPC ------------------------------------------------------------------------------------------------------
class RpcError extends Error {
  constructor (error, status) {
    const data = error.data === undefined ? '' : ' (' + (typeof error.data === 'string' ? error.data : JSON.stringify(error.data)) + ')'
    super((status && status !== 200 ? 'HTTP ' + status + ': ' : '') + error.message + data + ' [' + error.code + ']')
    this.code = error.code
  }
}
function credentials () {
  const headers = {}
  const key = store.getItem(KEYS.apiKey)
  const bearer = store.getItem(KEYS.bearer)
  if (key) headers[apiKeyHeader] = key
  if (bearer) headers.authorization = 'Bearer ' + bearer
  return headers
}
function post (method, params, accept, lastEventId) {
  const headers = Object.assign({ 'content-type': 'application/json', accept }, credentials())
  if (lastEventId !== undefined && lastEventId !== null) headers['last-event-id'] = lastEventId
  return fetch(base, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }) })
}
async function answer (res) {
  let body
  try { body = await res.json() } catch { throw new Error('HTTP ' + res.status + ': not a JSON-RPC answer') }
  if (body.error) throw new RpcError(body.error, res.status)
  return body.result
}
async function rpc (method, params) {
  return answer(await post(method, params, 'application/json'))
}
// Calls a streaming method and hands each result to onResult as its event arrives, with the event's id (null when
// the stream has none). lastEventId resumes a task's stream after that event.
async function stream (method, params, onResult, lastEventId) {
  const res = await post(method, params, 'text/event-stream', lastEventId)
  if (!(res.headers.get('content-type') || '').startsWith('text/event-stream')) return answer(res)
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value
    let end
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const lines = block.split('\n')
      const data = lines.filter(l => l.startsWith('data:')).map(l => l.slice(l.startsWith('data: ') ? 6 : 5)).join('\n')
      if (data === '') continue
      const idLine = lines.find(l => l.startsWith('id:'))
      const message = JSON.parse(data)
      if (message.error) throw new RpcError(message.error, 200)
      onResult(message.result, idLine === undefined ? null : idLine.slice(3).trim())
    }
  }
}

// Results: whole Tasks (default dialect) or A2A events (a2a dialect) ----------------------------------------------
const taskIdOf = r => r.kind === 'task' ? r.id : r.taskId
const stateOf = r => (r.kind === 'task' || r.kind === 'status-update') ? r.status.state : null
// A data part beside a text part is the same answer for programs (the built-in tools send both): the text is shown.
function textOf (parts) {
  const list = parts || []
  const hasText = list.some(p => p.kind === 'text')
  return list.filter(p => !(hasText && p.kind === 'data'))
    .map(p => p.kind === 'text' ? p.text : p.kind === 'data' ? JSON.stringify(p.data, null, 2) : '[' + p.kind + ']').join('\n')
}
// What a reply says when the agent wrote nothing, by state (either dialect's spelling).
const QUIET = {
  canceled: 'Canceled before the agent answered.',
  failed: 'The task failed.',
  rejected: 'The agent declined the task.',
  completed: 'Completed, with no reply.',
  input_required: 'The agent is waiting for your input.',
  'input-required': 'The agent is waiting for your input.',
  auth_required: 'The agent is waiting for authorization.',
  'auth-required': 'The agent is waiting for authorization.'
}
const seen = new Map()
// For a whole Task (default dialect), what changed since the last one of the same task: which artifacts grew, or
// "status" when only the status did; '' for the first one and for a new state.
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
  li.append(el('span', 'n', ++eventCount), el('span', 'kind', result.kind), el('span', stateClass(state), state || ''),
    el('code', '', short(taskIdOf(result))))
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
    badge.className = stateClass(state)
    badge.textContent = state
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
`
