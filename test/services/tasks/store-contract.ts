import type { Test } from 'tap'
import type { TaskState } from '../../../schemas/task.js'
import { JsonRpcError, RpcCode } from '../../../services/errors.js'
import type { TaskEvent } from '../../../services/tasks/event-bus.js'
import type { KeptEvent, StoredTask, TaskListPage, TaskStore } from '../../../services/tasks/store.js'

/** The test's clock: the memory store reads it, and records are stamped with it. */
export interface Clock {
  ms: number
  now (): number
}

/** A fresh, empty store for one case, released when `t` ends. */
export interface ContractStore {
  store: TaskStore
  /**
   * Lets the TTL of the terminal tasks among `ids` run out and leaves unfinished ones alone. Memory moves the clock
   * past the TTL. Redis cannot move its clock: it asserts each expiring task's PTTL is set and at most the TTL, then
   * expires the key now, as Redis would when the PTTL runs out.
   */
  expire (ids: string[]): Promise<void>
}

export interface ContractOptions {
  ttlSeconds: number
  clock: Clock
  /** `server.stream_replay.max_events`. */
  maxEvents: number
}

export type MakeStore = (t: Test, opts: ContractOptions) => Promise<ContractStore>

export interface ContractFlags {
  /** Whether `insert` refuses an id that is already stored. MemoryTaskStore does not check (ids are UUIDs). */
  rejectsDuplicateIds: boolean
}

const TTL_SECONDS = 3_600

export function clock (ms = 1_000_000): Clock {
  const c: Clock = { ms, now: () => c.ms }
  return c
}

/** A version-1 task record stamped `at`. */
export function record (id: string, at: number, opts: { owner?: string, contextId?: string, state?: TaskState } = {}): StoredTask {
  return {
    task: {
      id,
      contextId: opts.contextId ?? 'ctx',
      kind: 'task',
      status: { state: opts.state ?? 'submitted', timestamp: new Date(at).toISOString() },
      artifacts: [],
      history: [],
      metadata: null
    },
    owner: opts.owner ?? 'alice',
    version: 1,
    createdAt: at,
    updatedAt: at
  }
}

/** The next version of a record, in a new state, written at `at`. */
export function moved (prev: StoredTask, state: TaskState, at = prev.updatedAt): StoredTask {
  return {
    ...prev,
    task: { ...prev.task, status: { state, timestamp: new Date(at).toISOString() } },
    version: prev.version + 1,
    updatedAt: at
  }
}

const ids = (page: TaskListPage) => page.tasks.map(r => r.task.id)

/**
 * The one TaskStore contract (services/tasks/store.ts), run against every backend. Each case gets its own store
 * from `makeStore`, with a TTL of an hour: expiry is driven by the `expire` hook, never by waiting.
 */
