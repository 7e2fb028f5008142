import { Type, type Static } from '@sinclair/typebox'
import { IdSchema, MetadataSchema } from '../common.js'

// The A2A v1.0 objects (ProtoJSON of `a2a.proto` v1.0.1, CONTRACT.md §11.2). What clients send is read after
// snake_case keys are renamed (services/a2a/codec-v10.ts); enums are names or numbers there. Unknown fields are
// allowed: clients send fields of later minor versions. What the server writes is described for the OpenRPC
// document (the codec writes it).

/**
 * A proto enum in JSON: its name, or its number. Which names and numbers are known is the codec's check, which names
 * the field; one `type` here, not a union, keeps the validation of every request cheap.
 */
const ProtoEnum = (names: readonly string[]) => Type.Unsafe<string | number>({ type: ['string', 'integer'], description: names.join(' | ') })

export const V10_STATE_NAMES = [
  'TASK_STATE_UNSPECIFIED', 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_REJECTED', 'TASK_STATE_AUTH_REQUIRED'
] as const
export const V10TaskStateSchema = ProtoEnum(V10_STATE_NAMES)

/** A Struct field: an object, or null (unset). */
const Struct = Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'] })

/** Part: exactly one of `text`, `raw` (base64), `url`, `data` (checked by the codec, which names the part). */
export const V10PartSchema = Type.Object({
  text: Type.Optional(Type.String()),
  raw: Type.Optional(Type.String()),
  url: Type.Optional(Type.String({ minLength: 1 })),
  data: Type.Optional(Type.Unknown()),
  mediaType: Type.Optional(Type.String()),
  filename: Type.Optional(Type.String()),
  metadata: Type.Optional(Struct)
})
export type V10Part = Static<typeof V10PartSchema>

export const V10MessageSchema = Type.Object({
  messageId: IdSchema,
  contextId: Type.Optional(Type.String({ maxLength: 256 })),
  taskId: Type.Optional(Type.String({ maxLength: 256 })),
  role: ProtoEnum(['ROLE_USER', 'ROLE_AGENT']),
  parts: Type.Array(V10PartSchema, { minItems: 1 }),
  metadata: Type.Optional(Struct),
  extensions: Type.Optional(Type.Array(Type.String())),
  referenceTaskIds: Type.Optional(Type.Array(IdSchema))
})
export type V10Message = Static<typeof V10MessageSchema>

export const V10AuthenticationSchema = Type.Object({
  scheme: Type.String({ minLength: 1, maxLength: 64 }),
  credentials: Type.Optional(Type.String())
})

/** TaskPushNotificationConfig: flat, unlike v0.3's (CONTRACT.md §11.3). `taskId` is the method's to check. */
export const V10PushConfigSchema = Type.Object({
  tenant: Type.Optional(Type.String()),
  id: Type.Optional(Type.String({ maxLength: 256 })),
  taskId: Type.Optional(Type.String({ maxLength: 256 })),
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  token: Type.Optional(Type.String({ maxLength: 512 })),
  authentication: Type.Optional(Type.Union([V10AuthenticationSchema, Type.Null()]))
})
export type V10PushConfig = Static<typeof V10PushConfigSchema>

// What the server writes.

const OutPart = Type.Object({
  text: Type.Optional(Type.String()),
  raw: Type.Optional(Type.String({ contentEncoding: 'base64' })),
  url: Type.Optional(Type.String()),
  data: Type.Optional(Type.Unknown()),
  mediaType: Type.Optional(Type.String()),
  filename: Type.Optional(Type.String()),
  metadata: Type.Optional(MetadataSchema)
}, { description: 'Exactly one of text, raw, url, data.' })

export const V10MessageOutSchema = Type.Object({
  messageId: Type.String(),
  contextId: Type.Optional(Type.String()),
  taskId: Type.Optional(Type.String()),
  role: Type.Unsafe<string>({ type: 'string', enum: ['ROLE_USER', 'ROLE_AGENT'] }),
  parts: Type.Array(OutPart),
  metadata: Type.Optional(MetadataSchema),
  extensions: Type.Optional(Type.Array(Type.String())),
  referenceTaskIds: Type.Optional(Type.Array(Type.String()))
})

const StatusOut = Type.Object({
  state: Type.Unsafe<string>({ type: 'string', enum: V10_STATE_NAMES.slice(1) }),
  message: Type.Optional(V10MessageOutSchema),
  timestamp: Type.String()
})

const ArtifactOut = Type.Object({
  artifactId: Type.String(),
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  parts: Type.Array(OutPart),
  metadata: Type.Optional(MetadataSchema),
  extensions: Type.Optional(Type.Array(Type.String()))
})

export const V10TaskSchema = Type.Object({
  id: Type.String(),
  contextId: Type.String(),
  status: StatusOut,
  artifacts: Type.Optional(Type.Array(ArtifactOut)),
  history: Type.Optional(Type.Array(V10MessageOutSchema)),
  metadata: Type.Optional(MetadataSchema)
})

/** A stream event: exactly one of its members. */
export const V10StreamResponseSchema = Type.Object({
  task: Type.Optional(V10TaskSchema),
  message: Type.Optional(V10MessageOutSchema),
  statusUpdate: Type.Optional(Type.Object({ taskId: Type.String(), contextId: Type.String(), status: StatusOut })),
  artifactUpdate: Type.Optional(Type.Object({
    taskId: Type.String(), contextId: Type.String(), artifact: ArtifactOut, append: Type.Boolean(), lastChunk: Type.Boolean()
  }))
}, { description: 'Exactly one of task, message, statusUpdate, artifactUpdate.' })
