import { Type } from '@sinclair/typebox'
import {
  V10CreatePushConfigParamsSchema, V10GetTaskParamsSchema, V10ListPushConfigsParamsSchema, V10ListPushConfigsResultSchema,
  V10ListTasksParamsSchema, V10ListTasksResultSchema, V10PushConfigIdParamsSchema, V10PushConfigResultSchema,
  V10SendMessageParamsSchema, V10TaskIdParamsSchema, type V10SendMessageParams
} from '../../../schemas/v10/methods.js'
import { V10StreamResponseSchema, V10TaskSchema, type V10PushConfig } from '../../../schemas/v10/objects.js'
import {
  camelKeys, decodeMessage, decodePushConfig, decodeState, encodePushConfig, encodeTask, fieldError
} from '../../a2a/codec-v10.js'
import { resumePoint, type A2AOperations, type SendInput } from '../../a2a/operations.js'
import { parseRfc3339 } from '../../a2a/timestamp.js'
import { JsonRpcError, RpcCode } from '../../kernel/errors.js'
import type { PushService } from '../../push/service.js'
import type { MethodContext, MethodDefinition } from '../registry.js'

export interface V10MethodDeps {
  ops: A2AOperations
  /** `protocol.tenant`: the one tenant a request may name (CONTRACT.md §12); none when unset. */
  tenant?: string
}

const DEFAULT_PAGE_SIZE = 50
/** Push configs per page of ListTaskPushNotificationConfigs when none is asked for: a task has at most 10. */
const DEFAULT_CONFIG_PAGE = 100

/** CONTRACT.md §11.4: -32003, the v1.0 answer to a push config while push notifications are off. */
export function pushNotSupportedV10 (): JsonRpcError {
  return new JsonRpcError(RpcCode.pushNotSupported, 'Push notifications are not supported', 'push notifications are not supported')
}

/** -32004: subscribing to a task that has ended (CONTRACT.md §11.3). */
function terminalTask (task: { id: string, status: { state: string } }): JsonRpcError {
  return new JsonRpcError(RpcCode.unsupportedOperation, 'Unsupported operation',
    `task "${task.id}" is ${task.status.state}: a task that has ended has no events to subscribe to`)
}

/**
 * The params with snake_case keys renamed (CONTRACT.md §11.2), refused with -32602 when they name a tenant other
 * than this agent's (`""` is none: the official clients send it when the card lists no tenant).
 */
function tenantChecked (tenant: string | undefined): (params: unknown) => unknown {
  return params => {
    const renamed = camelKeys(params)
    const given = (renamed as { tenant?: unknown } | null | undefined)?.tenant
    if (typeof given === 'string' && given !== '' && given !== tenant) {
      throw fieldError('tenant', tenant === undefined
        ? `this agent is served without a tenant; "${given}" is none of its`
        : `unknown tenant "${given}": this agent is served as "${tenant}"`)
    }
    return renamed
  }
}

/** A SendMessage request as the operations take it. */
function sendInput (params: V10SendMessageParams, { extensions }: MethodContext): SendInput {
  const inline = params.configuration?.taskPushNotificationConfig
  const input: SendInput = {
    message: decodeMessage(params.message),
    metadata: params.metadata ?? undefined,
    pushField: 'params.configuration.taskPushNotificationConfig',
    pushOff: pushNotSupportedV10,
    extensions
  }
  if (inline !== undefined) {
    input.pushConfig = decodePushConfig(inline)
    input.pushVersion = '1.0'
  }
  return input
}

/**
 * The A2A v1.0 methods over JSON-RPC (CONTRACT.md §11.3): the same operations as their v0.3 twins, whose scopes
 * they share, with requests decoded from and answers encoded to the v1.0 form.
 */
