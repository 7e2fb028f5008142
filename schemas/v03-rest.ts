import { Type } from '@sinclair/typebox'

// The bodies of the v0.3 HTTP+JSON routes (`/v1/...`, CONTRACT.md §12): the ProtoJSON form of the v0.3 `a2a.proto`.
// They describe the routes in the OpenAPI document; the codec (services/a2a/codec-v03-rest.ts) reads requests into
// the v0.3 methods' params, whose schemas then check them, and writes the answers.

const Struct = Type.Record(Type.String(), Type.Unknown())
const ProtoEnum = (names: readonly string[]) => Type.Union(names.map(name => Type.Literal(name)))

export const V03_PROTO_STATE_NAMES = [
  'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELLED',
  'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_REJECTED', 'TASK_STATE_AUTH_REQUIRED'
] as const

/** Part: exactly one of `text`, `file`, `data`. */
export const Part03Schema = Type.Object({
  text: Type.Optional(Type.String()),
  file: Type.Optional(Type.Object({
    fileWithUri: Type.Optional(Type.String()),
    fileWithBytes: Type.Optional(Type.String({ description: 'base64' })),
    mimeType: Type.Optional(Type.String())
  })),
  data: Type.Optional(Type.Object({ data: Struct }))
}, { description: 'Exactly one of text, file, data.' })

export const Message03Schema = Type.Object({
  messageId: Type.String(),
  contextId: Type.Optional(Type.String()),
  taskId: Type.Optional(Type.String()),
  role: ProtoEnum(['ROLE_USER', 'ROLE_AGENT']),
  content: Type.Array(Part03Schema),
  metadata: Type.Optional(Struct),
  extensions: Type.Optional(Type.Array(Type.String()))
})

export const Status03Schema = Type.Object({
  state: ProtoEnum(V03_PROTO_STATE_NAMES),
  message: Type.Optional(Message03Schema),
  timestamp: Type.String()
})

export const Artifact03Schema = Type.Object({
  artifactId: Type.String(),
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  parts: Type.Array(Part03Schema),
  metadata: Type.Optional(Struct),
  extensions: Type.Optional(Type.Array(Type.String()))
})

export const Task03Schema = Type.Object({
  id: Type.String(),
  contextId: Type.String(),
  status: Status03Schema,
  artifacts: Type.Array(Artifact03Schema),
  history: Type.Array(Message03Schema),
  metadata: Type.Optional(Struct)
})

export const PushConfig03Schema = Type.Object({
  id: Type.Optional(Type.String()),
  url: Type.String(),
  token: Type.Optional(Type.String()),
  authentication: Type.Optional(Type.Object({ schemes: Type.Array(Type.String()), credentials: Type.Optional(Type.String()) }))
})

/** TaskPushNotificationConfig: `name` is `tasks/{id}/pushNotificationConfigs/{configId}`. */
export const TaskPushConfig03Schema = Type.Object({
  name: Type.String(),
  pushNotificationConfig: PushConfig03Schema
})

export const SendMessageRequest03Schema = Type.Object({
  message: Message03Schema,
  configuration: Type.Optional(Type.Object({
    acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
    pushNotification: Type.Optional(PushConfig03Schema),
    historyLength: Type.Optional(Type.Integer({ minimum: 0, description: '0: the whole history' })),
    blocking: Type.Optional(Type.Boolean({ description: 'A configuration without blocking: true does not wait (ProtoJSON); no configuration waits.' }))
  })),
  metadata: Type.Optional(Struct)
})

export const SendMessageResponse03Schema = Type.Object({ task: Task03Schema })

export const StreamResponse03Schema = Type.Object({
  task: Type.Optional(Task03Schema),
  statusUpdate: Type.Optional(Type.Object({
    taskId: Type.String(), contextId: Type.String(), status: Status03Schema, final: Type.Boolean(), metadata: Type.Optional(Struct)
  })),
  artifactUpdate: Type.Optional(Type.Object({
    taskId: Type.String(),
    contextId: Type.String(),
    artifact: Artifact03Schema,
    append: Type.Optional(Type.Boolean()),
    lastChunk: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(Struct)
  }))
}, { description: 'Exactly one of task, statusUpdate, artifactUpdate.' })

export const ListTasks03Schema = Type.Object({ tasks: Type.Array(Task03Schema), nextPageToken: Type.String() })

export const ListPushConfigs03Schema = Type.Object({ configs: Type.Array(TaskPushConfig03Schema), nextPageToken: Type.String() })

/** The error body of a `/v1` route: the JSON-RPC error object. */
export const Error03Schema = Type.Object({
  code: Type.Integer({ description: 'The A2A (JSON-RPC) error code.' }),
  message: Type.String(),
  data: Type.Optional(Type.Unknown())
})
