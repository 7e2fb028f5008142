// The soak's gRPC non-readers (scripts/soak-readers.js runs them beside the HTTP ones): raw HTTP/2 clients that call
// GetTask and SubscribeToTask on a large task and never read what comes back, so that every byte the server writes
// beyond HTTP/2's flow-control window waits in the server until the server lets go of the call or the connection.
import { once } from 'node:events'
import { connect } from 'node:http2'

const SERVICE = '/lf.a2a.v1.A2AService'

/** A gRPC frame holding `{ id }` (GetTaskRequest and SubscribeToTaskRequest both carry `id` as field 2). */
function frame (id) {
  const idBytes = Buffer.from(id)
  const message = Buffer.concat([Buffer.from([0x12, idBytes.length]), idBytes])
  const head = Buffer.alloc(5)
  head.writeUInt32BE(message.length, 1)
  return Buffer.concat([head, message])
}

/** What became of a call, reading it now, within `ms`: `reset`, `whole` (ended with its trailers) or `held`. */
async function fate (call, ms) {
  if (call.destroyed || call.closed) return call.rstCode === 0 && call.ended ? 'whole' : 'reset'
  return await new Promise(resolve => {
    const timer = setTimeout(() => resolve('held'), ms)
    const done = what => {
      clearTimeout(timer)
      resolve(what)
    }
    call.on('trailers', trailers => done(trailers['grpc-status'] === '0' ? 'whole' : 'reset'))
    call.on('error', () => done('reset'))
    call.on('close', () => done(call.rstCode === 0 ? 'whole' : 'reset'))
    call.resume()
  })
}

/**
 * For each `{ grpc, id }` (an instance's gRPC address and its large task): one HTTP/2 connection carrying `unary`
 * GetTask calls and `streams` SubscribeToTask calls, none of them read, held for `holdMs`; then each is read again.
 */
export async function grpcNonReaders (targets, holdMs, { unary = 40, streams = 10 } = {}) {
  const sessions = []
  const calls = []
  let refused = 0
  const statuses = {}
  for (const { grpc, id } of targets) {
    const session = connect(grpc)
    session.on('error', () => {})
    await once(session, 'connect')
    sessions.push(session)
    for (let i = 0; i < unary + streams; i++) {
      const call = session.request({
        ':method': 'POST',
        ':path': `${SERVICE}/${i < unary ? 'GetTask' : 'SubscribeToTask'}`,
        'content-type': 'application/grpc',
        te: 'trailers'
      })
      call.on('error', () => {})
      call.pause()
      call.end(frame(id))
      // A call refused at once (RESOURCE_EXHAUSTED: too many streams) is not held by anyone.
      call.on('response', headers => {
        const status = headers['grpc-status']
        if (status === undefined || status === '0') return
        refused++
        const key = `${status} ${headers['grpc-message'] ?? ''}`.slice(0, 80)
        statuses[key] = (statuses[key] ?? 0) + 1
      })
      calls.push(call)
    }
  }
  await new Promise(resolve => setTimeout(resolve, holdMs))
  const counts = { grpcCalls: calls.length, grpcRefused: refused, grpcRefusedWith: statuses, grpcReset: 0, grpcWhole: 0, grpcHeld: 0 }
  for (const what of await Promise.all(calls.map(call => fate(call, 10_000)))) {
    counts[`grpc${what[0].toUpperCase()}${what.slice(1)}`]++
  }
  for (const session of sessions) session.destroy()
  return counts
}
