// The Python a2a-sdk 1.x over gRPC, from the card's default URL. The SDK is not installed where the suite runs, so
// test/fixtures/python/a2a_sdk_grpc_client.py replays with grpcio what its client does with the card (its source lines
// are quoted there): it takes the GRPC entry's URL as it is and hands it to grpc.aio.insecure_channel, the channel
// factory the SDK's samples and tests pass. Here it dials the default `<host>:<port>` and calls health, SendMessage
// and SendStreamingMessage (v1.0) and v0.3's SendMessage with bytes this test encodes; and the old default
// `grpc://<host>:<port>` is shown to be one grpcio cannot dial. Skipped, with the reason, without python3 and grpcio
// (`PYTHON` names another interpreter, a virtualenv's for one).
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { loadSync } from '@grpc/proto-loader'
import { protoPath as healthProto } from 'grpc-health-check'
import t from 'tap'
import { LOAD_OPTIONS, V03_SERVICE, V1_SERVICE, a2aProtos } from '../../services/grpc/protos.js'
import { freePort } from '../../scripts/redis-server.js'
import { listenGrpc, spawnChild, type Teardown } from '../helper.js'
import { executor } from './sdk-v1.js'

const SCRIPT = fileURLToPath(new URL('../fixtures/python/a2a_sdk_grpc_client.py', import.meta.url))

/** Why an interpreter cannot run the script (not there, or no grpcio), or false. */
function unavailable (python: string): string | false {
  const probe = spawnSync(python, ['-c', 'import grpc, grpc.aio'], { encoding: 'utf8' })
  if (probe.error !== undefined) return `${python} is not there (${probe.error.message}): install python3, or set PYTHON`
  if (probe.status !== 0) {
    return `${python} cannot import grpcio (${probe.stderr.trim().split('\n').pop() ?? ''}): ` +
      '"apt-get install python3-grpcio" (Debian) or "pip install grpcio"'
  }
  return false
}

// `PYTHON`, else the first python3 with grpcio: the one on the PATH (a pyenv or virtualenv one, say), or Debian's,
// where the python3-grpcio package installs it.
const CANDIDATES = process.env.PYTHON !== undefined ? [process.env.PYTHON] : ['python3', '/usr/bin/python3']
const PYTHON = CANDIDATES.find(python => unavailable(python) === false) ?? CANDIDATES[0]
const skip = unavailable(PYTHON)

// Requests and answers as bytes, by the vendored protos (proto-loader's objects: camelCase, enums by name).
const protos = a2aProtos() as any
const rpc = (service: string, method: string) => protos[service][method]
const health = (loadSync(healthProto, LOAD_OPTIONS) as any)['grpc.health.v1.Health'].Check
const b64 = (bytes: Buffer): string => bytes.toString('base64')
const decode = (method: any, bytes: string): any => method.responseDeserialize(Buffer.from(bytes, 'base64'))
/** A task's answer: the text of its artifacts' parts (the executor writes it in two chunks). */
const textOf = (task: any): string => task.artifacts.flatMap((a: any) => a.parts.map((p: any) => p.text)).join('')

function requests (): Record<string, string> {
  const send = rpc(V1_SERVICE, 'SendMessage')
  const message = (text: string) => ({ message: { messageId: `py-${text}`, role: 'ROLE_USER', parts: [{ text }] } })
  return {
    send: b64(send.requestSerialize(message('hi'))),
    stream: b64(rpc(V1_SERVICE, 'SendStreamingMessage').requestSerialize(message('stream'))),
    send03: b64(rpc(V03_SERVICE, 'SendMessage').requestSerialize({ request: { messageId: 'py-03', role: 'ROLE_USER', content: [{ text: 'hi03' }] } }))
  }
}

/** Runs the script against the agent at `base` (its process group killed at teardown): its JSON answer. */
async function python (t: Teardown, base: string): Promise<any> {
  const child = spawnChild(t, PYTHON, [SCRIPT, base], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  child.stdin?.end(JSON.stringify(requests()))
  const code = await new Promise(resolve => child.on('close', resolve))
  if (code !== 0) throw new Error(`${PYTHON} exited with ${code}\n${stderr}`)
  return JSON.parse(stdout)
}

t.test('the Python a2a-sdk 1.x way: the card\'s default gRPC URL, as it is, is grpc.aio.insecure_channel\'s target', { skip }, async t => {
  const { app, url, target } = await listenGrpc(t, { executor, config: { protocol: { grpc: { advertised_url: '' } } } })
  const out = await python(t, url)
  t.same(out.urls, { '1.0': target, 0.3: target }, 'both GRPC entries list <host>:<port>')
  t.equal(out.error, undefined, `every call answered (grpcio ${out.grpcio as string})`)
  t.same(decode(health, out.health), { status: 'SERVING' }, 'grpc.health.v1 Check')

  const sent = decode(rpc(V1_SERVICE, 'SendMessage'), out.send)
  t.equal(sent.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal(textOf(sent.task), 'echo: hi')
  t.equal((await app.a2aTasks.store.get(sent.task.id))?.task.status.state, 'completed', 'the task is in the store')

  const events = (out.stream as string[]).map(bytes => decode(rpc(V1_SERVICE, 'SendStreamingMessage'), bytes))
  t.same(events.map(e => e.payload), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  t.equal(events[events.length - 1].statusUpdate.status.state, 'TASK_STATE_COMPLETED')

  const sent03 = decode(rpc(V03_SERVICE, 'SendMessage'), out.send03)
  t.equal(sent03.task.status.state, 'TASK_STATE_COMPLETED', 'v0.3, as its compat transport calls a2a.v1.A2AService')
  t.equal(textOf(sent03.task), 'echo: hi03')
})

t.test('grpcio cannot dial the old default grpc://<host>:<port>, though the port serves', { skip }, async t => {
  const port = await freePort()
  const { url } = await listenGrpc(t, { executor, config: { protocol: { grpc: { port, advertised_url: `grpc://127.0.0.1:${port}` } } } })
  const out = await python(t, url)
  t.equal(out.urls['1.0'], `grpc://127.0.0.1:${port}`)
  t.equal(out.health, undefined, 'not even the health check')
  t.match(out.error, { code: 'UNAVAILABLE', details: /resol/i }, 'grpc core finds no name in it ("errors resolving" in 1.84, "DNS resolution failed" in 1.51)')
})
