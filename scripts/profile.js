// `npm run profile`: a CPU profile of the built server under load, and its top functions by self time.
// Starts `dist/cli.js serve` with --cpu-prof on 127.0.0.1, loads it with autocannon, stops it with SIGTERM (the
// profile is written on exit), and prints the top functions by self time with file:line.
// Flags: --method send|stream (default send), --seconds S (default 10), --connections N (default 50),
// --key (security on, one API key), --top N (default 20), --dir DIR (where the .cpuprofile goes; default a temp dir),
// --pin (the server on the first core, the load on the second: see `pin` below), --redis URL (tasks and push configs
// in that Redis: the kvcache mode of CONTRACT.md §10; give it a database of its own, e.g. redis://127.0.0.1:6379/9).
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { freePort, start } from '../bench/proc.js'
import { rpcBody } from '../bench/load.js'

const { values } = parseArgs({
  options: {
    method: { type: 'string', default: 'send' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    key: { type: 'boolean', default: false },
    pin: { type: 'boolean', default: false },
    top: { type: 'string', default: '20' },
    redis: { type: 'string' },
    dir: { type: 'string' }
  }
})
const root = fileURLToPath(new URL('..', import.meta.url))
const dir = values.dir ?? mkdtempSync(join(os.tmpdir(), 'a2a-profile-'))
mkdirSync(dir, { recursive: true })
// Profiles of earlier runs in the same --dir are not this run's.
const earlier = new Set(readdirSync(dir))
const API_KEY = 'profile-api-key-0123456789abcdef'
const headers = values.key ? { 'x-api-key': API_KEY } : {}

function config () {
  const lines = ['agent:', '  name: Profiled Agent']
  if (values.key) {
    lines.push('security:', '  enabled: true', '  auth:', '    api_key:', '      keys:', `        - { key: ${API_KEY}, id: profile }`,
      '  rate_limit:', '    requests_per_minute: 1000000000', '    burst: 1000000000', '    max_streams_per_principal: 100000')
  }
  if (values.redis !== undefined) {
    lines.push('push_notifications:', '  backend: kvcache', 'tasks:', '  backend: kvcache', 'services:', '  cache:', '    type: cache',
      `    url: ${values.redis}`)
  }
  const file = join(dir, 'agent.yml')
  writeFileSync(file, lines.join('\n') + '\n')
  return file
}

/** Self time per function (name, file, line), from the samples of a .cpuprofile, largest first. */
export function selfTimes (profile) {
  const byNode = new Map(profile.nodes.map(n => [n.id, n]))
  const totals = new Map()
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byNode.get(id).callFrame
    const file = url === '' ? '' : relative(root, url.replace(/^file:\/\//, '')).replace(/^node_modules\//, '')
    const key = `${functionName || '(anonymous)'} ${file === '' ? '' : `${file}:${lineNumber + 1}`}`.trim()
    totals.set(key, (totals.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  const all = [...totals.values()].reduce((a, b) => a + b, 0)
  return [...totals].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, ms: us / 1000, share: us / all }))
}

/**
 * Puts every thread of the server on the first core and this process (autocannon) on the second. Unpinned on a
 * small machine, the profile charges the server with the time it waits for a core the load generator holds, most of
 * it to `writev` and `(idle)`; pinned, it shows the server's own time.
 */
function pin (serverPid) {
  if (os.cpus().length < 2) throw new Error('--pin needs two cores: the server on one, the load on the other')
  execFileSync('taskset', ['-a', '-cp', '0', String(serverPid)], { stdio: 'ignore' })
  execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' })
}

async function main () {
  const port = await freePort()
  const args = ['--cpu-prof', '--cpu-prof-dir', dir, join(root, 'dist/cli.js'), 'serve', '--config', config(), '--host', '127.0.0.1', '--port', String(port)]
  const ready = url => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: rpcBody('message/send') }).then(r => r.ok)
  const server = await start(args, port, ready, { LOG_LEVEL: 'warn', A2A_CONFIG: '' })
  if (values.pin) pin(server.child.pid)
  const method = values.method === 'stream' ? 'message/stream' : 'message/send'
  const result = await autocannon({
    url: server.url,
    method: 'POST',
    connections: Number(values.connections),
    duration: Number(values.seconds),
    headers: { 'content-type': 'application/json', ...headers },
    body: rpcBody(method)
  })
  await server.stop()
  // One profile per thread: with loader hooks (--import) Node runs them on a thread of their own. The main thread's
  // profile, the one with the server's work, is the largest.
  const file = readdirSync(dir).filter(f => f.endsWith('.cpuprofile') && !earlier.has(f))
    .sort((a, b) => statSync(join(dir, b)).size - statSync(join(dir, a)).size)[0]
  if (file === undefined) throw new Error(`no .cpuprofile was written in ${dir}`)
  console.log(`${method}: ${Math.round(result['2xx'] / result.duration)} req/s under the profiler, p99 ${result.latency.p99} ms`)
  console.log(`profile: ${join(dir, file)} (open it in Chrome DevTools, Performance tab)\n`)
  const rows = selfTimes(JSON.parse(readFileSync(join(dir, file), 'utf8'))).slice(0, Number(values.top))
  for (const r of rows) console.log(`${(100 * r.share).toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(7)} ms  ${r.name}`)
}

main().catch(err => {
  console.error(err)
  process.exitCode = 1
})
