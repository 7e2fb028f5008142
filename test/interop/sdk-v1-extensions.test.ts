import { ServiceParameters, withA2AExtensions } from '@a2a-js/sdk-v1/client'
import { TaskState, type Task } from '@a2a-js/sdk-v1'
import t from 'tap'
import { listenGrpc } from '../helper.js'
import { clientError, collect, executor, sendRequest, textOf, v1Client, type Binding } from './sdk-v1.js'

// Extensions with the official v1.x client (@a2a-js/sdk 1.x): it reads the required extension off our card, activates
// it with its own `withA2AExtensions` service parameter, and gets through over every binding; without it, each binding
// refuses with ExtensionSupportRequiredError (docs/protocol.md, "Extensions").

const REQUIRED = 'https://example.com/ext/required/v1'

t.test('@a2a-js/sdk 1.x with withA2AExtensions gets through a required extension over JSON-RPC, HTTP+JSON and gRPC; without it, refused', async t => {
  const { url } = await listenGrpc(t, { executor, config: { agent: { name: 'Ext', extensions: [{ uri: REQUIRED, description: 'needed', required: true }] } } })
  for (const binding of [undefined, 'HTTP+JSON', 'GRPC'] as Array<Binding | undefined>) {
    const client = await v1Client(url, {}, binding)
    const card = await client.getAgentCard()
    t.match(card.capabilities?.extensions, [{ uri: REQUIRED, description: 'needed', required: true }], 'the client reads the extension off the card')
    const activated = { serviceParameters: ServiceParameters.create(withA2AExtensions(REQUIRED)) }

    const sent = await client.sendMessage(sendRequest('hi'), activated) as Task
    t.equal(sent.status?.state, TaskState.TASK_STATE_COMPLETED, binding ?? 'JSONRPC')
    t.equal(textOf(sent), 'echo: hi')
    const events = await collect(client.sendMessageStream(sendRequest('stream'), activated))
    t.equal(events.at(-1)?.payload?.$case, 'statusUpdate')

    await t.rejects(client.sendMessage(sendRequest('no')), clientError(client, 'ExtensionSupportRequiredError', -32008, 400), `${binding ?? 'JSONRPC'}: refused`)
    // Over JSON-RPC the refusal is the stream's one SSE event, which the client wraps (its `cause` is the typed error).
    const streamRefusal = clientError(client, 'ExtensionSupportRequiredError', -32008, 400)
    await t.rejects(collect(client.sendMessageStream(sendRequest('no'))), binding === undefined ? { cause: streamRefusal } : streamRefusal,
      `${binding ?? 'JSONRPC'}: stream refused`)
  }
})
