import { Type, type Static } from '@sinclair/typebox'
import { IdSchema } from '../common.js'
import { V10MessageSchema, V10PushConfigSchema, V10TaskSchema, V10TaskStateSchema } from './objects.js'

// Params of the v1.0 JSON-RPC methods (CONTRACT.md §11.3), after snake_case keys are renamed. Every request may
// carry the `tenant` of the interface it was sent to.

const Tenant = Type.Optional(Type.String({ maxLength: 256 }))
const HistoryLength = Type.Optional(Type.Integer({ minimum: 0 }))
const Struct = Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'] }))

export const V10SendMessageParamsSchema = Type.Object({
  tenant: Tenant,
  message: V10MessageSchema,
  configuration: Type.Optional(Type.Object({
    acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
    taskPushNotificationConfig: Type.Optional(V10PushConfigSchema),
    historyLength: HistoryLength,
    returnImmediately: Type.Optional(Type.Boolean())
  })),
  metadata: Struct
})
export type V10SendMessageParams = Static<typeof V10SendMessageParamsSchema>

export const V10GetTaskParamsSchema = Type.Object({ tenant: Tenant, id: IdSchema, historyLength: HistoryLength })

export const V10TaskIdParamsSchema = Type.Object({ tenant: Tenant, id: IdSchema, metadata: Struct })

export const V10ListTasksParamsSchema = Type.Object({
  tenant: Tenant,
  contextId: Type.Optional(Type.String({ maxLength: 256 })),
  status: Type.Optional(V10TaskStateSchema),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  pageToken: Type.Optional(Type.String({ maxLength: 256 })),
  historyLength: HistoryLength,
  statusTimestampAfter: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  includeArtifacts: Type.Optional(Type.Boolean())
})
export type V10ListTasksParams = Static<typeof V10ListTasksParamsSchema>

export const V10ListTasksResultSchema = Type.Object({
  tasks: Type.Array(V10TaskSchema),
  nextPageToken: Type.String(),
  pageSize: Type.Integer(),
  totalSize: Type.Integer()
})

export const V10CreatePushConfigParamsSchema = Type.Composite([
  V10PushConfigSchema, Type.Object({ taskId: IdSchema })
])

export const V10PushConfigIdParamsSchema = Type.Object({ tenant: Tenant, taskId: IdSchema, id: IdSchema })

export const V10ListPushConfigsParamsSchema = Type.Object({
  tenant: Tenant,
  taskId: IdSchema,
  // null: what a client leaves unset may arrive as null (@a2a-js/sdk 1.x sends `"pageSize": null`).
  pageSize: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()])),
  pageToken: Type.Optional(Type.String({ maxLength: 64 }))
})

export const V10PushConfigResultSchema = Type.Object({
  id: Type.String(),
  taskId: Type.String(),
  url: Type.String(),
  token: Type.Optional(Type.String()),
  authentication: Type.Optional(Type.Object({ scheme: Type.String() }))
})

export const V10ListPushConfigsResultSchema = Type.Object({
  configs: Type.Array(V10PushConfigResultSchema),
  nextPageToken: Type.String()
})

export const V10TenantParamsSchema = Type.Object({ tenant: Tenant })
