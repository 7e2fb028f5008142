import t from 'tap'
import { listenGrpc } from '../helper.js'
import { driveEverything, executor, readState, v1Client } from './sdk-v1.js'

// The official v1.x client (@a2a-js/sdk 1.x) over its gRPC transport (CONTRACT.md §13): it reads the card, picks the
// GRPC interface, connects to its `host:port`, and drives every v1.0 operation as it does over the other bindings.

t.test('@a2a-js/sdk 1.x over its gRPC transport drives every v1.0 operation', async t => {
  const { url } = await listenGrpc(t, { executor })
  const client = await v1Client(url, {}, 'GRPC')
  t.match((client.transport as object).constructor.name, /^GrpcTransport/, 'the gRPC transport, from the card\'s GRPC 1.0 entry')
  await driveEverything(t, client, { state: readState(client) })
})
