// Streams that resume on another instance (docs/architecture.md, "Resumable streams"): two instances on one private
// redis-server, or on one PostgreSQL schema, a client dropped on one and resumed on the other in every version and binding; and a bounded load of
// concurrent tasks whose clients drop at seeded random points and resume, on Redis and in memory; and the resync of an
// ended task whose events Redis no longer keeps (issue 39 row 11).
import Fastify from 'fastify'
import t from 'tap'
import a2a, { type A2AOptions, type AgentExecutor } from '../../index.js'
import { postgresSchema, privateRedis, testDatabase, type Teardown } from '../helper.js'
import { Frames, RESUME_BINDINGS, chunks, dropAfter, dropping, gatedAgent, resyncThenEnd, textOf, untilCompleted, type Frame } from './resume-bindings.js'

/** The plugin on 127.0.0.1; its close ends every connection (a dropped stream leaves a keep-alive socket). */
async function listen (t: Teardown, opts: A2AOptions): Promise<string> {
  const app = Fastify({ logger: false, forceCloseConnections: true })
  await app.register(a2a, opts)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return url
}

const onRedis = (url: string, extra: Record<string, unknown> = {}) => ({
  services: { cache: { type: 'cache' as const, url } },
  tasks: { backend: 'kvcache' as const },
  push_notifications: { backend: 'kvcache' as const },
  server: { shutdown_timeout: 0.5 },
  ...extra
})

const onPostgres = (url: string, extra: Record<string, unknown> = {}) => ({
  services: { postgres: { url } },
  tasks: { backend: 'postgres' as const },
  push_notifications: { backend: 'postgres' as const },
  server: { shutdown_timeout: 0.5 },
  ...extra
})

// PostgreSQL: a database for the file, a schema of its own for each test.
const database = testDatabase(t)

/** The config of instances sharing a new private Redis, or a new PostgreSQL schema, with `extra`'s sections. */
async function sharedBy (t: Teardown, where: 'redis' | 'postgres', extra: Record<string, unknown> = {}): Promise<A2AOptions['config']> {
  return where === 'redis' ? onRedis((await privateRedis(t)).url, extra) : onPostgres(await postgresSchema(t, await database), extra)
}

const ids = (frames: Frame[]) => frames.map(f => f.id as number)
const increasing = (list: number[]) => list.every((id, i) => Number.isInteger(id) && (i === 0 || id > list[i - 1]))

for (const where of ['redis', 'postgres'] as const) {
  t.test(`${where}: dropped on one instance, resumed on the other: what it missed from the store, then live from the other`, async t => {
    const base = await sharedBy(t, where) as Record<string, unknown>
    for (const binding of RESUME_BINDINGS) {
      for (const cut of [1, 3]) {
        const agent = gatedAgent(4, 4)
        const opts = { executor: agent.executor, config: { ...base, ...binding.config } }
        const [a, b] = [await listen(t, opts), await listen(t, opts)]
        const text = `${binding.name}-${cut}`
        const seen = await dropAfter(await dropping(binding, a, text), cut)
        const lastId = seen[seen.length - 1].id as number
        const resumed = new Frames(await binding.resume(b, binding.taskId(seen[0].data), lastId))
        const replayed: Frame[] = []
        while (textOf(binding, seen) + textOf(binding, replayed) !== chunks(0, 4)) replayed.push(await resumed.next() as Frame)
        agent.open(text)
        const all = [...replayed, ...await resumed.rest()]
        t.equal(textOf(binding, seen) + textOf(binding, all), chunks(0, 8), `${binding.name}, after ${cut}: every chunk once, in order`)
        t.equal(binding.said(all[all.length - 1].data), 'status completed')
        t.ok(increasing([lastId, ...ids(all)]), `ids: ${lastId} | ${ids(all).join(' ')}`)
        t.notOk(all.some(f => binding.said(f.data).startsWith('task ')), 'no resync')
      }
    }
  })
}

