// `node scripts/request-cost.js` (after `npm run build`): how long one large request blocks the server's event loop,
// at the default limits (issue 39, row 4: under 100 ms). The server runs in this process from dist/; the client is a
// child process, so its own work is not counted. For each case it prints the longest event-loop block seen while the
// request ran (perf_hooks.monitorEventLoopDelay), the longest GC pause, the answer's status and size, and every block
// over 10 ms in order (a 1 ms timer's lateness): the run with the smallest longest block of --runs runs (default 5), as
// other work on the machine only ever adds. `--expose-gc` lets it collect between runs. Then each synchronous step of the JSON-RPC
// path alone, timed around it (minimum over the runs). Flags: --runs N, --case NAME (one case only); COST_LOG=info
// shows the server's log.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, case: { type: 'string' } } })
const runs = Number(values.runs)
const dist = new URL('../dist/', import.meta.url)
const { createServer } = await import(new URL('server.js', dist))
const { validateConfig } = await import(new URL('services/config/validate.js', dist))
const { protoCodec, V1_SERVICE } = await import(new URL('services/grpc/protos.js', dist))

const config = validateConfig({
  agent: { name: 'Cost', executor: 'echo' },
  server: { log_level: process.env.COST_LOG ?? 'error' },
  protocol: { grpc: { enabled: true, port: 0, advertised_url: 'grpc://127.0.0.1:1' } }
})
const limit = config.server.max_request_size
const dir = mkdtempSync(join(os.tmpdir(), 'a2a-cost-'))

/** A JSON-RPC `method` (message/send) body of about `limit` bytes whose one text part is `unit` repeated (`unit` as JSON). */
function textBody (unit, unitBytes, method = 'message/send') {
  const head = `{"jsonrpc":"2.0","id":1,"method":"${method}","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"`
  const tail = '"}]}}}'
  const n = Math.floor((limit - head.length - tail.length - 64) / unitBytes)
  return head + unit.repeat(n) + tail
}

/** A message/send body with one data part of `keys` keys. */
function keysBody (keys) {
  const data = {}
  for (let i = 0; i < keys; i++) data[`k${i}`] = i
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'data', data }] } } })
}

/** SendMessage's request bytes (v1.0) with one text part of about `limit` bytes. */
function grpcText () {
  const codec = protoCodec()
  const type = codec.type('lf.a2a.v1.SendMessageRequest')
  return codec.write(type, { message: { messageId: 'g1', role: 'ROLE_USER', parts: [{ text: 'a'.repeat(limit - 1024) }] } })
}

/** A REST (v1.0) `POST /message:send` body whose one text part is `unit` repeated. */
function restBody (unit, unitBytes) {
  const head = '{"message":{"messageId":"r1","role":"ROLE_USER","parts":[{"text":"'
  const tail = '"}]}}'
  return head + unit.repeat(Math.floor((limit - head.length - tail.length - 64) / unitBytes)) + tail
}

/** SendMessage's request bytes (v1.0) with one data part of `keys` keys. */
function grpcBytes (keys) {
  const codec = protoCodec()
  const type = codec.type('lf.a2a.v1.SendMessageRequest')
  const data = {}
  for (let i = 0; i < keys; i++) data[`k${i}`] = i
  return codec.write(type, { message: { messageId: 'g1', role: 'ROLE_USER', parts: [{ data }] } })
}

const cases = {
  'text-latin1': () => ({ http: textBody('a', 1) }),
  'text-two-byte': () => ({ http: textBody('漢', 3) }),
  'text-escapes': () => ({ http: textBody('\\n', 2) }),
  'stream-latin1': () => ({ http: textBody('a', 1, 'message/stream') }),
  'keys-at-limit': () => ({ http: keysBody(config.tasks.max_keys) }),
  'keys-over-limit': () => ({ http: keysBody(1_000_000).slice(0, limit - 1) }),
  'rest-latin1': () => ({ http: restBody('a', 1), path: 'message:send' }),
  'grpc-text': () => ({ grpc: grpcText() }),
  'grpc-400k-keys': () => ({ grpc: grpcBytes(400_000) })
}

