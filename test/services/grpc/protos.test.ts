// The gRPC binding's protos, vendored under schemas/proto/ (docs/protocol.md, "The gRPC binding"): both A2A services load, with
// every method of their version, the streaming ones marked so, and the error details beside them.
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { PROTO_ROOT, V03_SERVICE, V1_SERVICE, a2aProtos } from '../../../services/grpc/protos.js'

interface Method { path: string, requestStream: boolean, responseStream: boolean }

const methods = (name: string) => {
  const service = a2aProtos()[name] as unknown as Record<string, Method>
  return Object.fromEntries(Object.entries(service).map(([method, m]) => [method, { path: m.path, stream: m.responseStream, upload: m.requestStream }]))
}

t.test('A2A v1.0: lf.a2a.v1.A2AService with its eleven methods, two of them server streams', async t => {
  const v1 = methods(V1_SERVICE)
  t.same(Object.keys(v1).sort(), ['CancelTask', 'CreateTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig', 'GetExtendedAgentCard',
    'GetTask', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'ListTasks', 'SendMessage', 'SendStreamingMessage', 'SubscribeToTask'])
  t.same(v1.SendMessage, { path: '/lf.a2a.v1.A2AService/SendMessage', stream: false, upload: false })
  for (const name of ['SendStreamingMessage', 'SubscribeToTask']) t.same(v1[name], { path: `/lf.a2a.v1.A2AService/${name}`, stream: true, upload: false })
})

t.test('A2A v0.3: a2a.v1.A2AService with its ten methods, TaskSubscription and SendStreamingMessage streaming', async t => {
  const v03 = methods(V03_SERVICE)
  t.same(Object.keys(v03).sort(), ['CancelTask', 'CreateTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig', 'GetAgentCard', 'GetTask',
    'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfig', 'SendMessage', 'SendStreamingMessage', 'TaskSubscription'])
  t.same(v03.TaskSubscription, { path: '/a2a.v1.A2AService/TaskSubscription', stream: true, upload: false })
  t.equal(v03.GetTask.stream, false)
})

t.test('google.rpc.Status and ErrorInfo load beside them', async t => {
  const defs = a2aProtos()
  for (const type of ['google.rpc.Status', 'google.rpc.ErrorInfo', 'google.rpc.BadRequest', 'lf.a2a.v1.StreamResponse', 'a2a.v1.StreamResponse']) {
    t.ok(defs[type], `${type} is defined`)
  }
  t.equal(a2aProtos(), defs, 'loaded once')
  // The built code finds them at dist/schemas/proto/: test/image.test.ts runs the build and checks they are there.
  t.equal(PROTO_ROOT, fileURLToPath(new URL('../../../schemas/proto/', import.meta.url)))
})
