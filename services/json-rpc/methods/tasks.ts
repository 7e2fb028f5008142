import type { A2AConfig } from '../../../schemas/config.js'
import {
  MessageSendParamsSchema, type MessageSendParams, TaskIdParamsSchema, TaskListParamsSchema, TaskListResultSchema, TaskQueryParamsSchema
} from '../../../schemas/methods.js'
import type { PushNotificationConfig } from '../../../schemas/push-config.js'
import { TaskSchema, type Message, type Task } from '../../../schemas/task.js'
import { JsonRpcError, RpcCode, contentTypeNotSupported } from '../../errors.js'
import { normalizeState, presentTask } from '../../tasks/states.js'
import type { Principal } from '../../auth/principal.js'
import type { PushService } from '../../push/service.js'
import type { StoredTask } from '../../tasks/store.js'
import type { MaybePromise } from '../../maybe-promise.js'
import type { SettledTask, TaskService } from '../../tasks/task-service.js'
import { TaskEventStream } from '../../tasks/task-stream.js'
import type { MethodDefinition } from '../registry.js'

export interface TaskMethodDeps {
  config: A2AConfig
  tasks: TaskService
  /** Push notification configs, when push notifications are on. */
  push?: PushService
}

const DEFAULT_PAGE_SIZE = 50

/** `message/send`, `message/stream` and the `tasks/*` methods that follow a task (CONTRACT.md §5 and §7). */
export function createTaskMethods ({ config, tasks, push }: TaskMethodDeps): MethodDefinition[] {
  const dialect = config.protocol.dialect
  const timeoutMs = config.server.request_timeout * 1000
  const checkMediaTypes = mediaTypeCheck(config.agent.input_modes)
  // With push off, a message carrying a push config is -32601 (CONTRACT.md §4).
  const messageErrors = [RpcCode.taskNotFound, RpcCode.contentTypeNotSupported, ...(push === undefined ? [RpcCode.methodNotFound] : [])]

  /** The checks message/send and message/stream share, made before any task is touched. */
  function checkMessage ({ message, configuration }: MessageSendParams): void {
    const pushConfig = configuration?.pushNotificationConfig
    if (pushConfig !== undefined) {
      if (push === undefined) throw pushNotSupported()
      push.check(pushConfig, 'params.configuration.pushNotificationConfig')
    }
    checkMediaTypes(message)
  }

  /**
   * The task a message goes to: a new one, or the one its taskId names (joined). A push config in the request is
   * stored before the executor starts, so the first state change is delivered (CONTRACT.md §5). A new task in a
   * store in this process, with no push config, is made and started at once.
   */
  function route ({ message, configuration, metadata }: MessageSendParams, principal: Principal,
    joined?: (record: StoredTask) => void): MaybePromise<StoredTask> {
    const pushConfig = configuration?.pushNotificationConfig
    if (message.taskId !== undefined) return join(message.taskId, message, principal, pushConfig)
    const attach = pushConfig === undefined ? undefined : (taskId: string) => (push as PushService).set(taskId, pushConfig)
    const created = tasks.create(message, principal, metadata, attach)
    if (created instanceof Promise) return created.then(record => started(record, principal, joined))
    return started(created, principal, joined)
  }

  function started (record: StoredTask, principal: Principal, joined?: (record: StoredTask) => void): StoredTask {
    joined?.(record)
    tasks.dispatch(record, principal)
    return record
  }

  async function join (taskId: string, message: Message, principal: Principal, pushConfig?: PushNotificationConfig): Promise<StoredTask> {
    await tasks.get(taskId, principal)
    if (pushConfig !== undefined) await (push as PushService).set(taskId, pushConfig)
    return tasks.join(taskId, message, principal)
  }

  const send: MethodDefinition<typeof MessageSendParamsSchema> = {
    name: 'message/send',
    summary: 'Sends a message: starts a task, or continues the task named by message.taskId. Answers with the Task.',
    params: MessageSendParamsSchema,
    result: TaskSchema,
    errors: messageErrors,
    // Not async: over the memory store, with an executor that answers at once, the task is answered at once.
    handler (params, ctx) {
      checkMessage(params)
      const routed = route(params, ctx.principal)
      if (routed instanceof Promise) return routed.then(record => answer(record, params.configuration))
      return answer(routed, params.configuration)
    }
  }

  /** The Task message/send answers with: once it has settled, unless the client asked not to wait. */
  function answer (record: SettledTask, configuration: MessageSendParams['configuration']): MaybePromise<Task> {
    if (configuration?.blocking === false) return presentTask(record.task, dialect, configuration.historyLength)
    const settled = tasks.waitSettled(record, timeoutMs)
    if (settled instanceof Promise) return settled.then(done => presentTask(done.task, dialect, configuration?.historyLength))
    return presentTask(settled.task, dialect, configuration?.historyLength)
  }

  const stream: MethodDefinition<typeof MessageSendParamsSchema> = {
    name: 'message/stream',
    summary: 'Sends a message and streams the task\'s events over Server-Sent Events until it settles.',
    params: MessageSendParamsSchema,
    result: TaskSchema,
    streaming: true,
    errors: messageErrors,
    async handler (params, ctx) {
      checkMessage(params)
      const { message } = params
      if (message.taskId !== undefined) {
        // Subscribed before the message joins: the events of its turn cannot be missed.
        const events = new TaskEventStream(tasks.bus, message.taskId, { dialect, mode: 'message' })
        try {
          await events.ready
          return events.start(await route(params, ctx.principal))
        } catch (err) {
          events.close()
          throw err
        }
      }
      // The task is stored before the first event is written, and followed before it starts.
      let events: TaskEventStream | undefined
      await route(params, ctx.principal, record => {
        events = new TaskEventStream(tasks.bus, record.task.id, { dialect, mode: 'message' }).start(record)
      })
      return events
    }
  }

  const resubscribe: MethodDefinition<typeof TaskIdParamsSchema> = {
    name: 'tasks/resubscribe',
    summary: 'Streams a task: its current snapshot, then live events until it settles.',
    params: TaskIdParamsSchema,
    result: TaskSchema,
    streaming: true,
    errors: [RpcCode.taskNotFound],
    async handler ({ id }, ctx) {
      const events = new TaskEventStream(tasks.bus, id, { dialect, mode: 'resubscribe' })
      try {
        await events.ready
        return events.start(await tasks.get(id, ctx.principal))
      } catch (err) {
        events.close()
        throw err
      }
    }
  }

  const get: MethodDefinition<typeof TaskQueryParamsSchema> = {
    name: 'tasks/get',
    summary: 'Returns a task, its history cut to the last historyLength messages.',
    params: TaskQueryParamsSchema,
    result: TaskSchema,
    errors: [RpcCode.taskNotFound],
    async handler ({ id, historyLength }, ctx) {
      const record = await tasks.get(id, ctx.principal)
      return presentTask(record.task, dialect, historyLength)
    }
  }

  const cancel: MethodDefinition<typeof TaskIdParamsSchema> = {
    name: 'tasks/cancel',
    summary: 'Cancels a task that has not finished: it moves to canceled and its executor is aborted.',
    params: TaskIdParamsSchema,
    result: TaskSchema,
    errors: [RpcCode.taskNotFound, RpcCode.taskNotCancelable],
    async handler ({ id }, ctx) {
      const record = await tasks.cancel(id, ctx.principal)
      return presentTask(record.task, dialect)
    }
  }

  const list: MethodDefinition<typeof TaskListParamsSchema> = {
    name: 'tasks/list',
    summary: 'Lists the caller\'s tasks, newest first, optionally by context and state, a page at a time.',
    params: TaskListParamsSchema,
    result: TaskListResultSchema,
    async handler (params, ctx) {
      const page = await tasks.list({
        contextId: params.contextId,
        state: params.state === undefined ? undefined : normalizeState(params.state),
        pageSize: params.pageSize ?? DEFAULT_PAGE_SIZE,
        pageToken: params.pageToken
      }, ctx.principal)
      return {
        tasks: page.tasks.map(r => presentTask(r.task, dialect, params.historyLength)),
        nextPageToken: page.nextPageToken
      }
    }
  }

  return [send, stream, get, cancel, list, resubscribe] as unknown as MethodDefinition[]
}

