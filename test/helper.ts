import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import type { ClientHttp2Session } from 'node:http2'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import a2a, { type A2AOptions } from '../index.js'
import { freePort, ping } from '../scripts/redis-server.js'
import { spawnChild } from './processes.js'

export { TS_IMPORT, runChild, spawnChild } from './processes.js'
export { REDIS_UNREACHABLE, TEST_REDIS, clearDb, kvcacheYaml, migratedSchema, postgresSchema, privatePostgres, redisDb, testDatabase, type PrivatePostgres } from './backends.js'

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))

export interface Teardown {
  teardown (fn: () => unknown): void
}

/** A fresh app with the agent at `/` (or `opts.prefix`), torn down with the test. */
export async function build (t: Teardown, opts: A2AOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  await app.register(a2a, opts)
  await app.ready()
  t.teardown(() => app.close())
  return app
}

let counter = 0

/** A JSON-RPC request body with a fresh id unless one is given. */
export function rpc (method: string, params?: unknown, id: string | number | null = ++counter): Record<string, unknown> {
  const body: Record<string, unknown> = { jsonrpc: '2.0', id, method }
  if (params !== undefined) body.params = params
  return body
}

/** A user text message, as clients send it. */
export function userMessage (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { kind: 'message', role: 'user', messageId: `m-${++counter}`, parts: [{ kind: 'text', text }], ...extra }
}

/** POSTs a JSON-RPC call through inject and returns the parsed body with the HTTP status. */
export async function call (app: FastifyInstance, method: string, params?: unknown, path = '/'): Promise<{ status: number, body: any }> {
  const res = await app.inject({ method: 'POST', url: path, payload: rpc(method, params) })
  return { status: res.statusCode, body: res.json() }
}

/** A fresh app listening on a free 127.0.0.1 port (for socket-level SSE tests), torn down with the test. */
export async function listen (t: Teardown, opts: A2AOptions = {}): Promise<{ app: FastifyInstance, url: string }> {
  const app = await build(t, opts)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url }
}

/**
 * `listen` with the gRPC binding on (CONTRACT.md §13) on a free port, which the card advertises as `host:port` (what
 * grpc-js clients connect to). `target` is that address. With `logs`, the app logs there at info.
 */
export async function listenGrpc (t: Teardown, opts: A2AOptions = {}, logs?: NodeJS.WritableStream): Promise<{ app: FastifyInstance, url: string, target: string }> {
  const port = await freePort()
  const target = `127.0.0.1:${port}`
  const config = opts.config ?? {}
  const grpc = { enabled: true, port, advertised_url: target, ...config.protocol?.grpc }
  const app = Fastify({ logger: logs === undefined ? false : { level: 'info', stream: logs } })
  await app.register(a2a, { ...opts, config: { ...config, protocol: { ...config.protocol, grpc } } })
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url, target }
}

export interface SseResult {
  status: number
  headers: Headers
  /** Each `data:` event, parsed. */
  events: any[]
  /** Comment lines (`: keep-alive`). */
  comments: string[]
  /** Each event's `id:`, undefined where it has none. */
  ids: Array<number | undefined>
  /** The raw body. */
  raw: string
}

/** POSTs a JSON-RPC call and reads the SSE answer to its end. */
/** A JSON POST over HTTP: its status, its body as text, and parsed when it is JSON (else `json` is undefined). */
export async function postJson (url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number, json: any, text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  const text = await res.text()
  let json: any
  try { json = JSON.parse(text) } catch {}
  return { status: res.status, json, text }
}

export async function postStream (url: string, body: unknown, headers: Record<string, string> = {}): Promise<SseResult> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body)
  })
  const raw = await res.text()
  return { status: res.status, headers: res.headers, raw, ...parseSse(raw) }
}

/**
 * Splits an SSE body into its events; every event must be exactly `data: <json>\n\n` (CONTRACT.md §7), after an
 * `id: <n>\n` line when the stream has ids (`ids` holds them, undefined for an event without one).
 */
export function parseSse (raw: string): { events: any[], comments: string[], ids: Array<number | undefined> } {
  const events: any[] = []
  const comments: string[] = []
  const ids: Array<number | undefined> = []
  for (const block of raw.split('\n\n')) {
    if (block === '') continue
    if (block.startsWith(':')) {
      comments.push(block)
      continue
    }
    const frame = parseSseBlock(block)
    if (frame === null) throw new Error(`not an SSE event: ${JSON.stringify(block)}`)
    events.push(frame.data)
    ids.push(frame.id)
  }
  return { events, comments, ids }
}

