import { connect } from 'node:net'
import t from 'tap'
import type { AgentExecutor } from '../../services/agent/executor.js'
import { TEST_REDIS, call, listen, postStream, redisDb, rpc, until, userMessage } from '../helper.js'

// This file owns Redis db 2.
const DB = 2
const API_KEY = 'key-stream-redis-0123'

/** Tasks on this file's Redis db, held `delayMs` by the agent, with at most 20 streams open. */
function onRedis (delayMs: number) {
  return {
    services: { cache: { type: 'cache' as const, url: TEST_REDIS.url, db: DB } },
    tasks: { backend: 'kvcache' as const },
    push_notifications: { backend: 'kvcache' as const },
    agent: { name: 'Slow', delay_ms: delayMs },
    server: { max_streams: 20, shutdown_timeout: 0.5 }
  }
}

/** Opens a message/stream on a raw socket and resets it `afterMs` after the body is written. */
async function abandon (url: string, afterMs: number, headers: Record<string, string>): Promise<void> {
  const { port } = new URL(url)
  const body = JSON.stringify(rpc('message/stream', { message: userMessage('x') }))
  const socket = connect(Number(port), '127.0.0.1')
  socket.on('error', () => {})
  await new Promise(resolve => socket.once('connect', resolve))
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  socket.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  if (afterMs > 0) await new Promise(resolve => setTimeout(resolve, afterMs))
  socket.resetAndDestroy()
}

for (const secured of [false, true]) {
  t.test(`on Redis${secured ? ' with security on' : ''}, streams whose clients reset at once free every slot (no ghost streams)`, async t => {
    const redis = await redisDb(t, DB)
    const { app, url } = await listen(t, {
      config: {
        ...onRedis(300),
        security: secured
          ? { enabled: true, auth: { api_key: { keys: [{ key: API_KEY, scopes: ['api:read'], id: 'resetter' }] } }, rate_limit: { requests_per_minute: 10_000, burst: 10_000, max_streams_per_principal: 1000 } }
          : { enabled: false }
      }
    })
    const headers: Record<string, string> = secured ? { 'x-api-key': API_KEY } : {}
    await Promise.all(Array.from({ length: 60 }, (_, i) => abandon(url, i % 3, headers)))
    // Every task that was made finishes; then nothing may hold a stream.
    await until(async () => app.a2aTasks.running === 0 && app.a2aStreams.size === 0)
    t.equal(app.a2aStreams.size, 0, 'no stream is left open')
    if (secured) {
      await until(async () => await redis.zcard('a2a:rate:streams:resetter') === 0)
      t.equal(await redis.zcard('a2a:rate:streams:resetter'), 0, 'no stream slot of the principal is held in Redis')
    }
    // Requests still in their auth or Redis steps hold a slot until they find their client gone.
    await until(() => {
      const slots = Array.from({ length: 20 }, () => app.a2aStreams.take())
      for (const slot of slots) slot?.()
      return slots.every(s => s !== null)
    })
    t.pass('all 20 server.max_streams slots are free')
    const res = await postStream(url, rpc('message/stream', { message: userMessage('after') }), headers)
    t.equal(res.status, 200)
    t.equal(res.events.at(-1).result.status.state, 'completed', 'a new stream is served to its end')
  })
}

t.test('concurrent streams never pass server.max_streams, on Redis', async t => {
  await redisDb(t, DB)
  const { app, url } = await listen(t, {
    config: onRedis(400)
  })
  let peak = 0
  const watch = setInterval(() => { peak = Math.max(peak, app.a2aStreams.size) }, 1)
  const statuses = await Promise.all(Array.from({ length: 40 }, async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('message/stream', { message: userMessage('x') })) })
    await res.text()
    return res.status
  }))
  clearInterval(watch)
  t.equal(statuses.filter(s => s === 200 || s === 429).length, 40, 'each stream is served or refused with 429')
  t.ok(peak <= 20, `never more than 20 open (peak ${peak})`)
})

/** An agent that answers in `chunks` artifact chunks. */
function chunky (chunks: number): AgentExecutor {
  return async function * () {
    for (let i = 0; i < chunks; i++) yield `c${i} `
  }
}

t.test('server.stream_replay holds on Redis (issue 39 row 10): max_events 0 keeps no event; ttl bounds the Stream; a limit trims', async t => {
  const redis = await redisDb(t, DB)
  const replay = async (maxEvents: number): Promise<string> => {
    const { app } = await listen(t, {
      executor: chunky(10),
      config: { ...onRedis(0), server: { stream_replay: { max_events: maxEvents, ttl: 2 } } }
    })
    const sent = await call(app, 'message/send', { message: userMessage('x'), configuration: { blocking: true } })
    t.equal(sent.body.result.status.state, 'completed')
    return sent.body.result.id
  }
  const none = await replay(0)
  t.equal(await redis.exists(`a2a:task:t:${none}`), 1, 'the task is stored')
  t.same(await redis.keys('a2a:task:e:*'), [], 'max_events 0: no event is kept')

  const kept = await replay(3)
  t.equal(await redis.xlen(`a2a:task:e:${kept}`), 3, 'max_events 3: the task\'s 12 events are trimmed to the last 3')
  const pttl = await redis.pttl(`a2a:task:e:${kept}`)
  t.ok(pttl > 0 && pttl <= 2000, `ttl 2: the ended task's events expire within 2 s (PTTL ${pttl} ms)`)
})
