// The peer on PostgreSQL: @a2a-js/sdk 1.3 with express, its DefaultRequestHandler, and its own database stores
// (DatabaseTaskStore and DatabasePushNotificationStore on Kysely and pg, a pool of 10 as ours), the database migrated
// beforehand with the SDK's `a2a-db upgrade`. The executor does the work of our built-in agent: the task, an
// `Agent-result` artifact echoing the message, completed. It speaks A2A v1.0 (SendMessage over JSON-RPC).
// Usage: node bench/peer-v1-postgres.js PORT DATABASE_URL
import { randomUUID } from 'node:crypto'
import express from 'express'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { TaskState } from '@a2a-js/sdk-v1'
import { AgentEvent, DefaultPushNotificationSender, DefaultRequestHandler } from '@a2a-js/sdk-v1/server'
import { DatabasePushNotificationStore, DatabaseTaskStore } from '@a2a-js/sdk-v1/server/database'
import { UserBuilder, jsonRpcHandler } from '@a2a-js/sdk-v1/server/express'

const port = Number(process.argv[2] ?? 0)
const url = process.argv[3]

const card = {
  name: 'Echo Agent',
  description: 'Echoes every message as an Agent-result artifact',
  supportedInterfaces: [{ url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the message', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  documentationUrl: '',
  signatures: []
}

class EchoExecutor {
  async execute (ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx
    const now = () => new Date().toISOString()
    if (task === undefined) {
      bus.publish(AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now(), message: undefined },
        artifacts: [],
        history: [userMessage],
        metadata: undefined
      }))
    }
    bus.publish(AgentEvent.artifactUpdate({
      taskId,
      contextId,
      artifact: { artifactId: randomUUID(), name: 'Agent-result', description: '', parts: [...userMessage.parts], metadata: undefined, extensions: [] },
      append: false,
      lastChunk: true,
      metadata: undefined
    }))
    bus.publish(AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: now(), message: undefined },
      metadata: undefined
    }))
    bus.finished()
  }

  async cancelTask () {}
}

const pool = new pg.Pool({ connectionString: url, max: 10 })
const db = new Kysely({ dialect: new PostgresDialect({ pool }) })
const pushStore = new DatabasePushNotificationStore(db)
const handler = new DefaultRequestHandler(card, new DatabaseTaskStore(db), new EchoExecutor(), undefined, pushStore,
  new DefaultPushNotificationSender(pushStore))
const app = express()
app.use(express.json({ limit: '16mb' }))
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
const server = app.listen(port, '127.0.0.1')
process.on('SIGTERM', () => {
  server.close(() => { db.destroy().finally(() => process.exit(0)) })
  server.closeAllConnections()
})