/** A small seeded generator (mulberry32), so that a failure replays with the same drop points. */
function random (seed: number): () => number {
  return () => {
    seed = (seed + 0x6D2B79F5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const TASKS = 50
const CHUNKS = 200

/** Writes CHUNKS chunks, letting the event loop turn every tenth, so that the tasks interleave. */
const chunky: AgentExecutor = async function * () {
  for (let i = 0; i < CHUNKS; i++) {
    if (i % 10 === 9) await new Promise(resolve => setImmediate(resolve))
    yield `c${i} `
  }
}

for (const where of ['memory', 'redis', 'postgres'] as const) {
  t.test(`${where}: ${TASKS} tasks of ${CHUNKS} chunks, clients dropped at random points and resumed: every sequence whole`, async t => {
    const seed = Number(process.env.RESUME_SEED ?? 20261126)
    const next = random(seed)
    const a2aDialect = { protocol: { dialect: 'a2a' as const } }
    const config = where === 'memory' ? a2aDialect : await sharedBy(t, where, a2aDialect)
    const urls = where !== 'memory'
      ? [await listen(t, { executor: chunky, config }), await listen(t, { executor: chunky, config })]
      : [await listen(t, { executor: chunky, config })]
    const failures: string[] = []
    await Promise.all(Array.from({ length: TASKS }, async (_, n) => {
      const binding = RESUME_BINDINGS[n % RESUME_BINDINGS.length]
      const cut = 1 + Math.floor(next() * 12)
      const from = urls[n % urls.length]
      const to = urls[(n + 1) % urls.length]
      const seen = await dropAfter(await dropping(binding, from, `load-${n}`), cut)
      const lastId = seen[seen.length - 1].id as number
      // A stream seen to its end (its chunks merged for a client that read slowly) has nothing to resume.
      const rest = binding.said(seen[seen.length - 1].data) === 'status completed'
        ? []
        : await new Frames(await binding.resume(to, binding.taskId(seen[0].data), lastId)).rest()
      const all = [...seen, ...rest]
      const text = textOf(binding, all)
      if (text !== chunks(0, CHUNKS)) failures.push(`${binding.name} #${n} (cut ${cut}): ${text.length} of ${chunks(0, CHUNKS).length} chars`)
      if (!increasing(ids(all))) failures.push(`${binding.name} #${n}: ids ${ids(all).join(' ')}`)
      if (binding.said(all[all.length - 1].data) !== 'status completed') failures.push(`${binding.name} #${n}: ended ${binding.said(all[all.length - 1].data)}`)
    }))
    t.same(failures, [], `seed ${seed} (RESUME_SEED replays it)`)
  })
}

t.test('on Redis, a task sent without a stream keeps no events of its first turn: nobody saw them to resume by', async t => {
  const redis = await privateRedis(t)
  // The built-in agent: its tasks end in their first turn, stored once, finished.
  const url = await listen(t, { config: onRedis(redis.url, { protocol: { dialect: 'a2a' } }) })
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const sent: any = await (await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'x' }] } } })
  })).json()
  t.equal(sent.result.status.state, 'completed')
  t.equal(await client.exists(`a2a:task:e:${sent.result.id as string}`), 0, 'no Stream for a task sent with message/send')
  const binding = RESUME_BINDINGS[0]
  const frames = await new Frames(await binding.stream(url, 'y')).rest()
  const id = binding.taskId(frames[0].data)
  t.ok(await client.xlen(`a2a:task:e:${id}`) > 0, 'a Stream for a task followed from its start')
})

for (const where of ['redis', 'postgres'] as const) {
  t.test(`row 11 on ${where}: a v1.0 resume of a task that ended and whose events were evicted gets the task marked as a resync, then the end`, async t => {
    const base = await sharedBy(t, where) as Record<string, unknown>
    for (const binding of RESUME_BINDINGS.filter(b => b.name.includes('v1.0'))) {
      for (const maxEvents of [0, 2]) {
        const agent = gatedAgent(2, 2)
        // A resume is served as many events as server.stream_replay says: none, or the last two (Redis keeps no more;
        // PostgreSQL keeps more for the instances' listeners, and serves no more).
        const opts = { executor: agent.executor, config: { ...base, ...binding.config, server: { shutdown_timeout: 0.5, stream_replay: { max_events: maxEvents } } } }
        const [a, b] = [await listen(t, opts), await listen(t, opts)]
        const seen = await dropAfter(await dropping(binding, a, 'evicted'), 1)
        agent.open('evicted')
        const taskId = binding.taskId(seen[0].data)
        await untilCompleted(b, taskId)
        // Resumed on the other instance: what it knows of the task is what the store kept.
        const res = await binding.resume(b, taskId, seen[0].id)
        await resyncThenEnd(t, binding, res, `${binding.name}, max_events ${maxEvents}`)
      }
    }
  })
}
