// The ceiling of our stack: bare Fastify with one `POST /` route answering a canned ~600-byte Task, the size of what
// `message/send` answers for the benchmark's message. Usage: node bench/bare.js PORT
import Fastify from 'fastify'

const port = Number(process.argv[2] ?? 0)
const id = '6f1d21d2-4fc8-424e-af39-f8f6a6439de0'
const contextId = 'b163992e-ef68-44ea-8edc-928dd9beabcc'
const parts = [{ kind: 'text', text: 'hello bench' }]
const TASK = {
  jsonrpc: '2.0',
  id: 1,
  result: {
    id,
    contextId,
    kind: 'task',
    status: { state: 'completed', timestamp: '2026-01-01T00:00:00.000Z' },
    artifacts: [{ artifactId: 'c1856dec-79cd-4f93-ac7c-1c2ad788e6fe', parts, name: 'Agent-result' }],
    history: [{ kind: 'message', role: 'user', messageId: 'bench', parts, taskId: id, contextId }],
    metadata: { bench: 'bare fastify' }
  }
}

const app = Fastify({ logger: false })
app.post('/', async function () {
  return TASK
})
await app.listen({ host: '127.0.0.1', port })
process.on('SIGTERM', () => { app.close().then(() => process.exit(0)) })
