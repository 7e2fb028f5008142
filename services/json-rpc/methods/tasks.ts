import type { A2AConfig } from '../../../schemas/config.js'
import {
  MessageSendParamsSchema, type MessageSendParams, TaskIdParamsSchema, TaskListParamsSchema, TaskListResultSchema, TaskQueryParamsSchema
} from '../../../schemas/methods.js'
import { TaskSchema } from '../../../schemas/task.js'
import { RpcCode } from '../../kernel/errors.js'
import { pushNotSupported, resumePoint, type A2AOperations, type SendInput } from '../../a2a/operations.js'
import { encodeTask03 } from '../../a2a/codec-v03-rest.js'
import { normalizeState, presentTask } from '../../a2a/codec-v03.js'
import type { Task } from '../../../schemas/task.js'
import type { MethodContext, MethodDefinition } from '../registry.js'

export interface TaskMethodDeps {
  config: A2AConfig
  /** The A2A operations, shared with every version and binding. */
  ops: A2AOperations
}

const DEFAULT_PAGE_SIZE = 50

/** A v0.3 message/send or message/stream request as the operations take it. */
function sendInput ({ message, configuration, metadata }: MessageSendParams, { extensions }: MethodContext): SendInput {
  return {
    message,
    metadata,
    pushConfig: configuration?.pushNotificationConfig,
    pushField: 'params.configuration.pushNotificationConfig',
    pushOff: pushNotSupported,
    extensions
  }
}

/** `message/send`, `message/stream` and the `tasks/*` methods that follow a task (CONTRACT.md §5 and §7): A2A v0.3. */
export function createTaskMethods ({ config, ops }: TaskMethodDeps): MethodDefinition[] {
  const dialect = config.protocol.dialect
  /** A task as the call's wire shows it: the dialect's Task, or the v0.3 proto's from a `/v1` REST route. */
  const present = (task: Task, ctx: MethodContext, historyLength?: number): unknown =>
    ctx.wire === 'rest03' ? encodeTask03(task, historyLength) : presentTask(task, dialect, historyLength)
  // With push off, a message carrying a push config is -32601 (CONTRACT.md §4).
  const messageErrors = [RpcCode.taskNotFound, RpcCode.contentTypeNotSupported, ...(ops.push === undefined ? [RpcCode.methodNotFound] : [])]

  const send: MethodDefinition<typeof MessageSendParamsSchema> = {
    name: 'message/send',
    summary: 'Sends a message: starts a task, or continues the task named by message.taskId. Answers with the Task.',
    params: MessageSendParamsSchema,
    result: TaskSchema,
    errors: messageErrors,
    // Not async: over the memory store, with an executor that answers at once, the task is answered at once.
    handler (params, ctx) {
      const historyLength = params.configuration?.historyLength
      const sent = ops.send(sendInput(params, ctx), ctx.principal, params.configuration?.blocking !== false)
      if (sent instanceof Promise) return sent.then(record => present(record.task, ctx, historyLength))
      return present(sent.task, ctx, historyLength)
    }
  }

  const stream: MethodDefinition<typeof MessageSendParamsSchema> = {
    name: 'message/stream',
    summary: 'Sends a message and streams the task\'s events over Server-Sent Events until it settles.',
    params: MessageSendParamsSchema,
    result: TaskSchema,
    streaming: true,
    errors: messageErrors,
    handler (params, ctx) {
      return ops.stream(sendInput(params, ctx), ctx.principal, ctx.wire ?? dialect)
    }
  }

  const resubscribe: MethodDefinition<typeof TaskIdParamsSchema> = {
    name: 'tasks/resubscribe',
    summary: 'Streams a task: its current snapshot, then live events until it settles.',
    params: TaskIdParamsSchema,
    result: TaskSchema,
    streaming: true,
    errors: [RpcCode.taskNotFound],
    handler ({ id, metadata }, ctx) {
      return ops.subscribe(id, ctx.principal, ctx.wire ?? dialect, undefined, resumePoint(ctx.lastEventId, metadata, 'params.metadata'))
    }
  }

  const get: MethodDefinition<typeof TaskQueryParamsSchema> = {
    name: 'tasks/get',
    summary: 'Returns a task, its history cut to the last historyLength messages.',
    params: TaskQueryParamsSchema,
    result: TaskSchema,
    errors: [RpcCode.taskNotFound],
    async handler ({ id, historyLength }, ctx) {
      const record = await ops.get(id, ctx.principal)
      return present(record.task, ctx, historyLength)
    }
  }

  const cancel: MethodDefinition<typeof TaskIdParamsSchema> = {
    name: 'tasks/cancel',
    summary: 'Cancels a task that has not finished: it moves to canceled and its executor is aborted.',
    params: TaskIdParamsSchema,
    result: TaskSchema,
    errors: [RpcCode.taskNotFound, RpcCode.taskNotCancelable],
    async handler ({ id }, ctx) {
      const record = await ops.cancel(id, ctx.principal)
      return present(record.task, ctx)
    }
  }

  const list: MethodDefinition<typeof TaskListParamsSchema> = {
    name: 'tasks/list',
    summary: 'Lists the caller\'s tasks, newest first, optionally by context and state, a page at a time.',
    params: TaskListParamsSchema,
    result: TaskListResultSchema,
    async handler (params, ctx) {
      const page = await ops.list({
        contextId: params.contextId,
        state: params.state === undefined ? undefined : normalizeState(params.state),
        pageSize: params.pageSize ?? DEFAULT_PAGE_SIZE,
        pageToken: params.pageToken
      }, ctx.principal)
      return {
        tasks: page.tasks.map(r => present(r.task, ctx, params.historyLength)),
        nextPageToken: page.nextPageToken
      }
    }
  }

  return [send, stream, get, cancel, list, resubscribe] as unknown as MethodDefinition[]
}
