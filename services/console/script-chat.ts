// The console's chat (with its hints and Stop), the A2A version it speaks, credentials and start-up (see script.ts).
import { BUILTIN_HINTS, BUILTIN_SKILL_ID } from './hints.js'

/** The chat, the version badge, credentials and start-up; the last part of the script. */
export const SCRIPT_CHAT = String.raw`
// Chat --------------------------------------------------------------------------------------------------------------
const BUILTIN_HINTS = ${JSON.stringify(BUILTIN_HINTS)}
const BUILTIN_SKILL_ID = ${JSON.stringify(BUILTIN_SKILL_ID)}
// The task of the last message sent, while its stream is open and the task has not ended: what Stop cancels.
const chat = { id: null, run: 0 }
function chatTask (id) {
  chat.id = id || null
  $('stop').disabled = chat.id === null
}

async function send (text, push) {
  const v = version
  const run = ++chat.run
  $('hints').hidden = true
  chatTask(null)
  const bubble = el('div', 'msg user')
  bubble.append(el('div', 'who', 'you'), el('div', 'text', text))
  $('transcript').append(bubble)
  appendLog(el('li', 'head', METHODS[v].send + (push ? ' with push to the sink' : '')))
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
    if (run === chat.run) chatTask(TERMINAL.has(stateOf(r)) ? null : id)
  }
  try {
    await stream(v, 'send', messageParams(v, text, push), onResult)
  } catch (err) {
    // A connection cut mid-task, not an answer of the server's: the task goes on, so follow it again.
    if (id === null || err instanceof RpcError || !await resume(v, id, () => lastId, onResult)) {
      view.fail(err.message)
      say(METHODS[v].send + ': ' + err.message, true)
    }
  } finally {
    if (id !== null) watched.delete(id)
    if (run === chat.run) chatTask(null)
  }
}
// Follows a task whose stream was cut, from the last event seen (Last-Event-ID): what was missed, then live events.
// Without ids (the seed dialect) the task as it stands comes first. A few tries, further apart each time.
async function resume (v, id, lastId, onResult) {
  for (let attempt = 0; attempt < RESUME_TRIES; attempt++) {
    await new Promise(resolve => setTimeout(resolve, 250 * 2 ** attempt))
    const from = lastId()
    appendLog(el('li', 'head reconnect', 'connection lost: ' + METHODS[v].subscribe + (from === null ? '' : ' after event ' + from)))
    try {
      await stream(v, 'subscribe', { id }, onResult, from)
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
// What the empty chat offers: the built-in agent's commands while the card lists its skill, else the examples of
// the card's skills. A click fills the input; Enter sends it.
function showHints () {
  const skills = (card && card.skills) || []
  const hints = skills.some(s => s.id === BUILTIN_SKILL_ID)
    ? BUILTIN_HINTS
    : [].concat(...skills.map(s => (s.examples || []).map(text => ({ text, title: s.name }))))
  for (const hint of hints.slice(0, 8)) {
    const button = el('button', 'quiet', hint.text)
    button.type = 'button'
    button.title = hint.title
    button.addEventListener('click', () => {
      $('chat-input').value = hint.text
      $('chat-input').focus()
    })
    $('hints').append(button)
  }
  $('hints').hidden = hints.length === 0 || $('transcript').querySelector('.msg') !== null
}

// The A2A version the console speaks --------------------------------------------------------------------------------
// The versions the server speaks over JSON-RPC, as Major.Minor: those of its card's JSON-RPC interfaces (v1.0's
// supportedInterfaces), then its v0.3 protocolVersion.
function spokenVersions () {
  const named = ((card && card.supportedInterfaces) || []).filter(i => i.protocolBinding === 'JSONRPC').map(i => i.protocolVersion)
    .concat(card ? [card.protocolVersion] : [])
  const versions = named.map(name => /^(\d+)\.(\d+)/.exec(String(name))).filter(Boolean).map(m => Number(m[1]) + '.' + Number(m[2]))
  return versions.length > 0 ? [...new Set(versions)] : Object.keys(METHODS)
}
// The badge: every version the server speaks, the console's pressed; a version the console cannot speak is off.
function showVersions () {
  const spoken = spokenVersions()
  if (!spoken.includes(version)) version = spoken.find(v => METHODS[v]) || version
  $('versions').replaceChildren('A2A', ...spoken.map(v => {
    const button = el('button', 'ver', 'v' + v)
    button.type = 'button'
    button.dataset.version = v
    button.disabled = !METHODS[v]
    button.setAttribute('aria-pressed', String(v === version))
    button.title = METHODS[v] ? 'Speak A2A v' + v + ': ' + Object.values(METHODS[v]).join(', ') : 'The console does not speak A2A v' + v
    button.addEventListener('click', () => useVersion(v))
    return button
  }))
  $('chat-method').textContent = METHODS[version].send
}
function useVersion (v) {
  if (v === version) return
  version = v
  store.setItem(KEYS.version, v)
  showVersions()
  respell()
  say('speaking A2A v' + v)
  loadTasks()
  if (detail.id) openDetail(detail.id)
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
  $('agent-meta').textContent = 'v' + card.version
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
  $('stop').addEventListener('click', () => {
    if (chat.id !== null) cancelTask(chat.id)
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
  $('detail-refresh').addEventListener('click', () => openDetail(detail.id))
  $('detail-close').addEventListener('click', closeDetail)
  $('api-key').value = store.getItem(KEYS.apiKey) || ''
  $('bearer').value = store.getItem(KEYS.bearer) || ''
  try {
    await loadCard()
  } catch (err) {
    say('agent card: ' + err.message, true)
  }
  showVersions()
  showHints()
  await Promise.all([loadTasks(), pollSink()])
  document.body.dataset.ready = 'true'
}
start()
`
