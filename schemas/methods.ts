import { Type, type Static } from '@sinclair/typebox'
import { IdSchema, MetadataSchema } from './common.js'
import { PushNotificationConfigSchema, TaskPushNotificationConfigSchema } from './push-config.js'
import { AnyTaskStateSchema, MessageSchema, TaskSchema } from './task.js'

// Params and results of the methods of CONTRACT.md §5. Unknown params fields are allowed, as A2A clients send
// fields of later protocol versions.

const HistoryLength = Type.Integer({ minimum: 0 })

export const MessageSendConfigurationSchema = Type.Object({
  blocking: Type.Optional(Type.Boolean()),
  historyLength: Type.Optional(HistoryLength),
  acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
  pushNotificationConfig: Type.Optional(PushNotificationConfigSchema)
})

export const MessageSendParamsSchema = Type.Object({
  message: MessageSchema,
  configuration: Type.Optional(MessageSendConfigurationSchema),
  metadata: Type.Optional(MetadataSchema)
})
export type MessageSendParams = Static<typeof MessageSendParamsSchema>

export const TaskQueryParamsSchema = Type.Object({
  id: IdSchema,
  historyLength: Type.Optional(HistoryLength),
  metadata: Type.Optional(MetadataSchema)
})
export type TaskQueryParams = Static<typeof TaskQueryParamsSchema>

export const TaskIdParamsSchema = Type.Object({
  id: IdSchema,
  metadata: Type.Optional(MetadataSchema)
})
export type TaskIdParams = Static<typeof TaskIdParamsSchema>

export const TaskListParamsSchema = Type.Object({
  contextId: Type.Optional(IdSchema),
  state: Type.Optional(AnyTaskStateSchema),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  pageToken: Type.Optional(Type.String({ maxLength: 256 })),
  historyLength: Type.Optional(HistoryLength)
})
export type TaskListParams = Static<typeof TaskListParamsSchema>

export const TaskListResultSchema = Type.Object({
  tasks: Type.Array(TaskSchema),
  nextPageToken: Type.String()
})

export const StatusResultSchema = Type.Object({
  status: Type.Literal('ok'),
  agent: Type.String(),
  version: Type.String(),
  uptime_seconds: Type.Number(),
  timestamp: Type.String()
})

export const CapabilitiesResultSchema = Type.Object({
  agent: Type.String(),
  protocolVersion: Type.String(),
  capabilities: Type.Object({
    streaming: Type.Boolean(),
    pushNotifications: Type.Boolean(),
    stateTransitionHistory: Type.Boolean()
  }),
  methods: Type.Array(Type.Object({
    name: Type.String(),
    scopes: Type.Array(Type.String()),
    allowed: Type.Boolean()
  })),
  skills: Type.Array(Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: true }))
})

export const ListDirectoryParamsSchema = Type.Object({
  path: Type.String({ maxLength: 4096 })
})
export type ListDirectoryParams = Static<typeof ListDirectoryParamsSchema>

export const ListDirectoryResultSchema = Type.Object({
  path: Type.String(),
  entries: Type.Array(Type.Object({
    name: Type.String(),
    type: Type.Union([Type.Literal('file'), Type.Literal('directory'), Type.Literal('symlink'), Type.Literal('other')]),
    size: Type.Number(),
    modified: Type.String()
  }))
})

export const SetPushConfigParamsSchema = Type.Object({
  taskId: IdSchema,
  pushNotificationConfig: PushNotificationConfigSchema
})
export type SetPushConfigParams = Static<typeof SetPushConfigParamsSchema>

export const GetPushConfigParamsSchema = Type.Object({
  id: IdSchema,
  pushNotificationConfigId: Type.Optional(IdSchema),
  metadata: Type.Optional(MetadataSchema)
})

export const ListPushConfigParamsSchema = Type.Object({
  id: IdSchema,
  metadata: Type.Optional(MetadataSchema)
})

export const DeletePushConfigParamsSchema = Type.Object({
  id: IdSchema,
  pushNotificationConfigId: IdSchema,
  metadata: Type.Optional(MetadataSchema)
})

export const PushConfigListResultSchema = Type.Array(TaskPushNotificationConfigSchema)
