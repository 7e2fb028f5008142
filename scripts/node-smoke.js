// The smoke checks scripts/node-versions.js runs on each Node it installs: the built CLI (dist/) answers --help and
// --version, then `dist/cli.js serve` with the gRPC binding on takes one message in each binding and version
// (JSON-RPC v0.3 and v1.0, a v1.0 stream over SSE, HTTP+JSON v1.0 and v0.3, gRPC v1.0), each answered with its task
// completed, and SIGTERM ends it with 0. The clients run here, on the machine's Node: only the server runs on the
// other one. A check that fails throws, naming what failed.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { credentials, loadPackageDefinition } from '@grpc/grpc-js'
import { loadSync } from '@grpc/proto-loader'
import { freePort } from './redis-server.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CLI = join(ROOT, 'dist', 'cli.js')
/** The vendored protos as the build copies them. */
const PROTO_ROOT = join(ROOT, 'dist', 'schemas', 'proto')
const START_TIMEOUT_MS = 20_000
const REQUEST_TIMEOUT_MS = 10_000
/** server.shutdown_timeout's default (10 s) and a few seconds for the close steps. */
const EXIT_TIMEOUT_MS = 15_000
/** How much of the server's output a failure quotes. */
const QUOTED_LINES = 15

const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version
const COMPLETED = 'TASK_STATE_COMPLETED'
let seq = 0
const messageId = () => `smoke-${++seq}`

/** The v1.0 SendMessageRequest (JSON-RPC params, HTTP+JSON body, gRPC request alike). */
function v10Request () {
  return { message: { role: 'ROLE_USER', messageId: messageId(), parts: [{ text: 'hello' }] } }
}

/**
 * The requests, each with the task state its answer holds when it went through: `url` is the server's HTTP address,
 * `target` its gRPC one. The A2A-Version header is only checked (docs/protocol.md): the v1.0 method names and routes
 * pick v1.0, and the header says what a v1.0 client sends.
 */
const CHECKS = [
  ['JSON-RPC v0.3 message/send', async ({ url }) => {
    const message = { kind: 'message', role: 'user', messageId: messageId(), parts: [{ kind: 'text', text: 'hello' }] }
    const answer = await postJson(url, rpc('message/send', { message }))
    return answer.result?.status?.state
  }, 'completed'],
  ['JSON-RPC v1.0 SendMessage', async ({ url }) => {
    const answer = await postJson(url, rpc('SendMessage', v10Request()), { 'a2a-version': '1.0' })
    return answer.result?.task?.status?.state
  }, COMPLETED],
  ['JSON-RPC v1.0 SendStreamingMessage', async ({ url }) => {
    const events = await postSse(url, rpc('SendStreamingMessage', v10Request()), { 'a2a-version': '1.0' })
    return events.at(-1)?.result?.statusUpdate?.status?.state
  }, COMPLETED],
  ['HTTP+JSON v1.0 POST /message:send', async ({ url }) => {
    const answer = await postJson(`${url}/message:send`, v10Request(), { 'a2a-version': '1.0' })
    return answer.task?.status?.state
  }, COMPLETED],
  ['HTTP+JSON v0.3 POST /v1/message:send', async ({ url }) => {
    const answer = await postJson(`${url}/v1/message:send`, { message: { role: 'ROLE_USER', messageId: messageId(), content: [{ text: 'hello' }] } })
    return answer.task?.status?.state
  }, COMPLETED],
  ['gRPC v1.0 SendMessage', async ({ target }) => (await grpcSend(target, v10Request())).task?.status?.state, COMPLETED]
]

function rpc (method, params) {
  return { jsonrpc: '2.0', id: ++seq, method, params }
}

