// The developer console page (CONTRACT.md §3, `GET /console`): one self-contained HTML document, with its style and
// script inline under a per-response nonce, so that it needs nothing but this server (offline included).
import type { Dialect } from '../a2a/codec-v03.js'
import { SCRIPT_CORE } from './script.js'
import { SCRIPT_VIEW } from './script-view.js'
import { SCRIPT_UI } from './script-ui.js'
import { SCRIPT_CHAT } from './script-chat.js'

/** What the page is told about the server it talks to. */
export interface ConsolePageOptions {
  /** `protocol.dialect`: how the server spells v0.3 states, and so how the page spells them in v0.3. */
  dialect: Dialect
}

const STYLE = String.raw`
:root { color-scheme: light dark; --bg: #f5f6f8; --panel: #fff; --fg: #1d2330; --muted: #687082; --line: #e1e4ea;
  --accent: #3b5bdb; --ok: #2b8a3e; --run: #1971c2; --wait: #e67700; --bad: #c92a2a; --code: #f1f3f5;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #121418; --panel: #1b1e24; --fg: #e4e6ea; --muted: #98a0ad; --line: #2b3039; --code: #23272f; }
}
[hidden] { display: none !important; }
body { margin: 0; background: var(--bg); color: var(--fg); }
header { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: baseline; padding: .8rem 1.2rem;
  background: var(--panel); border-bottom: 1px solid var(--line); }
header h1 { margin: 0; font-size: 1.25rem; }
#agent-meta, #agent-description, .hint { color: var(--muted); }
#status { margin-left: auto; font-size: .9em; color: var(--muted); }
#status.error, .error { color: var(--bad); }
main { display: grid; grid-template-columns: minmax(0, 1.15fr) minmax(0, 1fr); gap: 1rem; padding: 1rem 1.2rem; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: .8rem 1rem; min-width: 0; }
.panel h2 { margin: 0 0 .6rem; font-size: 1rem; display: flex; align-items: center; gap: .6rem; }
.panel h3 { margin: .8rem 0 .3rem; font-size: .9rem; color: var(--muted); }
#chat-panel { grid-row: span 2; display: flex; flex-direction: column; }
#auth, #card-panel { grid-column: 1 / -1; }
#auth label { display: inline-flex; gap: .4rem; align-items: center; margin-right: 1rem; }
input, textarea { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: .35rem .5rem; }
textarea { width: 100%; box-sizing: border-box; resize: vertical; }
button { font: inherit; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 6px;
  padding: .25rem .7rem; cursor: pointer; }
button.quiet { background: transparent; color: var(--accent); }
button:disabled { opacity: .45; cursor: default; }
#transcript { min-height: 8rem; max-height: 24rem; overflow-y: auto; display: flex; flex-direction: column; gap: .5rem;
  padding: .3rem 0 .6rem; }
.msg { max-width: 85%; padding: .45rem .7rem; border-radius: 10px; white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.user { align-self: flex-end; background: var(--accent); color: #fff; }
.msg.agent { align-self: flex-start; background: var(--code); }
.msg .who { font-size: .75em; opacity: .75; display: flex; gap: .5rem; }
#chat-form { display: flex; gap: .5rem; align-items: flex-end; }
ol.log { list-style: none; margin: 0; padding: 0; font: 12px/1.5 ui-monospace, "SFMono-Regular", Menlo, monospace;
  max-height: 14rem; overflow-y: auto; }
ol.log li { display: flex; gap: .6rem; padding: .15rem .3rem; border-bottom: 1px solid var(--line); }
ol.log li.head { color: var(--muted); }
ol.log .n { color: var(--muted); min-width: 1.5rem; text-align: right; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: .3rem .4rem; border-bottom: 1px solid var(--line); }
th { font-weight: 600; color: var(--muted); font-size: .85em; }
td.actions { text-align: right; white-space: nowrap; }
td.actions button { margin-left: .3rem; }
.pager { display: flex; gap: .6rem; align-items: center; justify-content: flex-end; margin-top: .5rem; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 12px; }
pre { background: var(--code); padding: .6rem; border-radius: 6px; overflow: auto; max-height: 22rem; margin: 0; }
.state { font-weight: 600; }
.s-completed { color: var(--ok); }
.s-in_progress, .s-submitted { color: var(--run); }
.s-input_required, .s-auth_required { color: var(--wait); }
.s-canceled, .s-failed, .s-rejected, .s-error { color: var(--bad); }
#versions { display: inline-flex; gap: .25rem; align-items: center; }
button.ver { padding: .05rem .45rem; font-size: .85em; background: transparent; color: var(--accent); }
button.ver[aria-pressed="true"] { background: var(--accent); color: #fff; }
.id { display: inline-flex; gap: .1rem .25rem; align-items: baseline; min-width: 0; }
.id code { white-space: nowrap; }
.id code.whole { white-space: normal; overflow-wrap: anywhere; }
button.copy { padding: 0 .35rem; font-size: .75em; }
#hints { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; color: var(--muted); }
#hints button { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 12px; }
.chat-buttons { display: flex; flex-direction: column; gap: .3rem; }
#tasks tr[data-task-id] { cursor: pointer; }
#tasks tr.selected { background: var(--code); }
#detail-panel { grid-column: 1 / -1; }
#detail-panel h2 { flex-wrap: wrap; }
#detail-panel h2 .actions { margin-left: auto; display: flex; gap: .4rem; }
.detail-grid { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0 1rem; }
.detail-grid ol.log li { flex-wrap: wrap; }
.detail-grid .text { white-space: pre-wrap; overflow-wrap: anywhere; flex-basis: 100%; }
.artifact h4 { margin: .4rem 0 .2rem; font-size: .85rem; display: flex; gap: .5rem; flex-wrap: wrap; }
#card-panel summary { cursor: pointer; }
#card-panel summary h2 { display: inline-flex; margin: 0; }
#card-panel[open] summary { margin-bottom: .6rem; }
#sink-url { overflow-wrap: anywhere; }
ol.log details { flex-basis: 100%; }
#deliveries li { flex-wrap: wrap; }
@media (max-width: 900px) {
  main, .detail-grid { grid-template-columns: minmax(0, 1fr); }
  #chat-panel { grid-row: auto; }
}
@media (max-width: 520px) {
  main { padding: .6rem; gap: .6rem; }
  .panel { padding: .6rem .6rem; }
  th, td { padding: .3rem .2rem; }
  td.actions { white-space: normal; }
  .id { flex-wrap: wrap; }
  td.actions button { margin: .1rem 0 .1rem .25rem; padding: .2rem .45rem; }
}
`