// The client: posts the file's bytes (HTTP) or calls SendMessage with them (gRPC, raw bytes), prints status and size.
const CLIENT = `
const fs = require('node:fs')
const [kind, file, target] = process.argv.slice(1)
const bytes = fs.readFileSync(file)
if (kind === 'http') {
  const req = require('node:http').request(target, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': bytes.length } }, res => {
    let n = 0
    res.on('data', c => { n += c.length })
    res.on('end', () => { console.log(res.statusCode + ' ' + n); process.exit(0) })
    res.on('error', err => { console.log(res.statusCode + ' ' + n + ' then ' + err.code); process.exit(0) })
  })
  req.on('error', err => { console.log('error ' + err.code); process.exit(0) })
  req.end(bytes)
} else {
  const grpc = require('@grpc/grpc-js')
  const client = new grpc.Client(target, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 })
  const id = x => x
  client.makeUnaryRequest('/${V1_SERVICE}/SendMessage', id, id, bytes, (err, value) => {
    console.log(err ? 'grpc ' + err.code + ' ' + String(err.details).slice(0, 80) : 'grpc ok ' + value.length)
    process.exit(0)
  })
}`

function client (kind, file, target) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT, kind, file, target], { cwd: new URL('..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', c => { out += c })
    child.on('exit', code => code === 0 ? resolve(out.trim()) : reject(new Error(`client exited ${code}`)))
  })
}

const app = await createServer(config)
await app.listen({ host: '127.0.0.1', port: 0 })
const url = `http://127.0.0.1:${app.server.address().port}/`
const grpcTarget = `127.0.0.1:${app.a2aGrpc?.port ?? config.protocol.grpc.port}`

let gcMax = 0
new PerformanceObserver(list => { for (const e of list.getEntries()) gcMax = Math.max(gcMax, e.duration) }).observe({ entryTypes: ['gc'] })

for (const [name, make] of Object.entries(cases)) {
  if (values.case !== undefined && values.case !== name) continue
  const { http, grpc, path = '' } = make()
  const file = join(dir, name)
  writeFileSync(file, http ?? grpc)
  let best
  for (let i = 0; i < runs; i++) {
    globalThis.gc?.()
    await new Promise(resolve => setTimeout(resolve, 50))
    const h = monitorEventLoopDelay({ resolution: 1 })
    gcMax = 0
    h.enable()
    // Every block of the loop over 10 ms, in order: a 1 ms timer that notes how late it runs.
    const blocks = []
    let last = performance.now()
    const ticker = setInterval(() => {
      const now = performance.now()
      if (now - last > 11) blocks.push(Math.round(now - last - 1))
      last = now
    }, 1)
    const t0 = performance.now()
    const answer = await client(http !== undefined ? 'http' : 'grpc', file, http !== undefined ? url + path : grpcTarget)
    const total = performance.now() - t0
    clearInterval(ticker)
    h.disable()
    const run = { block: h.max / 1e6, gc: gcMax, total, answer, blocks }
    if (best === undefined || run.block < best.block) best = run
  }
  console.log(`${name.padEnd(16)} ${String((http ?? grpc).length).padStart(9)} B  longest block ${best.block.toFixed(0).padStart(5)} ms  ` +
    `longest gc ${best.gc.toFixed(0).padStart(4)} ms  round trip ${best.total.toFixed(0).padStart(5)} ms  answer ${best.answer}  blocks ${best.blocks.join(' ')}`)
}
await app.close()

// Each synchronous step of the JSON-RPC path alone, on the text bodies.
const { countItems } = await import(new URL('services/json-rpc/body-scan.js', dist))
const { tooDeep } = await import(new URL('services/json-rpc/dispatch.js', dist))
const { keyCount, valueBytes } = await import(new URL('services/tasks/task-bytes.js', dist))
const sjson = (await import('secure-json-parse')).default
const time = fn => {
  let min = Infinity
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    fn()
    min = Math.min(min, performance.now() - t0)
  }
  return min.toFixed(0).padStart(4)
}
console.log('\nsteps (ms)        scan parse depth keys estimate stringify')
for (const name of ['text-latin1', 'text-two-byte', 'text-escapes', 'keys-at-limit']) {
  if (values.case !== undefined && values.case !== name) continue
  const body = cases[name]().http
  const value = sjson.parse(body, null, { protoAction: 'remove', constructorAction: 'remove' })
  const message = value.params.message
  console.log(`${name.padEnd(16)} ${time(() => countItems(body, 1e9))} ${time(() => sjson.parse(body, null, { protoAction: 'remove', constructorAction: 'remove' }))} ` +
    `${time(() => tooDeep(value))} ${time(() => keyCount(message, 1e9))} ${time(() => valueBytes(message))} ${time(() => JSON.stringify({ jsonrpc: '2.0', id: 1, result: { history: [message], artifacts: [{ parts: message.parts }] } }))}`)
}
rmSync(dir, { recursive: true, force: true })
