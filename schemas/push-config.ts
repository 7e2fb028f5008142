import { Type, type Static } from '@sinclair/typebox'
import { IdSchema } from './common.js'

export const PushAuthenticationSchema = Type.Object({
  schemes: Type.Array(Type.String({ minLength: 1 })),
  credentials: Type.Optional(Type.String())
})

/** The seed's PushNotificationConfig, as a client sends it. */
export const PushNotificationConfigSchema = Type.Object({
  id: Type.Optional(IdSchema),
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  token: Type.Optional(Type.String({ maxLength: 512 })),
  authentication: Type.Optional(PushAuthenticationSchema)
})
export type PushNotificationConfig = Static<typeof PushNotificationConfigSchema>

/** What `set`, `get` and `list` answer with (credentials are never returned). */
export const TaskPushNotificationConfigSchema = Type.Object({
  taskId: IdSchema,
  pushNotificationConfig: PushNotificationConfigSchema
})
export type TaskPushNotificationConfig = Static<typeof TaskPushNotificationConfigSchema>
