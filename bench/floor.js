// The floor: the least an A2A `message/send` can do on Fastify, as a reference for the ratio to bare Fastify. One
// `POST /` route that checks the JSON-RPC envelope and the message, makes a task with two ids, moves it through
// `submitted`, `working` and `completed` with an `Agent-result` artifact echoing the message (a third id), keeps it
// in a Map of 10,000 tasks (the oldest evicted at O(1)) and answers it. Nothing else: no schema validation, no
// tenancy, no events, no push, no logging. Usage: node bench/floor.js PORT
import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'

const port = Number(process.argv[2] ?? 0)
const MAX_TASKS = 10_000
const tasks = new Map()
const order = new Array(MAX_TASKS)
let next = 0

let lastMs = 0
let lastIso = ''
function isoNow () {
  const ms = Date.now()
  if (ms !== lastMs) {
    lastMs = ms
    lastIso = new Date(ms).toISOString()
  }
  return lastIso
}

function store (task) {
  if (!tasks.has(task.id)) {
    const evicted = order[next]
    if (evicted !== undefined) tasks.delete(evicted)
    order[next] = task.id
    next = (next + 1) % MAX_TASKS
  }
  tasks.set(task.id, task)
}

const fail = (id, code, message) => ({ jsonrpc: '2.0', id, error: { code, message } })

const app = Fastify({ logger: false })
app.post('/', async function (request) {
  const body = request.body
  if (body === null || typeof body !== 'object' || body.jsonrpc !== '2.0' || body.method !== 'message/send') {
    return fail(body?.id ?? null, -32600, 'Invalid Request')
  }
  const m = body.params?.message
  if (typeof m !== 'object' || m === null || m.kind !== 'message' || m.role !== 'user' ||
      typeof m.messageId !== 'string' || !Array.isArray(m.parts) || m.parts.length === 0 ||
      m.parts.some(p => p?.kind !== 'text' || typeof p.text !== 'string')) {
    return fail(body.id, -32602, 'Invalid params')
  }
  const id = randomUUID()
  const contextId = typeof m.contextId === 'string' ? m.contextId : randomUUID()
  const entry = { kind: 'message', role: 'user', messageId: m.messageId, parts: m.parts, taskId: id, contextId }
  let task = { id, contextId, kind: 'task', status: { state: 'submitted', timestamp: isoNow() }, artifacts: [], history: [entry], metadata: null }
  store(task)
  task = { ...task, status: { state: 'working', timestamp: isoNow() } }
  store(task)
  const artifact = { artifactId: randomUUID(), name: 'Agent-result', parts: [...m.parts] }
  task = { ...task, artifacts: [artifact], status: { state: 'completed', timestamp: isoNow() } }
  store(task)
  return { jsonrpc: '2.0', id: body.id, result: task }
})
await app.listen({ host: '127.0.0.1', port })
process.on('SIGTERM', () => { app.close().then(() => process.exit(0)) })