const BODY = `
<header>
  <h1 id="agent-name">A2A console</h1>
  <span id="agent-meta"></span>
  <span id="versions" role="group" aria-label="A2A versions the server speaks; the pressed one is the console's">A2A</span>
  <span id="agent-description"></span>
  <span id="status" role="status"></span>
</header>
<main>
  <section id="auth" class="panel" hidden>
    <h2>Credentials</h2>
    <form id="auth-form">
      <label>API key <small>(<span id="api-key-header">X-API-Key</span>)</small>
        <input id="api-key" type="password" autocomplete="off" spellcheck="false"></label>
      <label>Bearer token <input id="bearer" type="password" autocomplete="off" spellcheck="false"></label>
      <button id="save-auth" type="submit">Use</button>
      <button id="clear-auth" class="quiet" type="button">Clear</button>
      <span class="hint">Kept in this tab's session storage only.</span>
    </form>
  </section>
  <section id="chat-panel" class="panel">
    <h2>Chat <small id="chat-method" class="hint"></small></h2>
    <div id="transcript" aria-live="polite">
      <div id="hints" hidden><span>Try</span></div>
    </div>
    <form id="chat-form">
      <textarea id="chat-input" rows="2" placeholder="Message the agent (Enter sends, Shift+Enter for a new line)"></textarea>
      <div class="chat-buttons">
        <button id="send" type="submit">Send</button>
        <button id="stop" class="quiet" type="button" disabled title="Cancel the task of the last message">Stop</button>
      </div>
    </form>
    <h3>Stream events, as they arrive</h3>
    <ol id="events" class="log"></ol>
  </section>
  <section id="tasks-panel" class="panel">
    <h2>Tasks <button id="refresh-tasks" class="quiet" type="button">Refresh</button></h2>
    <p id="tasks-error" class="error"></p>
    <table>
      <thead><tr><th>Task</th><th>State</th><th>Updated</th><th></th></tr></thead>
      <tbody id="tasks"></tbody>
    </table>
    <div id="tasks-pager" class="pager" hidden>
      <button id="newer-tasks" class="quiet" type="button">Newer</button>
      <span id="tasks-page" class="hint"></span>
      <button id="older-tasks" class="quiet" type="button">Older</button>
    </div>
  </section>
  <section id="push-panel" class="panel">
    <h2>Push <button id="try-push" type="button" disabled>Try push</button></h2>
    <p class="hint">Webhook sink: <code id="sink-url">…</code></p>
    <ol id="deliveries" class="log"></ol>
  </section>
  <section id="detail-panel" class="panel" hidden>
    <h2>Task <span id="detail-id"></span> <span id="detail-state" class="state"></span>
      <span class="actions">
        <button id="detail-refresh" class="quiet" type="button">Refresh</button>
        <button id="detail-close" class="quiet" type="button">Close</button>
      </span>
    </h2>
    <p id="detail-meta" class="hint"></p>
    <p id="detail-error" class="error"></p>
    <div class="detail-grid">
      <div><h3>State timeline</h3><ol id="detail-timeline" class="log"></ol></div>
      <div><h3>History</h3><ol id="detail-history" class="log"></ol></div>
      <div><h3>Artifacts</h3><div id="detail-artifacts"></div></div>
      <div><h3>Push deliveries to the sink</h3><ol id="detail-deliveries" class="log"></ol></div>
    </div>
  </section>
  <details id="card-panel" class="panel">
    <summary><h2>Agent card</h2></summary>
    <pre id="card"></pre>
  </details>
</main>`

/** The whole page; `nonce` must be the one in the response's Content-Security-Policy. */
export function consolePage (nonce: string, opts: ConsolePageOptions): string {
  return `<!doctype html>
<html lang="en" data-dialect="${opts.dialect}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>A2A console</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>${BODY}
<script nonce="${nonce}">${SCRIPT_CORE}${SCRIPT_VIEW}${SCRIPT_UI}${SCRIPT_CHAT}</script>
</body>
</html>
`
}
