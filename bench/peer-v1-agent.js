// What the @a2a-js/sdk 1.3 peers share (bench/peer-v1.js, bench/peer-v1-postgres.js): their agent card and an
// executor that does the work of our built-in agent: the task, an `Agent-result` artifact echoing the message,
// completed, and no other agent message.
import { randomUUID } from 'node:crypto'
import { TaskState } from '@a2a-js/sdk-v1'
import { AgentEvent } from '@a2a-js/sdk-v1/server'

/** The card of a peer on `port`, its interfaces JSON-RPC and, when given, HTTP+JSON and gRPC (`grpcPort`). */
export function peerCard (port, { rest = false, grpcPort } = {}) {
  const url = `http://127.0.0.1:${port}/`
  const supportedInterfaces = [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }]
  if (rest) supportedInterfaces.push({ url, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' })
  if (grpcPort !== undefined) supportedInterfaces.push({ url: `127.0.0.1:${grpcPort}`, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' })
  return {
    name: 'Echo Agent',
    description: 'Echoes every message as an Agent-result artifact',
    supportedInterfaces,
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
}

export class EchoExecutor {
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
