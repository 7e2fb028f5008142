import { Type } from '@sinclair/typebox'
import { TaskPushNotificationConfigSchema } from '../../../schemas/push-config.js'
import {
  DeletePushConfigParamsSchema, GetPushConfigParamsSchema, ListPushConfigParamsSchema, PushConfigListResultSchema,
  SetPushConfigParamsSchema
} from '../../../schemas/methods.js'
import { RpcCode } from '../../kernel/errors.js'
import type { PushService } from '../../push/service.js'
import type { TaskService } from '../../tasks/task-service.js'
import type { MethodDefinition } from '../registry.js'

export interface PushMethodDeps {
  tasks: TaskService
  push: PushService
}

/**
 * `tasks/pushNotificationConfig/set|get|list|delete` (CONTRACT.md §5). Registered only while push notifications
 * are on; otherwise they are unknown methods (-32601, the seed). Each first finds the task as the caller may see it.
 */
export function createPushMethods ({ tasks, push }: PushMethodDeps): MethodDefinition[] {
  const set: MethodDefinition<typeof SetPushConfigParamsSchema> = {
    name: 'tasks/pushNotificationConfig/set',
    summary: 'Adds a webhook to a task, or replaces the one with the same id (or the same url when no id is given).',
    params: SetPushConfigParamsSchema,
    result: TaskPushNotificationConfigSchema,
    errors: [RpcCode.taskNotFound, RpcCode.invalidParams],
    async handler ({ taskId, pushNotificationConfig }, ctx) {
      await tasks.get(taskId, ctx.principal)
      push.check(pushNotificationConfig, 'params.pushNotificationConfig')
      return push.set(taskId, pushNotificationConfig)
    }
  }

  const get: MethodDefinition<typeof GetPushConfigParamsSchema> = {
    name: 'tasks/pushNotificationConfig/get',
    summary: 'Returns a webhook of a task: the one named, or the most recently set.',
    params: GetPushConfigParamsSchema,
    result: TaskPushNotificationConfigSchema,
    errors: [RpcCode.taskNotFound],
    async handler ({ id, pushNotificationConfigId }, ctx) {
      await tasks.get(id, ctx.principal)
      return push.get(id, pushNotificationConfigId)
    }
  }

  const list: MethodDefinition<typeof ListPushConfigParamsSchema> = {
    name: 'tasks/pushNotificationConfig/list',
    summary: 'Lists the webhooks of a task, oldest first.',
    params: ListPushConfigParamsSchema,
    result: PushConfigListResultSchema,
    errors: [RpcCode.taskNotFound],
    async handler ({ id }, ctx) {
      await tasks.get(id, ctx.principal)
      return push.list(id)
    }
  }

  const remove: MethodDefinition<typeof DeletePushConfigParamsSchema> = {
    name: 'tasks/pushNotificationConfig/delete',
    summary: 'Removes a webhook from a task.',
    params: DeletePushConfigParamsSchema,
    result: Type.Null(),
    errors: [RpcCode.taskNotFound],
    async handler ({ id, pushNotificationConfigId }, ctx) {
      await tasks.get(id, ctx.principal)
      return push.remove(id, pushNotificationConfigId)
    }
  }

  return [set, get, list, remove] as unknown as MethodDefinition[]
}