async function post (url, body, headers) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  })
  const answer = await res.text()
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${answer}`)
  return answer
}

async function postJson (url, body, headers = {}) {
  return JSON.parse(await post(url, body, headers))
}

/** A stream read to its end: the data of each event. */
async function postSse (url, body, headers = {}) {
  const raw = await post(url, body, { accept: 'text/event-stream', ...headers })
  return raw.split('\n').filter(line => line.startsWith('data: ')).map(line => JSON.parse(line.slice('data: '.length)))
}

/** SendMessage over gRPC with a grpc-js client of `lf.a2a.v1.A2AService`, from the vendored proto. */
function grpcSend (target, request) {
  const definition = loadSync('a2a/v1.0.1/a2a.proto', { keepCase: false, longs: String, enums: String, defaults: false, oneofs: true, includeDirs: [PROTO_ROOT] })
  const { A2AService } = loadPackageDefinition(definition).lf.a2a.v1
  const client = new A2AService(target, credentials.createInsecure())
  return new Promise((resolve, reject) => {
    client.SendMessage(request, { deadline: Date.now() + REQUEST_TIMEOUT_MS }, (err, answer) => {
      client.close()
      if (err === null) resolve(answer)
      else reject(err)
    })
  })
}

/** `node dist/cli.js ARGS`, which must exit 0 and print `expected`. */
function cliAnswers (node, args, expected) {
  const run = spawnSync(node, [CLI, ...args], { encoding: 'utf8', timeout: REQUEST_TIMEOUT_MS })
  if (run.status !== 0 || !run.stdout.includes(expected)) {
    throw new Error(`dist/cli.js ${args.join(' ')} failed (exit ${run.status ?? run.signal}): ${(run.stderr || run.stdout).trim()}`)
  }
}

/** `dist/cli.js serve` on `node`, with the gRPC binding on; resolves once it logs "agent serving". */
async function start (node, dir) {
  const [port, grpcPort] = [await freePort(), await freePort()]
  const config = join(dir, 'agent.yml')
  writeFileSync(config, `protocol:\n  grpc:\n    enabled: true\n    port: ${grpcPort}\n`)
  // Only what the run needs: HOST, PORT, REDIS_URL or A2A_CONFIG in this environment would change the config.
  const env = { PATH: process.env.PATH, LOG_LEVEL: 'info', A2A_LOG_FORMAT: 'json' }
  const child = spawn(node, [CLI, 'serve', '--config', config, '--host', '127.0.0.1', '--port', String(port)], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const output = []
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve(code ?? signal)))
  const served = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', chunk => {
      output.push(...chunk.split('\n').filter(Boolean))
      if (chunk.includes('"msg":"agent serving"')) resolve()
    })
    child.stderr.setEncoding('utf8').on('data', chunk => output.push(...chunk.split('\n').filter(Boolean)))
    exited.then(status => reject(new Error(`the server exited (${status}) before it served`)))
  })
  const server = { child, exited, output, url: `http://127.0.0.1:${port}`, target: `127.0.0.1:${grpcPort}` }
  try {
    await withTimeout(served, START_TIMEOUT_MS, `the server did not serve within ${START_TIMEOUT_MS / 1000} s`)
  } catch (err) {
    child.kill('SIGKILL')
    throw quoting(err, server)
  }
  return server
}

/** SIGTERM, which must end the server with 0 within the shutdown's bound. */
async function stop (server) {
  server.child.kill('SIGTERM')
  const status = await withTimeout(server.exited, EXIT_TIMEOUT_MS, `the server did not exit within ${EXIT_TIMEOUT_MS / 1000} s of SIGTERM`)
  if (status !== 0) throw new Error(`the server exited with ${status} on SIGTERM`)
}

function withTimeout (promise, ms, message) {
  let timer
  const timeout = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(message)), ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** The error, with the end of the server's output under it. */
function quoting (err, server) {
  return new Error(`${err.message}; the server's last lines:\n${server.output.slice(-QUOTED_LINES).map(line => `  ${line}`).join('\n')}`)
}

/** Runs every check on `node`, logging each with `log`; throws at the first that fails. */
export async function smoke (node, log) {
  cliAnswers(node, ['--help'], 'Usage: fastify-a2a')
  cliAnswers(node, ['--version'], VERSION)
  log('dist/cli.js --help and --version answer')
  const dir = mkdtempSync(join(tmpdir(), 'a2a-node-smoke-'))
  let server
  try {
    server = await start(node, dir)
    for (const [name, send, wanted] of CHECKS) {
      const state = await send(server).catch(err => { throw quoting(new Error(`${name}: ${err.message}`), server) })
      if (state !== wanted) throw quoting(new Error(`${name}: the answer's task state is ${state ?? 'missing'}, not ${wanted}`), server)
      log(`${name}: ${state}`)
    }
    await stop(server)
    log('SIGTERM: exit 0')
  } finally {
    server?.child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
}