/**
 * One SSE event block as every stream here writes it, `data: <JSON>` after an `id: <n>\n` line when the stream has
 * ids: its id and its data, parsed; null for any other block.
 */
export function parseSseBlock (block: string): { id: number | undefined, data: any } | null {
  const m = /^(?:id: (\d+)\n)?data: ([^\n]*)$/.exec(block)
  return m === null ? null : { id: m[1] === undefined ? undefined : Number(m[1]), data: JSON.parse(m[2]) }
}

/** Waits until `check` holds, polling on the event loop; fails after `attempts` (never a timing assertion). */
export async function until (check: () => boolean | Promise<boolean>, attempts = 500): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  throw new Error('condition not reached')
}

/** Process warnings emitted while the test runs (node warns, for one, when it drops an HTTP/2 connection header). */
export function processWarnings (t: Teardown): string[] {
  const warnings: string[] = []
  const onWarning = (warning: Error) => warnings.push(warning.message)
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  return warnings
}

/** One POST over an HTTP/2 session: the response headers and the body as text. */
export function h2Post (session: ClientHttp2Session, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ headers: Record<string, unknown>, text: string }> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ':path': path, ...headers })
    let got: Record<string, unknown> = {}
    let text = ''
    req.on('response', h => { got = h })
    req.on('data', chunk => { text += String(chunk) })
    req.on('end', () => resolve({ headers: got, text }))
    req.on('error', reject)
    req.end(body)
  })
}

export interface Received {
  headers: Record<string, string | string[] | undefined>
  body: any
  raw: string
  path: string
}

export interface Receiver {
  url: string
  port: number
  received: Received[]
  /** Sets how the next requests are answered, in order; the last entry repeats. Default: 200. */
  script (...answers: Array<number | ((req: Received) => Promise<{ status: number, body?: string | Buffer, headers?: Record<string, string> }>)>): void
}

/** A real webhook receiver on 127.0.0.1 (a bare Fastify app), recording every delivery. */
export async function receiver (t: Teardown): Promise<Receiver> {
  const { default: Fastify } = await import('fastify')
  const app = Fastify({ logger: false, bodyLimit: 50 * 1024 * 1024 })
  const received: Received[] = []
  let answers: Array<number | ((req: Received) => Promise<{ status: number, body?: string | Buffer, headers?: Record<string, string> }>)> = [200]
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body))
  app.post('/*', async (request, reply) => {
    const raw = String(request.body ?? '')
    let body: unknown
    try { body = JSON.parse(raw) } catch { body = undefined }
    const entry: Received = { headers: request.headers, body, raw, path: request.url }
    received.push(entry)
    const answer = answers.length > 1 ? answers.shift() as typeof answers[number] : answers[0]
    if (typeof answer === 'number') return reply.code(answer).send()
    const out = await answer(entry)
    if (out.headers !== undefined) reply.headers(out.headers)
    return reply.code(out.status).send(out.body ?? '')
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { url, port: Number(new URL(url).port), received, script: (...a) => { answers = a } }
}

/** A pino destination that keeps every line, for log assertions. */
export function logCapture (): { stream: NodeJS.WritableStream, lines: () => any[], text: () => string } {
  const chunks: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { chunks.push(String(chunk)); cb() } })
  const text = () => chunks.join('')
  return { stream, text, lines: () => text().split('\n').filter(Boolean).map(l => JSON.parse(l)) }
}

/** Like `build`, with logs captured at debug. */
export async function buildLogged (t: Teardown, opts: A2AOptions = {}): Promise<{ app: FastifyInstance, logs: ReturnType<typeof logCapture> }> {
  const logs = logCapture()
  const app = Fastify({ logger: { level: 'debug', stream: logs.stream } })
  await app.register(a2a, opts)
  await app.ready()
  t.teardown(() => app.close())
  return { app, logs }
}

export interface PrivateRedis {
  port: number
  url: string
  stop (): void
  resume (): void
  /** Kills the server (SIGKILL) and starts a new, empty one on the same port. */
  restart (): Promise<void>
}

