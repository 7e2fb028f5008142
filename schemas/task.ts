import { Type, type Static } from '@sinclair/typebox'
import { IdSchema, MetadataSchema, NullableMetadataSchema, StringEnum } from './common.js'

/** Task states in the seed's spelling, which is also how they are stored (CONTRACT.md §6). */
export const TASK_STATES = ['submitted', 'in_progress', 'input_required', 'auth_required', 'completed', 'canceled', 'failed', 'rejected'] as const
export const TaskStateSchema = StringEnum(TASK_STATES)
export type TaskState = Static<typeof TaskStateSchema>

/** Either spelling of a state, accepted on input in both dialects. */
export const AnyTaskStateSchema = StringEnum([...TASK_STATES, 'working', 'input-required', 'auth-required'])

export const TextPartSchema = Type.Object({
  kind: Type.Literal('text'),
  text: Type.String(),
  metadata: Type.Optional(NullableMetadataSchema)
})

export const FileContentSchema = Type.Object({
  name: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  uri: Type.Optional(Type.String({ minLength: 1 })),
  bytes: Type.Optional(Type.String())
})

export const FilePartSchema = Type.Object({
  kind: Type.Literal('file'),
  file: FileContentSchema,
  metadata: Type.Optional(NullableMetadataSchema)
})

export const DataPartSchema = Type.Object({
  kind: Type.Literal('data'),
  data: MetadataSchema,
  metadata: Type.Optional(NullableMetadataSchema)
})

// A oneOf with a discriminator, so a bad part gets the error of its own kind, not of the first branch. Ajv's
// discriminator only looks at objects and skips the oneOf: without `type` a part that is no object (0, "x", null)
// passed validation.
const PartUnion = Type.Union([TextPartSchema, FilePartSchema, DataPartSchema])
export const PartSchema = Type.Unsafe<Static<typeof PartUnion>>({
  type: 'object',
  oneOf: PartUnion.anyOf,
  discriminator: { propertyName: 'kind' }
})
export type TextPart = Static<typeof TextPartSchema>
export type FilePart = Static<typeof FilePartSchema>
export type DataPart = Static<typeof DataPartSchema>
export type Part = Static<typeof PartSchema>

export const MessageSchema = Type.Object({
  kind: Type.Optional(Type.Literal('message')),
  role: StringEnum(['user', 'agent']),
  parts: Type.Array(PartSchema, { minItems: 1 }),
  messageId: IdSchema,
  contextId: Type.Optional(IdSchema),
  taskId: Type.Optional(IdSchema),
  referenceTaskIds: Type.Optional(Type.Array(IdSchema)),
  extensions: Type.Optional(Type.Array(Type.String())),
  metadata: Type.Optional(NullableMetadataSchema)
})
export type Message = Static<typeof MessageSchema>

export const TaskStatusSchema = Type.Object({
  state: TaskStateSchema,
  timestamp: Type.String(),
  message: Type.Optional(Type.Union([MessageSchema, Type.Null()]))
})
export type TaskStatus = Static<typeof TaskStatusSchema>

export const ArtifactSchema = Type.Object({
  artifactId: IdSchema,
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  parts: Type.Array(PartSchema),
  metadata: Type.Optional(NullableMetadataSchema),
  extensions: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()]))
})
export type Artifact = Static<typeof ArtifactSchema>

export const TaskSchema = Type.Object({
  id: IdSchema,
  contextId: IdSchema,
  kind: Type.Literal('task'),
  status: TaskStatusSchema,
  artifacts: Type.Array(ArtifactSchema),
  history: Type.Array(MessageSchema),
  metadata: NullableMetadataSchema
})
export type Task = Static<typeof TaskSchema>

/** The artifact name the built-in agent writes text results under (the seed). */
export const RESULT_ARTIFACT_NAME = 'Agent-result'