export function createV10Methods ({ ops, tenant }: V10MethodDeps): MethodDefinition[] {
  const prepare = tenantChecked(tenant)
  const messageErrors = [RpcCode.taskNotFound, RpcCode.contentTypeNotSupported, RpcCode.pushNotSupported]

  const send: MethodDefinition<typeof V10SendMessageParamsSchema> = {
    name: 'SendMessage',
    twin: 'message/send',
    summary: 'A2A v1.0: sends a message, starting a task or continuing message.taskId\'s. Answers { task } once it settles, unless returnImmediately.',
    params: V10SendMessageParamsSchema,
    prepare,
    result: Type.Object({ task: V10TaskSchema }),
    errors: messageErrors,
    handler (params, ctx) {
      const historyLength = params.configuration?.historyLength
      const sent = ops.send(sendInput(params, ctx), ctx.principal, params.configuration?.returnImmediately !== true)
      if (sent instanceof Promise) return sent.then(record => ({ task: encodeTask(record.task, historyLength) }))
      return { task: encodeTask(sent.task, historyLength) }
    }
  }

  const stream: MethodDefinition<typeof V10SendMessageParamsSchema> = {
    name: 'SendStreamingMessage',
    twin: 'message/stream',
    summary: 'A2A v1.0: sends a message and streams StreamResponse events (the Task, then status and artifact updates) until the task settles.',
    params: V10SendMessageParamsSchema,
    prepare,
    result: V10StreamResponseSchema,
    streaming: true,
    errors: messageErrors,
    handler (params, ctx) {
      return ops.stream(sendInput(params, ctx), ctx.principal, 'v1')
    }
  }

  const subscribe: MethodDefinition<typeof V10TaskIdParamsSchema> = {
    name: 'SubscribeToTask',
    twin: 'tasks/resubscribe',
    summary: 'A2A v1.0: streams a task that has not ended: { task } first, then its updates until it settles (-32004 once it has ended).',
    params: V10TaskIdParamsSchema,
    prepare,
    result: V10StreamResponseSchema,
    streaming: true,
    errors: [RpcCode.taskNotFound, RpcCode.unsupportedOperation],
    handler ({ id, metadata }, ctx) {
      return ops.subscribe(id, ctx.principal, 'v1', terminalTask, resumePoint(ctx.lastEventId, metadata, 'params.metadata'))
    }
  }

  const get: MethodDefinition<typeof V10GetTaskParamsSchema> = {
    name: 'GetTask',
    twin: 'tasks/get',
    summary: 'A2A v1.0: a task; historyLength unset = all, 0 = none, N = the last N messages.',
    params: V10GetTaskParamsSchema,
    prepare,
    result: V10TaskSchema,
    errors: [RpcCode.taskNotFound],
    async handler ({ id, historyLength }, ctx) {
      return encodeTask((await ops.get(id, ctx.principal)).task, historyLength)
    }
  }

  const cancel: MethodDefinition<typeof V10TaskIdParamsSchema> = {
    name: 'CancelTask',
    twin: 'tasks/cancel',
    summary: 'A2A v1.0: cancels a task that has not finished, and answers with it.',
    params: V10TaskIdParamsSchema,
    prepare,
    result: V10TaskSchema,
    errors: [RpcCode.taskNotFound, RpcCode.taskNotCancelable],
    async handler ({ id }, ctx) {
      return encodeTask((await ops.cancel(id, ctx.principal)).task)
    }
  }

  const list: MethodDefinition<typeof V10ListTasksParamsSchema> = {
    name: 'ListTasks',
    twin: 'tasks/list',
    summary: 'A2A v1.0: the caller\'s tasks, newest first, by contextId, status and statusTimestampAfter, a page at a time.',
    params: V10ListTasksParamsSchema,
    prepare,
    result: V10ListTasksResultSchema,
    async handler (params, ctx) {
      let state
      // UNSPECIFIED (0) is the proto's unset value: no filter.
      if (params.status !== undefined && params.status !== 0 && params.status !== 'TASK_STATE_UNSPECIFIED') {
        state = decodeState(params.status)
        if (state === undefined) throw fieldError('status', 'is not a task state')
      }
      let statusAfterMs: number | undefined
      if (params.statusTimestampAfter !== undefined) {
        statusAfterMs = parseRfc3339(params.statusTimestampAfter)
        if (statusAfterMs === undefined) throw fieldError('statusTimestampAfter', 'must be an RFC 3339 timestamp')
      }
      const page = await ops.list({
        contextId: params.contextId === '' ? undefined : params.contextId,
        state,
        pageSize: params.pageSize ?? DEFAULT_PAGE_SIZE,
        pageToken: params.pageToken === '' ? undefined : params.pageToken,
        statusAfterMs,
        count: true
      }, ctx.principal)
      const artifacts = params.includeArtifacts === true
      const tasks = page.tasks.map(r => encodeTask(r.task, params.historyLength, artifacts))
      // All four always written; pageSize is this page's count (CONTRACT.md §11.3).
      return { tasks, nextPageToken: page.nextPageToken, pageSize: tasks.length, totalSize: page.total as number }
    }
  }

  /** The push service, or -32003 when push notifications are off. */
  function pushOn (): PushService {
    if (ops.push === undefined) throw pushNotSupportedV10()
    return ops.push
  }

  const createConfig: MethodDefinition<typeof V10CreatePushConfigParamsSchema> = {
    name: 'CreateTaskPushNotificationConfig',
    twin: 'tasks/pushNotificationConfig/set',
    summary: 'A2A v1.0: adds a webhook to a task (a client-given id is kept; the first id-less one is "default").',
    params: V10CreatePushConfigParamsSchema,
    prepare,
    result: V10PushConfigResultSchema,
    errors: [RpcCode.taskNotFound, RpcCode.pushNotSupported],
    async handler (params, ctx) {
      const push = pushOn()
      await ops.get(params.taskId, ctx.principal)
      const config = decodePushConfig(params as V10PushConfig)
      push.check(config, 'params', '1.0')
      const stored = await push.set(params.taskId, config, '1.0')
      return encodePushConfig(params.taskId, stored.pushNotificationConfig)
    }
  }

  const getConfig: MethodDefinition<typeof V10PushConfigIdParamsSchema> = {
    name: 'GetTaskPushNotificationConfig',
    twin: 'tasks/pushNotificationConfig/get',
    summary: 'A2A v1.0: a webhook of a task, by id. Credentials are never returned.',
    params: V10PushConfigIdParamsSchema,
    prepare,
    result: V10PushConfigResultSchema,
    errors: [RpcCode.taskNotFound, RpcCode.pushNotSupported],
    async handler ({ taskId, id }, ctx) {
      const push = pushOn()
      await ops.get(taskId, ctx.principal)
      return encodePushConfig(taskId, (await push.get(taskId, id)).pushNotificationConfig)
    }
  }

  const listConfigs: MethodDefinition<typeof V10ListPushConfigsParamsSchema> = {
    name: 'ListTaskPushNotificationConfigs',
    twin: 'tasks/pushNotificationConfig/list',
    summary: 'A2A v1.0: the webhooks of a task, oldest first, a page at a time.',
    params: V10ListPushConfigsParamsSchema,
    prepare,
    result: V10ListPushConfigsResultSchema,
    errors: [RpcCode.taskNotFound, RpcCode.pushNotSupported],
    async handler ({ taskId, pageSize, pageToken }, ctx) {
      const push = pushOn()
      await ops.get(taskId, ctx.principal)
      const all = await push.list(taskId)
      // The token is the index of the page's first config: a task holds at most 10, in creation order.
      const start = pageToken === undefined || pageToken === '' ? 0 : Number(pageToken)
      if (!Number.isSafeInteger(start) || start < 0 || String(start) !== (pageToken === undefined || pageToken === '' ? '0' : pageToken)) {
        throw fieldError('pageToken', 'is not a token this server gave')
      }
      const size = pageSize == null || pageSize === 0 ? DEFAULT_CONFIG_PAGE : pageSize
      const end = Math.min(all.length, start + size)
      return {
        configs: all.slice(start, end).map(c => encodePushConfig(taskId, c.pushNotificationConfig)),
        nextPageToken: end < all.length ? String(end) : ''
      }
    }
  }

  const deleteConfig: MethodDefinition<typeof V10PushConfigIdParamsSchema> = {
    name: 'DeleteTaskPushNotificationConfig',
    twin: 'tasks/pushNotificationConfig/delete',
    summary: 'A2A v1.0: removes a webhook from a task. Answers null.',
    params: V10PushConfigIdParamsSchema,
    prepare,
    result: Type.Null(),
    errors: [RpcCode.taskNotFound, RpcCode.pushNotSupported],
    async handler ({ taskId, id }, ctx) {
      const push = pushOn()
      await ops.get(taskId, ctx.principal)
      return push.remove(taskId, id)
    }
  }

  return [send, stream, get, list, cancel, subscribe, createConfig, getConfig, listConfigs, deleteConfig] as unknown as MethodDefinition[]
}
