// The developer console's browser script, inlined into the page. Plain JavaScript for any current browser: JSON-RPC
// over fetch, SSE read from a fetch body (EventSource cannot POST), every URL relative to the page, and only
// textContent for what the server sends. Written without template literals so that it fits in String.raw.

/**
 * The first part of the script: the A2A versions (method names, request shapes, state spellings), results of
 * either version in one form, JSON-RPC and SSE. script-view.ts and script-ui.ts follow it.
 */
export const SCRIPT_CORE = String.raw`
'use strict'
const TERMINAL = new Set(['completed', 'canceled', 'failed', 'rejected'])
const MAX_WATCHED = 4
const MAX_EVENTS = 200
const MAX_TIMELINES = 200
const PAGE_SIZE = 10
const HISTORY_LENGTH = 50
const RESUME_TRIES = 5
const SINK_POLL_MS = 1500
const TOKEN = /^[A-Za-z0-9_-]{16,64}$/
const KEYS = {
  apiKey: 'a2a-console-api-key', bearer: 'a2a-console-bearer', sink: 'a2a-console-sink', armed: 'a2a-console-push', version: 'a2a-console-version'
}
const store = window.sessionStorage
// The agent lives where the console's own path ends: "/console" under the plugin prefix.
const base = new URL(location.pathname.replace(/\/console\/?$/, '/'), location.href)
const $ = id => document.getElementById(id)
const rows = new Map()
const watched = new Set()
const timelines = new Map()
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
function randomToken (bytes) {
  const raw = crypto.getRandomValues(new Uint8Array(bytes))
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}
function say (text, isError) {
  $('status').textContent = text
  $('status').classList.toggle('error', Boolean(isError))
}

// Ids are shown short, whole in their title, with a button that copies them whole.
function idView (id) {
  const view = el('span', 'id')
  const code = el('code', '', short(id))
  const copy = el('button', 'copy quiet', 'copy')
  code.title = id
  copy.type = 'button'
  copy.title = 'Copy ' + id
  copy.dataset.copy = id
  copy.addEventListener('click', event => {
    event.stopPropagation()
    copyText(id, code)
  })
  view.append(code, copy)
  return view
}
// The clipboard API where the browser offers it (a secure context: https or a loopback host); else the id is shown
// whole and selected, ready for Ctrl+C.
async function copyText (text, code) {
  try {
    await navigator.clipboard.writeText(text)
    say('copied ' + text)
  } catch {
    code.textContent = text
    code.classList.add('whole')
    getSelection().selectAllChildren(code)
    say('selected ' + text + ': press Ctrl+C to copy it')
  }
}

// A2A versions (CONTRACT.md §11.1) -------------------------------------------------------------------------------
// The methods the console calls, by what they do, in each version it speaks.
const METHODS = {
  '1.0': { send: 'SendStreamingMessage', get: 'GetTask', list: 'ListTasks', cancel: 'CancelTask', subscribe: 'SubscribeToTask', push: 'CreateTaskPushNotificationConfig' },
  '0.3': { send: 'message/stream', get: 'tasks/get', list: 'tasks/list', cancel: 'tasks/cancel', subscribe: 'tasks/resubscribe', push: 'tasks/pushNotificationConfig/set' }
}
// The script keeps states as the server stores them. Copies of V10_STATES (services/a2a/codec-v10.ts) and A2A_NAMES
// (services/a2a/codec-v03.ts, the v0.3 a2a dialect; the default dialect writes the stored names).
const V10_STATES = {"submitted": "TASK_STATE_SUBMITTED", "in_progress": "TASK_STATE_WORKING", "input_required": "TASK_STATE_INPUT_REQUIRED", "auth_required": "TASK_STATE_AUTH_REQUIRED", "completed": "TASK_STATE_COMPLETED", "canceled": "TASK_STATE_CANCELED", "failed": "TASK_STATE_FAILED", "rejected": "TASK_STATE_REJECTED"}
const A2A_NAMES = {"in_progress": "working", "input_required": "input-required", "auth_required": "auth-required"}
const DIALECT = document.documentElement.dataset.dialect
const STORED = {}
for (const state of Object.keys(V10_STATES)) STORED[state] = STORED[V10_STATES[state]] = state
for (const state of Object.keys(A2A_NAMES)) STORED[A2A_NAMES[state]] = state
let version = METHODS[store.getItem(KEYS.version)] ? store.getItem(KEYS.version) : '1.0'

// A state in any version's spelling as stored; anything else as it is.
const stored = name => Object.hasOwn(STORED, name) ? STORED[name] : name
// A stored state as the selected version spells it.
function spell (state) {
  if (version === '1.0') return Object.hasOwn(V10_STATES, state) ? V10_STATES[state] : state
  return DIALECT === 'a2a' && Object.hasOwn(A2A_NAMES, state) ? A2A_NAMES[state] : state
}
// Shows a state in a node; respell() writes every one again when the version changes. A long name may break after
// an underscore (TASK_STATE_<wbr>COMPLETED), never inside a word.
function showState (node, state) {
  node.className = 'state s-' + String(state || '').replace(/[^a-z_]/g, '')
  node.dataset.state = state || ''
  return spellInto(node)
}
function spellInto (node) {
  const words = node.dataset.state ? spell(node.dataset.state).split('_') : []
  node.replaceChildren(...words.flatMap((word, i) => i === 0 ? [word] : ['_', el('wbr'), word]))
  return node
}
const stateView = state => showState(el('span'), state)
function respell () {
  for (const node of document.querySelectorAll('.state[data-state]')) spellInto(node)
}

// Requests in the shape of a version. The sink's push config (sinkConfig) is defined with the sink, further on.
function messageParams (v, text, push) {
  const messageId = randomToken(16)
  const message = v === '1.0'
    ? { messageId, role: 'ROLE_USER', parts: [{ text }] }
    : { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text }] }
  const params = { message }
  if (push) params.configuration = v === '1.0' ? { taskPushNotificationConfig: sinkConfig() } : { pushNotificationConfig: sinkConfig() }
  return params
}
const pushParams = (v, taskId) => v === '1.0' ? Object.assign({ taskId }, sinkConfig()) : { taskId, pushNotificationConfig: sinkConfig() }

// Results of either version in one form, v0.3's: a kind on every object, parts with a kind, states as stored. v1.0
// wraps stream results in their kind's member (task, message, statusUpdate, artifactUpdate) and answers GetTask and
// CancelTask with a bare Task.
function partOf (p) {
  if (p.kind) return p
  if (p.text !== undefined) return { kind: 'text', text: p.text }
  if (p.data !== undefined) return { kind: 'data', data: p.data }
  return { kind: 'file', file: { name: p.filename, mimeType: p.mediaType, uri: p.url } }
}
const partsOf = parts => (parts || []).map(partOf)
function messageOf (m) {
  const role = m.role === 'ROLE_USER' ? 'user' : m.role === 'ROLE_AGENT' ? 'agent' : m.role
  return Object.assign({}, m, { kind: 'message', role, parts: partsOf(m.parts) })
}
const statusOf = s => Object.assign({}, s, { state: stored(s.state), message: s.message ? messageOf(s.message) : s.message })
const artifactOf = a => Object.assign({}, a, { parts: partsOf(a.parts) })
function taskOf (t) {
  return Object.assign({}, t, {
    kind: 'task', status: statusOf(t.status), artifacts: (t.artifacts || []).map(artifactOf), history: (t.history || []).map(messageOf)
  })
}
const MEMBERS = { task: 'task', statusUpdate: 'status-update', artifactUpdate: 'artifact-update', message: 'message' }
// Also says what the result is called on the wire (onWire): its kind, or its v1.0 member's name.
function resultOf (r) {
  const member = r.kind ? null : Object.keys(MEMBERS).find(name => r[name]) || null
  const kind = r.kind || (member ? MEMBERS[member] : 'task')
  const inner = member ? r[member] : r
  const out = kind === 'task' ? taskOf(inner)
    : kind === 'message' ? messageOf(inner)
      : kind === 'status-update' ? Object.assign({}, inner, { kind, status: statusOf(inner.status) })
        : Object.assign({}, inner, { kind, artifact: artifactOf(inner.artifact) })
  out.onWire = member || kind
  return out
}
const taskIdOf = r => r.kind === 'task' ? r.id : r.taskId
const stateOf = r => (r.kind === 'task' || r.kind === 'status-update') ? r.status.state : null

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
// The extensions the card marks required, activated on every call: without them the server refuses the call, and
// the console sends plain messages, which is all any extension asks of a client that does nothing of its own.
function requiredExtensions () {
  const declared = (card && card.capabilities && card.capabilities.extensions) || []
  return declared.filter(e => e.required).map(e => e.uri)
}
function post (v, method, params, accept, lastEventId) {
  const headers = Object.assign({ 'content-type': 'application/json', accept, 'a2a-version': v }, credentials())
  const required = requiredExtensions()
  if (required.length > 0) headers['a2a-extensions'] = required.join(', ')
  if (lastEventId !== undefined && lastEventId !== null) headers['last-event-id'] = lastEventId
  return fetch(base, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }) })
}
async function answer (res) {
  let body
  try { body = await res.json() } catch { throw new Error('HTTP ' + res.status + ': not a JSON-RPC answer') }
  if (body.error) throw new RpcError(body.error, res.status)
  return body.result
}
// Calls the selected version's method for op ('get', 'list', ...) and returns its result as sent.
async function rpc (op, params) {
  return answer(await post(version, METHODS[version][op], params, 'application/json'))
}
// Calls version v's streaming method for op and hands each result to onResult, in one form (resultOf), as its event
// arrives, with the event's id (null when the stream has none). lastEventId resumes a task's stream after that event.
async function stream (v, op, params, onResult, lastEventId) {
  const res = await post(v, METHODS[v][op], params, 'text/event-stream', lastEventId)
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
      onResult(resultOf(message.result), idLine === undefined ? null : idLine.slice(3).trim())
    }
  }
}
`