export function storeContract (t: Test, name: string, makeStore: MakeStore, flags: ContractFlags): void {
  t.test(`${name}: the task store contract`, async t => {
    async function fresh (t: Test, maxEvents = 1000): Promise<{ store: TaskStore, expire: ContractStore['expire'], c: Clock }> {
      const c = clock()
      return { ...await makeStore(t, { ttlSeconds: TTL_SECONDS, clock: c, maxEvents }), c }
    }

    /** A write with its event, kept as the task service has it kept: by the write (Redis) or after it (memory). */
    async function write (store: TaskStore, next: StoredTask, event?: TaskEvent): Promise<void> {
      if (await store.replace(next, event) === false) throw new Error(`version ${next.version} not written`)
      if (event !== undefined) store.keep?.(next.task.id, event)
    }
    const chunk = (next: StoredTask, text: string): TaskEvent =>
      ({ type: 'artifact', version: next.version, task: next.task, artifact: { artifactId: 'a', parts: [{ kind: 'text', text }] }, append: true, lastChunk: false })
    const status = (next: StoredTask): TaskEvent => ({ type: 'status', version: next.version, task: next.task, final: false })
    const versions = (kept: KeptEvent[] | null) => kept?.map(e => [e.version, e.prev])

    t.test('events are kept in order, each with the version of the one before; eventsAfter reads after a version', async t => {
      const { store, c } = await fresh(t)
      const r = record('ev', c.ms)
      const running = moved(r, 'in_progress')
      const first = status(running)
      await store.insert(r)
      await write(store, running, first)
      let last = running
      for (const text of ['a', 'b', 'c']) {
        last = { ...last, version: last.version + 1 }
        await write(store, last, chunk(last, text))
      }
      // A write with no event (a message joining the task), then one with.
      const quiet = { ...last, version: last.version + 1 }
      await write(store, quiet)
      const done = moved(quiet, 'completed')
      await write(store, done, { type: 'status', version: done.version, task: done.task, final: true })

      t.same(versions(await store.eventsAfter('ev', 0)), [[2, 0], [3, 2], [4, 3], [5, 4], [7, 5]])
      const kept = await store.eventsAfter('ev', 3) as KeptEvent[]
      t.same(kept.map(e => e.type === 'artifact' ? e.artifact.parts : e.status.state), [[{ kind: 'text', text: 'b' }], [{ kind: 'text', text: 'c' }], 'completed'])
      t.match(kept[2], { type: 'status', final: true, status: { state: 'completed' } })
      t.match(kept[0], { type: 'artifact', append: true, lastChunk: false, artifact: { artifactId: 'a' } })
      t.same(versions(await store.eventsAfter('ev', 6)), [[7, 5]], 'after a version that had no event')
      t.same(await store.eventsAfter('ev', 7), [], 'nothing after the last')
      t.same(await store.eventsAfter('nope', 0), [], 'a task not stored has none')
    })

    t.test('an insert keeps the events of the first turn it carries', async t => {
      const { store, c } = await fresh(t)
      const r = record('first', c.ms)
      const running = moved(r, 'in_progress')
      const done = moved(running, 'completed')
      const stored = { ...done, version: 3 }
      const events: TaskEvent[] = [status({ ...running, version: 2 }), { type: 'status', version: 3, task: done.task, final: true }]
      await store.insert(stored, { events })
      for (const event of events) store.keep?.('first', event)
      t.same(versions(await store.eventsAfter('first', 0)), [[2, 0], [3, 2]])
      t.same(versions(await store.eventsAfter('first', 2)), [[3, 2]])
    })

    t.test('past max_events the oldest go: reading after one of them is null (too far behind)', async t => {
      const { store, c } = await fresh(t, 3)
      const r = record('long', c.ms)
      await store.insert(r)
      let last = moved(r, 'in_progress')
      await write(store, last, status(last))
      // Enough for Redis' approximate trimming (whole nodes of a hundred entries) to trim.
      for (let i = 0; i < 300; i++) {
        last = { ...last, version: last.version + 1 }
        await write(store, last, chunk(last, `c${i}`))
      }
      t.equal(await store.eventsAfter('long', 0), null)
      t.equal(await store.eventsAfter('long', 2), null)
      t.same(versions(await store.eventsAfter('long', last.version - 2)), [[last.version - 1, last.version - 2], [last.version, last.version - 1]])
    })

    /** Writes a task through in_progress to `state`, as the task service would. */
    async function finish (t: Test, store: TaskStore, r: StoredTask, state: TaskState): Promise<void> {
      const running = moved(r, 'in_progress')
      t.equal(await store.replace(running), true)
      t.equal(await store.replace(moved(running, state)), true)
    }

    t.test('insert then get returns the stored record, and an unknown id gives null', async t => {
      const { store, c } = await fresh(t)
      const r = record('a', c.ms, { owner: 'bob', contextId: 'x' })
      r.task.history.push({ kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'hi' }] })
      r.task.artifacts.push({ artifactId: 'a1', name: 'Agent-result', parts: [] })
      await store.insert(r)
      t.same(await store.get('a'), r)
      t.equal(await store.get('nope'), null)
    })

    if (flags.rejectsDuplicateIds) {
      t.test('inserting an id that is stored is refused and changes nothing', async t => {
        const { store, c } = await fresh(t)
        const r = record('a', c.ms)
        await store.insert(r)
        await t.rejects(store.insert(record('a', c.ms, { owner: 'bob', state: 'completed' })), { code: 'A2A_ERR_TASK_CONFLICT' })
        t.same(await store.get('a'), r)
        t.same(ids(await store.list({ owner: 'alice', pageSize: 10 })), ['a'])
        t.same(ids(await store.list({ owner: 'bob', pageSize: 10 })), [])
      })
    }

    t.test('replace is a compare-and-set on the version', async t => {
      const { store, c } = await fresh(t)
      const r1 = record('a', c.ms)
      await store.insert(r1)
      const r2 = moved(r1, 'in_progress', c.ms + 1)
      t.equal(await store.replace(r2), true)
      t.same(await store.get('a'), r2)
      // Another writer that also read version 1 is refused.
      t.equal(await store.replace(moved(r1, 'canceled')), false)
      // So is a jump over a version, and a step back.
      t.equal(await store.replace({ ...moved(r2, 'completed'), version: 4 }), false)
      t.equal(await store.replace({ ...moved(r2, 'completed'), version: 2 }), false)
      t.same(await store.get('a'), r2)
      const r3 = moved(r2, 'completed', c.ms + 2)
      t.equal(await store.replace(r3), true)
      t.same(await store.get('a'), r3)
    })

    t.test('replacing a task that was never stored answers false and stores nothing', async t => {
      const { store, c } = await fresh(t)
      t.equal(await store.replace(moved(record('ghost', c.ms), 'in_progress')), false)
      t.equal(await store.get('ghost'), null)
      t.same(await store.list({ owner: 'alice', pageSize: 10 }), { tasks: [], nextPageToken: '' })
    })

    t.test('list is newest first, per owner, filtered by contextId and state', async t => {
      const { store, c } = await fresh(t)
      await store.insert(record('a1', c.ms, { owner: 'alice', contextId: 'x' }))
      await store.insert(record('b1', c.ms, { owner: 'bob', contextId: 'x' }))
      await store.insert(record('a2', c.ms, { owner: 'alice', contextId: 'y' }))
      const a3 = record('a3', c.ms, { owner: 'alice', contextId: 'x' })
      await store.insert(a3)
      // An update does not move a task: the order is by creation.
      await store.replace(moved(a3, 'in_progress'))
      await store.replace(moved(record('a1', c.ms, { owner: 'alice', contextId: 'x' }), 'in_progress'))

      t.same(ids(await store.list({ owner: 'alice', pageSize: 50 })), ['a3', 'a2', 'a1'])
      t.same(ids(await store.list({ owner: 'bob', pageSize: 50 })), ['b1'])
      t.same(await store.list({ owner: 'carol', pageSize: 50 }), { tasks: [], nextPageToken: '' })
      t.same(ids(await store.list({ owner: 'alice', contextId: 'x', pageSize: 50 })), ['a3', 'a1'])
      t.same(ids(await store.list({ owner: 'bob', contextId: 'y', pageSize: 50 })), [])
      t.same(ids(await store.list({ owner: 'alice', state: 'submitted', pageSize: 50 })), ['a2'])
      t.same(ids(await store.list({ owner: 'alice', contextId: 'x', state: 'in_progress', pageSize: 50 })), ['a3', 'a1'])
      t.same(ids(await store.list({ owner: 'bob', contextId: 'x', state: 'submitted', pageSize: 50 })), ['b1'])
      // The records listed are the latest versions.
      t.same((await store.list({ owner: 'alice', pageSize: 1 })).tasks, [moved(a3, 'in_progress')])
    })

    t.test('list pages with nextPageToken until it is empty, each task seen once', async t => {
      const { store, c } = await fresh(t)
      for (let i = 1; i <= 7; i++) await store.insert(record(`t${i}`, c.ms, { contextId: i % 2 === 0 ? 'even' : 'odd' }))
      await store.insert(record('other', c.ms, { owner: 'bob' }))
      const all = ['t7', 't6', 't5', 't4', 't3', 't2', 't1']
      for (const pageSize of [1, 2, 3, 7, 8]) {
        const seen: string[] = []
        let page = await store.list({ owner: 'alice', pageSize })
        for (;;) {
          t.ok(page.tasks.length <= pageSize)
          seen.push(...ids(page))
          if (page.nextPageToken === '') break
          t.match(page.nextPageToken, /^[A-Za-z0-9_-]+$/)
          t.equal(page.tasks.length, pageSize, 'only the last page is short')
          page = await store.list({ owner: 'alice', pageSize, pageToken: page.nextPageToken })
        }
        t.same(seen, all, `pageSize ${pageSize}`)
      }
      // A page that ends exactly at the last match has no next page.
      t.equal((await store.list({ owner: 'alice', pageSize: 7 })).nextPageToken, '')
      // Filters apply across pages: the token skips, it does not count.
      const p1 = await store.list({ owner: 'alice', pageSize: 2 })
      t.same(ids(p1), ['t7', 't6'])
      t.same(ids(await store.list({ owner: 'alice', pageSize: 1, pageToken: p1.nextPageToken, contextId: 'even' })), ['t4'])
      const odd = await store.list({ owner: 'alice', pageSize: 2, contextId: 'odd' })
      t.same(ids(odd), ['t7', 't5'])
      const odd2 = await store.list({ owner: 'alice', pageSize: 2, contextId: 'odd', pageToken: odd.nextPageToken })
      t.same(odd2, { tasks: [(await store.get('t3')) as StoredTask, (await store.get('t1')) as StoredTask], nextPageToken: '' })
    })

    t.test('a page token this store did not issue is -32602', async t => {
      const { store, c } = await fresh(t)
      await store.insert(record('a', c.ms))
      const forged = ['garbage', '', ...['m:abc', 'r:abc', 'x:1', 'm:-1', 'r:1234567890123456'].map(s => Buffer.from(s).toString('base64url'))]
      for (const pageToken of forged) {
        await t.rejects(store.list({ owner: 'alice', pageSize: 2, pageToken }),
          { code: RpcCode.invalidParams, data: /^params\.pageToken: / }, JSON.stringify(pageToken))
      }
      t.ok(await store.list({ owner: 'bob', pageSize: 2, pageToken: 'garbage' }).catch(e => e) instanceof JsonRpcError)
    })

    t.test('terminal tasks expire after the TTL; get, list and paging skip them', async t => {
      const { store, expire, c } = await fresh(t)
      const live = record('live', c.ms)
      await store.insert(live)
      const written: string[] = ['live']
      for (const id of ['x', 'y', 'z', 'w']) {
        const r = record(id, c.ms, { owner: id === 'z' ? 'zed' : 'alice' })
        await store.insert(r)
        written.push(id)
        if (id !== 'w') await finish(t, store, r, id === 'y' ? 'canceled' : 'completed')
      }
      // A task stored already terminal (rejected before it ran) expires too.
      await store.insert(record('rejected', c.ms, { state: 'rejected' }))
      written.push('rejected')
      t.same(ids(await store.list({ owner: 'alice', pageSize: 10 })), ['rejected', 'w', 'y', 'x', 'live'])

      await expire(written)
      for (const id of ['x', 'y', 'z', 'rejected']) t.equal(await store.get(id), null, `${id} expired`)
      t.same(await store.get('live'), live, 'an unfinished task never expires')
      t.ok(await store.get('w'))
      t.same(ids(await store.list({ owner: 'alice', pageSize: 10 })), ['w', 'live'])
      t.same(await store.list({ owner: 'zed', pageSize: 10 }), { tasks: [], nextPageToken: '' })
      // Pages step over expired tasks, and a second look gives the same answer.
      for (let round = 0; round < 2; round++) {
        const p1 = await store.list({ owner: 'alice', pageSize: 1 })
        t.same(ids(p1), ['w'])
        t.same(ids(await store.list({ owner: 'alice', pageSize: 1, pageToken: p1.nextPageToken })), ['live'])
      }
    })

    t.test('unfinished tasks in any state do not expire', async t => {
      const { store, expire, c } = await fresh(t)
      const states: TaskState[] = ['submitted', 'in_progress', 'input_required', 'auth_required']
      for (const state of states) {
        const r = record(state, c.ms)
        await store.insert(r)
        if (state !== 'submitted') t.equal(await store.replace(moved(r, state)), true)
      }
      await expire(states)
      t.same(ids(await store.list({ owner: 'alice', pageSize: 10 })), [...states].reverse())
      for (const state of states) t.equal((await store.get(state))?.task.status.state, state)
    })

    t.test('ping and close resolve', async t => {
      const { store } = await fresh(t)
      await t.resolves(store.ping())
      await t.resolves(store.close())
    })
  })
}
