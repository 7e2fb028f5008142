import type { TaskPushNotificationConfig } from '../../schemas/push-config.js'
import { type AgentCard, v1Requirements, v1SecurityScheme } from '../a2a/agent-card.js'
import { decodeCreatePushConfig03, decodeSendRequest03, encodePushConfig03 } from '../a2a/codec-v03-rest.js'
import { fieldError } from '../a2a/codec-v10.js'
import type { RpcSpec } from './rpcs.js'

// The v0.3 service `a2a.v1.A2AService` (CONTRACT.md §13): each RPC runs the v0.3 method of the same operation with
// the params the `/v1` REST routes build from the same proto messages (services/a2a/codec-v03-rest.ts), and answers
// in the v0.3 proto form (`wire: 'rest03'`). Resources are named as the proto names them: `tasks/{id}` and
// `tasks/{id}/pushNotificationConfigs/{configId}`.

type Json = Record<string, unknown>

const TASK_NAME = /^tasks\/([^/]+)$/
const CONFIG_NAME = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/

/** The task id of a `tasks/{id}` name, or -32602 naming the field. */
function taskOf (value: unknown, field: string): string {
  const m = typeof value === 'string' ? TASK_NAME.exec(value) : null
  if (m === null) throw fieldError(field, 'must name a task: tasks/{id}')
  return m[1]
}

/** The task and config ids of a `tasks/{id}/pushNotificationConfigs/{configId}` name. */
function configOf (value: unknown): { id: string, pushNotificationConfigId: string } {
  const m = typeof value === 'string' ? CONFIG_NAME.exec(value) : null
  if (m === null) throw fieldError('name', 'must name a push config: tasks/{id}/pushNotificationConfigs/{configId}')
  return { id: m[1], pushNotificationConfigId: m[2] }
}

const pushConfig03 = (result: unknown): unknown => encodePushConfig03(result as TaskPushNotificationConfig)

/** The v0.3 RPCs: what each runs, with which params, answering what. */
export const V03_RPCS: Readonly<Record<string, RpcSpec>> = {
  SendMessage: { method: 'message/send', wire: 'rest03', params: decodeSendRequest03, encode: task => ({ task }) },
  SendStreamingMessage: { method: 'message/stream', wire: 'rest03', params: decodeSendRequest03 },
  GetTask: {
    method: 'tasks/get',
    wire: 'rest03',
    // 0 is the proto's unset value: the whole history.
    params: ({ name, historyLength }) => historyLength === undefined || historyLength === 0 ? { id: taskOf(name, 'name') } : { id: taskOf(name, 'name'), historyLength }
  },
  CancelTask: { method: 'tasks/cancel', wire: 'rest03', params: ({ name }) => ({ id: taskOf(name, 'name') }) },
  TaskSubscription: { method: 'tasks/resubscribe', wire: 'rest03', params: ({ name }) => ({ id: taskOf(name, 'name') }) },
  CreateTaskPushNotificationConfig: {
    method: 'tasks/pushNotificationConfig/set',
    params: request => decodeCreatePushConfig03(request, taskOf(request.parent, 'parent')),
    encode: pushConfig03
  },
  GetTaskPushNotificationConfig: { method: 'tasks/pushNotificationConfig/get', params: ({ name }) => configOf(name), encode: pushConfig03 },
  ListTaskPushNotificationConfig: {
    method: 'tasks/pushNotificationConfig/list',
    params: ({ parent }) => ({ id: taskOf(parent, 'parent') }),
    encode: result => ({ configs: (result as TaskPushNotificationConfig[]).map(encodePushConfig03) })
  },
  DeleteTaskPushNotificationConfig: { method: 'tasks/pushNotificationConfig/delete', params: ({ name }) => configOf(name), encode: () => ({}) },
  // Without credentials, the public card (as `GET /v1/card` answers); with them, the caller's extended card.
  GetAgentCard: { method: 'agent/getAuthenticatedExtendedCard', params: () => ({}), encode: card => agentCard03(card as AgentCard), public: true }
}

/**
 * A card in the v0.3 proto's form: security schemes as its `SecurityScheme` oneof and requirements as `Security`
 * (`{schemes: {name: {list}}}`); the rest of the v0.3 JSON card is already its ProtoJSON (fields it lacks are
 * dropped when it is written).
 */
export function agentCard03 (card: AgentCard): Json {
  // A signature is made over the card as v1.0 reads it (services/a2a/card-signing.ts), and this form has no
  // supportedInterfaces to verify it with: v0.3 gRPC clients get the card unsigned (docs/protocol.md, "Signed cards").
  const { signatures: _, ...unsigned } = card as AgentCard & { signatures?: unknown }
  const out: Json = { ...unsigned, skills: card.skills.map(skill => skill.security === undefined ? skill : { ...skill, security: v1Requirements(skill.security) }) }
  if (card.securitySchemes !== undefined) {
    out.securitySchemes = Object.fromEntries(Object.entries(card.securitySchemes).map(([name, scheme]) => [name, v1SecurityScheme(scheme)]))
  }
  if (card.security !== undefined) out.security = v1Requirements(card.security)
  return out
}
