// The peer: @a2a-js/sdk with express, its DefaultRequestHandler and InMemoryTaskStore, and an echo executor that
// writes an `Agent-result` artifact, the same work as our built-in agent. Push notifications through the SDK's
// in-memory store and sender. Usage: node bench/peer.js PORT
import { randomUUID } from 'node:crypto'
import express from 'express'
import {
  DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore
} from '@a2a-js/sdk/server'
import { UserBuilder, jsonRpcHandler } from '@a2a-js/sdk/server/express'

const port = Number(process.argv[2] ?? 0)

const card = {
  name: 'Echo Agent',
  description: 'Echoes every message as an Agent-result artifact',
  protocolVersion: '0.3.0',
  version: '1.0.0',
  url: `http://127.0.0.1:${port}/`,
  capabilities: { streaming: true, pushNotifications: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the message', tags: ['echo'] }]
}

class EchoExecutor {
  async execute (ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx
    if (task === undefined) {
      bus.publish({
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'submitted', timestamp: new Date().toISOString() },
        history: [userMessage]
      })
    }
    bus.publish({
      kind: 'artifact-update',
      taskId,
      contextId,
      artifact: { artifactId: randomUUID(), name: 'Agent-result', parts: [...userMessage.parts] }
    })
    bus.publish({
      kind: 'status-update',
      taskId,
      contextId,
      status: { state: 'completed', timestamp: new Date().toISOString() },
      final: true
    })
    bus.finished()
  }

  async cancelTask () {}
}

const pushStore = new InMemoryPushNotificationStore()
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor(), undefined, pushStore,
  new DefaultPushNotificationSender(pushStore))
const app = express()
app.use(express.json({ limit: '16mb' }))
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
const server = app.listen(port, '127.0.0.1')
process.on('SIGTERM', () => { server.close(() => process.exit(0)); server.closeAllConnections() })