/** CONTRACT.md §4: with push notifications off, a message carrying a push config is refused and no task is made. */
export function pushNotSupported (): JsonRpcError {
  return new JsonRpcError(RpcCode.methodNotFound, 'Method not found', 'push notifications are not supported')
}

/** The media type a part is read as: its file's mimeType, JSON for data, plain text for text. */
function mediaTypeOf (part: Message['parts'][number]): string {
  if (part.kind === 'text') return 'text/plain'
  if (part.kind === 'data') return 'application/json'
  return part.file.mimeType ?? 'application/octet-stream'
}

/**
 * The -32005 check: a part whose media type is not among the agent's input modes (`type/*` and `*\/*` are
 * wildcards) is refused. The modes are looked up in a set made once.
 */
function mediaTypeCheck (accepted: readonly string[]): (message: Message) => void {
  const modes = new Set(accepted)
  if (modes.has('*/*')) return () => {}
  return message => {
    for (let i = 0; i < message.parts.length; i++) {
      const type = mediaTypeOf(message.parts[i]).toLowerCase()
      const slash = type.indexOf('/')
      const major = (slash < 0 ? type : type.slice(0, slash)) + '/*'
      if (!modes.has(type) && !modes.has(major)) {
        throw contentTypeNotSupported(`params.message.parts.${i}: media type ${type} is not accepted (${accepted.join(', ')})`)
      }
    }
  }
}
