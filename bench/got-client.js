// The push baseline: a bare got 14 client posting a Task body to the receiver, N requests in flight, for S seconds.
// Usage: node bench/got-client.js URL CONCURRENCY SECONDS. Prints `{ ready }` once loaded, then the 2xx
// answers, the failures and the seconds taken, as JSON lines.
import http from 'node:http'
import got from 'got'

const [url, concurrency, seconds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])]
const body = JSON.stringify({
  id: '6f1d21d2-4fc8-424e-af39-f8f6a6439de0',
  contextId: 'b163992e-ef68-44ea-8edc-928dd9beabcc',
  kind: 'task',
  status: { state: 'completed', timestamp: '2026-01-01T00:00:00.000Z' },
  artifacts: [{ artifactId: 'c1856dec-79cd-4f93-ac7c-1c2ad788e6fe', parts: [{ kind: 'text', text: 'hello bench' }], name: 'Agent-result' }],
  history: [{ kind: 'message', role: 'user', messageId: 'bench', parts: [{ kind: 'text', text: 'hello bench' }] }]
})
// The same client settings as a webhook notifier: keep-alive, no retry, no redirects, an explicit timeout.
const client = got.extend({
  retry: { limit: 0 },
  followRedirect: false,
  throwHttpErrors: false,
  timeout: { request: 10_000 },
  agent: { http: new http.Agent({ keepAlive: true }) },
  headers: { 'content-type': 'application/json' }
})
process.stdout.write(JSON.stringify({ ready: true }) + '\n')
await new Promise(resolve => setTimeout(resolve, 100))
const t0 = Date.now()
const deadline = t0 + seconds * 1000
let ok = 0
let failed = 0
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (Date.now() < deadline) {
    const res = await client.post(url, { body }).catch(() => null)
    if (res !== null && res.statusCode < 300) ok++
    else failed++
  }
}))
process.stdout.write(JSON.stringify({ ok, failed, seconds: (Date.now() - t0) / 1000 }) + '\n')