/** A redis-server child of this test on a free port, for stall and kill tests; killed at teardown (test/processes.ts). */
export async function privateRedis (t: Teardown): Promise<PrivateRedis> {
  const port = await freePort()
  let child: import('node:child_process').ChildProcess
  const start = async () => {
    // Each start its own group, killed at teardown (SIGKILL ends a stopped process too).
    child = spawnChild(t, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    await until(() => ping(`redis://127.0.0.1:${port}`))
  }
  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop: () => { child.kill('SIGSTOP') },
    resume: () => { child.kill('SIGCONT') },
    restart: async () => {
      const old = child
      const exited = new Promise(resolve => old.once('exit', resolve))
      old.kill('SIGCONT')
      old.kill('SIGKILL')
      await exited
      await start()
    }
  }
}

export interface Served {
  child: ChildProcess
  url: string
  logs: string[]
  exited: Promise<number | null>
}

/**
 * What the dist/ servers started by `serve` leave out of coverage (tap's `_TAPJS_PROCESSINFO_COV_EXCLUDE_`): the
 * library's folders, which the in-process tests measure from source. The servers' compiled copies would be merged
 * into the same files through their source maps; cli.ts, server.ts and index.ts still count from them.
 */
const CHILD_COVERAGE_EXCLUDE = String(/[\\/](node_modules|services|plugins|routes|schemas)[\\/]/)

/**
 * Starts the real CLI (`dist/cli.js serve`) on a free port and waits for its "agent serving" log line; killed at
 * teardown with anything it started (test/processes.ts). `nodeArgs` go to node before the script (`--import` a module hook, say). `where` runs another build of
 * the CLI (`cli`, the image's tree) from another folder (`cwd`, default the test's folder).
 */
export async function serve (t: { teardown (fn: () => unknown): void, testdirName: string }, args: string[], env: Record<string, string> = {},
  nodeArgs: string[] = [], where: { cli?: string, cwd?: string } = {}): Promise<Served> {
  const child = spawnChild(t, process.execPath, [...nodeArgs, where.cli ?? CLI, 'serve', '--port', '0', ...args], {
    cwd: where.cwd ?? t.testdirName,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'info', _TAPJS_PROCESSINFO_COV_EXCLUDE_: CHILD_COVERAGE_EXCLUDE, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const logs: string[] = []
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    let buf = ''
    child.stdout?.on('data', chunk => {
      buf += chunk
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        logs.push(line)
        // Not every line is the log's (OTEL_TRACES_EXPORTER=console prints spans on stdout).
        if (!line.startsWith('{"')) continue
        const entry = JSON.parse(line)
        if (entry.msg === 'agent serving') resolve(entry.address)
      }
    })
    child.stderr?.on('data', chunk => logs.push(String(chunk)))
    child.on('exit', code => reject(new Error(`server exited with ${code}: ${logs.join('\n')}`)))
  })
  return { child, url, logs, exited }
}

/** A TCP server that accepts connections and never answers: a stalled Redis. */
export async function silentServer (t: Teardown): Promise<number> {
  const sockets = new Set<Socket>()
  const server = createServer(socket => { sockets.add(socket) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return (server.address() as AddressInfo).port
}

/**
 * An executor for the tests that follow a running task: on the text "wait" it yields "waiting" and runs until the
 * task is canceled; any other text is echoed back as `echo: <text>`.
 */
export const waitOrEcho: import('../index.js').AgentExecutor = async function * (ctx) {
  const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
  if (text === 'wait') {
    yield 'waiting'
    await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
    return
  }
  yield `echo: ${text}`
}

/** `waitOrEcho`, echoing in two chunks (`echo: ` then the text): streams then carry two artifact updates. */
export const waitOrEchoInTwo: import('../index.js').AgentExecutor = async function * (ctx) {
  const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
  if (text === 'wait') {
    yield 'waiting'
    await new Promise<void>(resolve => ctx.signal.addEventListener('abort', () => resolve()))
    return
  }
  yield 'echo: '
  yield text
}

/** A REST call through `inject`: JSON in (when a body is given) and out (when there is one). */
export async function restCall (app: FastifyInstance, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}):
Promise<{ status: number, headers: Record<string, unknown>, body: any }> {
  const res = await app.inject({
    method,
    url,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    payload: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.statusCode, headers: res.headers, body: res.body === '' ? undefined : res.json() }
}

/** `waitOrEchoInTwo` as an executor module, for the standalone server (`agent.executor: ./echo.js`). */
export const WAIT_OR_ECHO_IN_TWO_MODULE = `export default async function * (ctx) {
  const text = ctx.message.parts[0].kind === 'text' ? ctx.message.parts[0].text : ''
  if (text === 'wait') {
    yield 'waiting'
    await new Promise(resolve => ctx.signal.addEventListener('abort', () => resolve()))
    return
  }
  yield 'echo: '
  yield text
}
`
