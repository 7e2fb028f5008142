// The RPCs of the gRPC services (CONTRACT.md §13): what each runs. The v1.0 table is here; the v0.3 one, with its
// conversions, in v03.ts. Apart from services/grpc/binding.ts, which serves them, so that neither imports the other.

type Json = Record<string, unknown>

/** What an RPC runs, with which params, and how its result is answered. */
export interface RpcSpec {
  /** The registry method it frames. */
  readonly method: string
  /** `rest03`: the method answers in the v0.3 proto form (the v0.3 service). */
  readonly wire?: 'rest03'
  /** The method's params from the request; default: the request as it is. */
  readonly params?: (request: Json) => Json
  /** The answer from the method's result; default: the result as it is. */
  readonly encode?: (result: unknown) => unknown
  /** Answers callers without credentials too, with the public card. */
  readonly public?: boolean
}

/** The v1.0 RPCs run the v1.0 methods of the same names, whose params are the request messages' ProtoJSON. */
export const V1_RPCS: Readonly<Record<string, RpcSpec>> = {
  SendMessage: { method: 'SendMessage' },
  SendStreamingMessage: { method: 'SendStreamingMessage' },
  GetTask: { method: 'GetTask' },
  ListTasks: { method: 'ListTasks' },
  CancelTask: { method: 'CancelTask' },
  SubscribeToTask: { method: 'SubscribeToTask' },
  CreateTaskPushNotificationConfig: { method: 'CreateTaskPushNotificationConfig' },
  GetTaskPushNotificationConfig: { method: 'GetTaskPushNotificationConfig' },
  ListTaskPushNotificationConfigs: { method: 'ListTaskPushNotificationConfigs' },
  DeleteTaskPushNotificationConfig: { method: 'DeleteTaskPushNotificationConfig', encode: () => ({}) },
  GetExtendedAgentCard: { method: 'GetExtendedAgentCard' }
}
