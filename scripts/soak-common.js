// What the soak's runs share (scripts/soak.js, scripts/soak-shared.js): their HTTP client, requests, and readings.
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import { Agent, request } from 'undici'

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))
export const dispatcher = new Agent({ connections: 64, pipelining: 1 })

let seq = 0
export const body = (method, params) => JSON.stringify({ jsonrpc: '2.0', id: ++seq, method, params })
export const message = text => ({ kind: 'message', role: 'user', messageId: `soak-${++seq}`, parts: [{ kind: 'text', text }] })

/** A port of 127.0.0.1 nothing listens on now. */
export async function freePort () {
  const srv = createServer().listen(0, '127.0.0.1')
  await once(srv, 'listening')
  const { port } = srv.address()
  srv.close()
  return port
}

/** The process's RSS, MB; 0 for one that has just died (its status has no VmRSS any more, or is gone). */
export function rssMb (pid) {
  let status = ''
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {}
  const m = /VmRSS:\s+(\d+)/.exec(status)
  return m === null ? 0 : Number(m[1]) / 1024
}

/** A JSON-RPC call: its parsed answer; a 5xx throws. */
export async function rpc (url, method, params, headers = {}) {
  const res = await request(url, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', ...headers }, body: body(method, params) })
  const text = await res.body.text()
  if (res.statusCode >= 500) throw new Error(`${method}: HTTP ${res.statusCode} ${text.slice(0, 200)}`)
  return text.length > 0 && res.headers['content-type']?.includes('json') ? JSON.parse(text) : text
}

/**
 * What an instance's /metrics says of its memory, MB: RSS, the V8 heap (total and used) and the memory outside it that
 * V8 knows of (Buffers, mostly), and of that the answers and the requests in flight; undefined when the instance does not answer.
 */
export async function memoryOf (url) {
  const text = await fetch(`${url}metrics`, { signal: AbortSignal.timeout(2000) }).then(r => r.text(), () => '')
  const read = name => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1048576
  const memory = {
    rss: read('process_resident_memory_bytes'),
    heapTotal: read('nodejs_heap_size_total_bytes'),
    heapUsed: read('nodejs_heap_size_used_bytes'),
    external: read('nodejs_external_memory_bytes'),
    answers: read('a2a_answer_bytes'),
    requests: read('a2a_request_bytes')
  }
  return Number.isNaN(memory.rss) ? undefined : memory
}
