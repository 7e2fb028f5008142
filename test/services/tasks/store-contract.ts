// The acceptance test of a task store backend: every backend must pass this suite, which checks the obligations of
// the TaskStore contract (the interface's TSDoc, services/tasks/store.ts) through the interface alone. To run it
// against a new backend, add a test file that calls `storeContract(t, '<name>', makeStore, flags)`: `makeStore` gives
// each case a fresh, empty store built with the `ttlSeconds` and `maxEvents` it is handed (reading the test's `clock`
// if the store reads a clock), released when the case's `t` ends, and an `expire(ids)` that makes the TTL of the
// terminal tasks among `ids` run out (move the clock, or expire the rows). memory-store.test.ts and
// redis-store.test.ts do so; docs/stores.md says more. Optional capabilities (`sync`, `version`, `onDelete`) are
// checked when the store has them. What the suite cannot check (the insert limits, `server.stream_replay.ttl`,
// `announces`, `recordsPush`, `leasesOnInsert`) each backend tests in its own file.
import type { Test } from 'tap'
import type { TaskState } from '../../../schemas/task.js'
import { JsonRpcError, RpcCode } from '../../../services/kernel/errors.js'
import type { TaskEvent } from '../../../services/tasks/event-bus.js'
import type { KeptEvent, SendClaim, StoredTask, TaskListPage, TaskStore } from '../../../services/tasks/store.js'
import { until } from '../../helper.js'

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
/** The dedupe window of the claims the suite takes: an hour, unless a case says otherwise. */
const WINDOW_MS = 3_600_000
type Claim = NonNullable<TaskStore['claimSend']>

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
 * The store as the cases use it: a stream follows every task from its insert (`follow`, where the store has it), so
 * it keeps all of their events. What a store with `follow` keeps of a task nobody follows has a case of its own.
 */
export function followed<S extends TaskStore> (store: S): S {
  const follow = store.follow
  if (follow === undefined) return store
  const insert = store.insert.bind(store)
  store.insert = async (record, opts) => {
    await insert(record, opts)
    follow.call(store, record.task.id)
  }
  return store
}

/**
 * The one TaskStore contract (services/tasks/store.ts), run against every backend. Each case gets its own store
 * from `makeStore`, with a TTL of an hour: expiry is driven by the `expire` hook, never by waiting.
 */
export function storeContract (t: Test, name: string, makeStore: MakeStore, flags: ContractFlags): void {
  t.test(`${name}: the task store contract`, async t => {
    async function fresh (t: Test, maxEvents = 1000, follow = true): Promise<{ store: TaskStore, expire: ContractStore['expire'], c: Clock }> {
      const c = clock()
      const made = await makeStore(t, { ttlSeconds: TTL_SECONDS, clock: c, maxEvents })
      return { ...made, store: follow ? followed(made.store) : made.store, c }
    }

    /** A write with its event, kept as the task service has it kept: by the write (Redis) or after it (memory). */
    async function write (store: TaskStore, next: StoredTask, event?: TaskEvent): Promise<void> {
      if (await store.replace(next, event) === false) throw new Error(`version ${next.version} not written`)
      if (event !== undefined) store.keep?.(next.task.id, event)
    }
    /** A new task `id`, stored and then moved to in_progress with its status event: the running record. */
    async function started (store: TaskStore, id: string, at: number): Promise<StoredTask> {
      const r = record(id, at)
      await store.insert(r)
      const running = moved(r, 'in_progress')
      await write(store, running, status(running))
      return running
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

    t.test('a store with follow keeps no event of a task until a stream follows it, then each one', async t => {
      const { store, c } = await fresh(t, 1000, false)
      const r = record('quiet', c.ms)
      await store.insert(r)
      const running = moved(r, 'in_progress')
      await write(store, running, status(running))
      if (store.follow === undefined) {
        t.same(versions(await store.eventsAfter('quiet', 0)), [[2, 0]], 'a store without follow keeps every event')
        return
      }
      t.equal(await store.eventsAfter('quiet', 0), null, 'none kept: a resume from a guessed id is a resync')
      t.same(await store.eventsAfter('quiet', 2), [], 'a client that has the last event is not behind')
      store.follow('quiet')
      const more = { ...running, version: 3 }
      await write(store, more, chunk(more, 'a'))
      const done = moved(more, 'completed')
      await write(store, done, { type: 'status', version: done.version, task: done.task, final: true })
      t.same(versions(await store.eventsAfter('quiet', 2)), [[3, 2], [4, 3]], 'kept from the follow on, each with its prev')
      t.equal(await store.eventsAfter('quiet', 1), null, 'a resume from before the follow is a resync')
      store.follow('nope')
      t.same(await store.eventsAfter('nope', 0), [], 'following a task not stored keeps nothing')
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
      let last = await started(store, 'long', c.ms)
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

    /** The version a stream reads at its heartbeats: `version` when the store has it, else `get`'s (the task service). */
    async function storedVersion (store: TaskStore, id: string): Promise<number | null> {
      return store.version === undefined ? (await store.get(id))?.version ?? null : await store.version(id)
    }

    /** The next version of a record, its only artifact grown by `text` at `at`, and the chunk event of that write. */
    function appended (prev: StoredTask, text: string, at: number): { next: StoredTask, event: TaskEvent } {
      const [artifact] = prev.task.artifacts
      const part = { kind: 'text' as const, text }
      const next = { ...prev, task: { ...prev.task, artifacts: [{ ...artifact, parts: artifact.parts.concat([part]) }] }, version: prev.version + 1, updatedAt: at }
      const event: TaskEvent = {
        type: 'artifact', version: next.version, task: next.task, artifact: { artifactId: artifact.artifactId, name: artifact.name, parts: [part] }, append: true, lastChunk: false
      }
      return { next, event }
    }

    t.test('get and list hand back each record as written, to the same JSON text (a lost answer is checked by it)', async t => {
      const { store, c } = await fresh(t)
      const r = record('json', c.ms, { contextId: 'k' })
      r.task.history.push({ kind: 'message', role: 'user', messageId: 'm1', parts: [{ kind: 'text', text: 'hi' }], metadata: { z: 1, a: [2, { y: null }] } })
      r.task.metadata = { b: 'x', a: 'y' }
      const same = async (written: StoredTask, what: string) => {
        t.equal(JSON.stringify(await store.get('json')), JSON.stringify(written), `get, ${what}`)
        t.equal(JSON.stringify((await store.list({ owner: 'alice', pageSize: 1 })).tasks[0]), JSON.stringify(written), `list, ${what}`)
      }
      await store.insert(r)
      await same(r, 'after the insert')
      const running = moved(r, 'in_progress', c.ms + 1)
      await write(store, running, status(running))
      let last: StoredTask = { ...running, task: { ...running.task, artifacts: [{ artifactId: 'a', name: 'Agent-result', parts: [{ kind: 'text', text: 'x' }] }] }, version: 3, updatedAt: c.ms + 2 }
      await write(store, last, { type: 'artifact', version: 3, task: last.task, artifact: last.task.artifacts[0], append: false, lastChunk: false })
      await same(last, 'after a whole write')
      // Chunks appended to an artifact (a store may keep them beside the record, as Redis does).
      for (const [i, text] of ['y', 'z'].entries()) {
        const { next, event } = appended(last, text, c.ms + 3 + i)
        await write(store, next, event)
        last = next
        await same(last, `after chunk ${text}`)
      }
      const done = moved(last, 'completed', c.ms + 10)
      await write(store, done, { type: 'status', version: done.version, task: done.task, final: true })
      await same(done, 'after the last write')
    })

    t.test('a store changes no record handed to it', async t => {
      const { store, c } = await fresh(t)
      const frozen = <T>(value: T): T => {
        if (typeof value === 'object' && value !== null) {
          for (const inner of Object.values(value)) frozen(inner)
          Object.freeze(value)
        }
        return value
      }
      // Modules are strict: a store that wrote into one of these would throw.
      const r = frozen(record('ice', c.ms))
      await store.insert(r)
      const running = frozen(moved(r, 'in_progress'))
      await write(store, running, frozen(status(running)))
      const done = frozen(moved(running, 'completed'))
      await write(store, done, frozen({ type: 'status', version: done.version, task: done.task, final: true }))
      t.same(await store.get('ice'), done)
      t.same(versions(await store.eventsAfter('ice', 0)), [[2, 0], [3, 2]])
    })

    t.test('an insert stores the version it carries, and the compare-and-set goes on from it', async t => {
      const { store, c } = await fresh(t)
      // A task whose first turn ran before it was stored comes at a later version.
      const r = { ...moved(moved(record('late', c.ms), 'in_progress'), 'input_required') }
      t.equal(r.version, 3)
      await store.insert(r)
      t.same(await store.get('late'), r)
      t.equal(await storedVersion(store, 'late'), 3)
      t.equal(await store.replace({ ...moved(r, 'canceled'), version: 3 }), false, 'not from a version before it')
      t.equal(await store.replace(moved(r, 'in_progress')), true)
      t.equal((await store.get('late'))?.version, 4)
    })

    t.test('the stored version, by `version` when the store has it: null for a task not stored or expired', async t => {
      const { store, expire, c } = await fresh(t)
      t.comment(store.version === undefined ? 'no version: the task service reads the task' : 'the store has version')
      t.equal(await storedVersion(store, 'nope'), null)
      const r = record('v', c.ms)
      await store.insert(r)
      t.equal(await storedVersion(store, 'v'), 1)
      const running = moved(r, 'in_progress')
      await write(store, running, status(running))
      let last: StoredTask = { ...running, task: { ...running.task, artifacts: [{ artifactId: 'a', parts: [] }] }, version: 3 }
      await write(store, last)
      for (const text of ['1', '2']) {
        const { next, event } = appended(last, text, c.ms)
        await write(store, next, event)
        last = next
        t.equal(await storedVersion(store, 'v'), last.version, 'after a chunk')
        t.equal(await storedVersion(store, 'v'), (await store.get('v'))?.version, 'as get has it')
      }
      t.equal(await store.replace({ ...moved(last, 'failed'), version: last.version + 2 }), false)
      t.equal(await storedVersion(store, 'v'), last.version, 'a refused write changes nothing')
      const done = moved(last, 'completed')
      await write(store, done)
      t.equal(await storedVersion(store, 'v'), done.version)
      await expire(['v'])
      t.equal(await storedVersion(store, 'v'), null, 'expired')
    })

    t.test('concurrent writes from one version: exactly one lands, and only its event is kept', async t => {
      const { store, c } = await fresh(t)
      const r = record('race', c.ms)
      await store.insert(r)
      const states: TaskState[] = ['in_progress', 'canceled', 'failed', 'rejected', 'input_required']
      const candidates = states.map(state => moved(r, state))
      const outcomes = await Promise.all(candidates.map(next => store.replace(next, status(next))))
      t.same(outcomes.filter(o => o !== false).length, 1, `outcomes ${JSON.stringify(outcomes)}`)
      const winner = candidates[outcomes.findIndex(o => o !== false)]
      // As the task service does for a store that keeps events after the write: only the write that landed.
      store.keep?.('race', status(winner))
      t.same(await store.get('race'), winner)
      const kept = await store.eventsAfter('race', 1) as KeptEvent[]
      t.same(versions(kept), [[2, 0]])
      t.match(kept[0], { type: 'status', status: { state: winner.task.status.state } })
    })

    t.test('claimInterrupted hands out interrupted tasks last updated by `before`, oldest first, once while they stay so', async t => {
      const { store } = await fresh(t)
      const tasks = new Map<string, StoredTask>()
      for (const id of ['x', 'y', 'z', 'w']) {
        const r = record(id, 100)
        await store.insert(r)
        tasks.set(id, r)
      }
      // Written in time order, as the task service writes them.
      const to = async (id: string, state: TaskState, at: number) => {
        const next = moved(tasks.get(id) as StoredTask, state, at)
        t.equal(await store.replace(next), true)
        tasks.set(id, next)
      }
      await to('y', 'input_required', 200)
      await to('x', 'auth_required', 250)
      await to('z', 'input_required', 300)
      await to('z', 'in_progress', 310)
      await to('w', 'input_required', 320)
      t.same(await store.claimInterrupted(99), [], 'none updated by then')
      t.same(await store.claimInterrupted(299), ['y', 'x'])
      t.same(await store.claimInterrupted(299), [], 'handed out once')
      t.same(await store.claimInterrupted(1_000), ['w'], 'z left the interrupted states')
      await to('y', 'in_progress', 400)
      await to('y', 'input_required', 500)
      t.same(await store.claimInterrupted(1_000), ['y'], 'interrupted again: handed out again, by its new update')
      await to('w', 'canceled', 600)
      t.same(await store.claimInterrupted(1_000), [])
    })

    t.test('claimInterrupted hands out a task stored already interrupted (its first turn asked for input before the insert)', async t => {
      const { store } = await fresh(t)
      await store.insert(moved(record('asked', 100), 'input_required', 150))
      await store.insert(moved(record('auth', 100), 'auth_required', 900))
      t.same(await store.claimInterrupted(149), [], 'not due before its update')
      t.same(await store.claimInterrupted(200), ['asked'])
      t.same(await store.claimInterrupted(1_000), ['auth'])
      t.same(await store.claimInterrupted(1_000), [], 'handed out once')
    })

    t.test('max_events 0 keeps no event: a client behind gets null, one that has every event []', async t => {
      const { store, c } = await fresh(t, 0)
      const running = await started(store, 'none', c.ms)
      const done = moved(running, 'completed')
      await write(store, done, { type: 'status', version: 3, task: done.task, final: true })
      t.equal(await store.eventsAfter('none', 0), null)
      t.equal(await store.eventsAfter('none', 2), null)
      t.same(await store.eventsAfter('none', 3), [])
    })

    t.test('list applies where after the indexed filters; pages count only what it accepts', async t => {
      const { store, c } = await fresh(t)
      for (let i = 1; i <= 7; i++) await store.insert(record(`t${i}`, c.ms, { contextId: i % 2 === 0 ? 'even' : 'odd' }))
      await store.insert(record('other', c.ms, { owner: 'bob', contextId: 'odd' }))
      const seen: string[] = []
      const where = (task: { id: string }) => { seen.push(task.id); return Number(task.id.slice(1)) % 3 === 0 }
      const p1 = await store.list({ owner: 'alice', pageSize: 1, where })
      t.same(ids(p1), ['t6'])
      t.not(p1.nextPageToken, '')
      const p2 = await store.list({ owner: 'alice', pageSize: 1, where, pageToken: p1.nextPageToken })
      t.same(p2, { tasks: [(await store.get('t3')) as StoredTask], nextPageToken: '' })
      t.same(ids(await store.list({ owner: 'alice', pageSize: 5, contextId: 'odd', where })), ['t3'])
      t.same(ids(await store.list({ owner: 'alice', pageSize: 5, contextId: 'odd', state: 'submitted', where: () => false })), [])
      t.notOk(seen.includes('other'), 'where sees only the owner\'s tasks')
      t.ok(seen.every(id => /^t\d$/.test(id)))
    })

    t.test('list pages go on after the last task returned: a task inserted meanwhile is not seen, none is repeated or skipped', async t => {
      const { store, c } = await fresh(t)
      for (let i = 1; i <= 5; i++) await store.insert(record(`t${i}`, c.ms))
      const p1 = await store.list({ owner: 'alice', pageSize: 2 })
      t.same(ids(p1), ['t5', 't4'])
      await store.insert(record('t6', c.ms))
      const p2 = await store.list({ owner: 'alice', pageSize: 2, pageToken: p1.nextPageToken })
      t.same(ids(p2), ['t3', 't2'])
      t.same(await store.list({ owner: 'alice', pageSize: 2, pageToken: p2.nextPageToken }), { tasks: [(await store.get('t1')) as StoredTask], nextPageToken: '' })
      t.same(ids(await store.list({ owner: 'alice', pageSize: 2 })), ['t6', 't5'])
    })

    t.test('a task inserted in any state is listed by it and its context; expired ones leave every filter', async t => {
      const { store, expire, c } = await fresh(t)
      await store.insert(record('a', c.ms, { contextId: 'k' }))
      await store.insert(record('b', c.ms, { contextId: 'k', state: 'input_required' }))
      await store.insert(record('c', c.ms, { contextId: 'k', state: 'completed' }))
      await store.insert(record('d', c.ms, { contextId: 'other', state: 'completed' }))
      await store.insert(record('e', c.ms, { contextId: 'k', owner: 'bob', state: 'completed' }))
      t.same(ids(await store.list({ owner: 'alice', state: 'completed', pageSize: 10 })), ['d', 'c'])
      t.same(ids(await store.list({ owner: 'alice', state: 'input_required', pageSize: 10 })), ['b'])
      t.same(ids(await store.list({ owner: 'alice', contextId: 'k', pageSize: 10 })), ['c', 'b', 'a'])
      t.same(ids(await store.list({ owner: 'alice', contextId: 'k', state: 'completed', pageSize: 10 })), ['c'])
      await expire(['a', 'b', 'c', 'd', 'e'])
      for (const round of [1, 2]) {
        t.same(ids(await store.list({ owner: 'alice', state: 'completed', pageSize: 10 })), [], `round ${round}`)
        t.same(ids(await store.list({ owner: 'alice', contextId: 'k', pageSize: 1 })), ['b'])
        t.same(ids(await store.list({ owner: 'alice', contextId: 'k', state: 'completed', pageSize: 10 })), [])
        t.same(ids(await store.list({ owner: 'bob', contextId: 'k', pageSize: 10 })), [])
      }
      await store.insert(record('f', c.ms, { contextId: 'k', state: 'completed' }))
      t.same(ids(await store.list({ owner: 'alice', contextId: 'k', state: 'completed', pageSize: 10 })), ['f'])
    })

    t.test('sync, when the store has one, is the same store answered at once', async t => {
      const { store, c } = await fresh(t)
      const sync = store.sync
      if (sync === undefined) {
        t.pass('no sync view')
        return
      }
      const r = record('now', c.ms)
      sync.insertNow(r)
      t.same(await store.get('now'), r)
      t.equal(sync.getNow('nope'), null)
      const running = moved(r, 'in_progress')
      t.equal(sync.replaceNow(running), true)
      t.equal(sync.replaceNow(moved(r, 'canceled')), false, 'the compare-and-set holds')
      t.same(sync.getNow('now'), await store.get('now'))
      t.equal(await store.replace(moved(running, 'completed')), true)
      t.equal(sync.getNow('now')?.task.status.state, 'completed')
    })

    t.test('onDelete, when the store has it, hears each task it expires once it has dropped it, and no other', async t => {
      const { store, expire, c } = await fresh(t)
      if (store.onDelete === undefined) {
        t.pass('no onDelete: what hangs off a task expires on its own')
        return
      }
      const heard: string[] = []
      store.onDelete(id => heard.push(id))
      await store.insert(record('live', c.ms))
      await store.insert(record('done', c.ms, { state: 'completed' }))
      await expire(['live', 'done'])
      // A store may drop an expired task lazily: a read of it is the latest it can.
      t.equal(await store.get('done'), null)
      t.ok(await store.get('live'))
      t.same(heard, ['done'])
    })

    // Idempotent sends (`TaskStore`, "Idempotent sends"), when the store has them.
    const claimOf = (taskId: string, at: number, opts: { owner?: string, messageId?: string, hash?: string } = {}): SendClaim =>
      ({ owner: opts.owner ?? 'alice', messageId: opts.messageId ?? 'm-1', taskId, hash: opts.hash ?? 'h1', at })

    t.test('claimSend: of concurrent claims of one key exactly one wins; the others are answered the winner, unchanged', async t => {
      const { store, c } = await fresh(t)
      if (store.claimSend === undefined) return
      const claims = Array.from({ length: 12 }, (_, i) => claimOf(`t ${i}`, c.ms + i))
      const answers = await Promise.all(claims.map(claim => (store.claimSend as Claim)(claim, WINDOW_MS)))
      const won = answers.map((a, i) => a === null ? i : -1).filter(i => i >= 0)
      t.equal(won.length, 1, 'one claim took the key')
      for (const answer of answers) if (answer !== null) t.same(answer, claims[won[0]], 'the others get the winner, task id with its spaces')
      t.same(await store.claimSend(claimOf('later', c.ms), WINDOW_MS), claims[won[0]], 'and so does a later one')
    })

    t.test('claimSend: the key is the owner and the messageId; other owners and other ids claim their own', async t => {
      const { store, c } = await fresh(t)
      if (store.claimSend === undefined) return
      t.equal(await store.claimSend(claimOf('a', c.ms, { owner: 'a:1', messageId: 'm' }), WINDOW_MS), null)
      // Keys that would read alike if owner and id were only joined.
      t.equal(await store.claimSend(claimOf('b', c.ms, { owner: 'a', messageId: ':1m' }), WINDOW_MS), null, 'another owner')
      t.equal(await store.claimSend(claimOf('c', c.ms, { owner: 'a:1', messageId: 'm2' }), WINDOW_MS), null, 'another messageId')
      t.match(await store.claimSend(claimOf('d', c.ms, { owner: 'a:1', messageId: 'm', hash: 'other' }), WINDOW_MS),
        { owner: 'a:1', messageId: 'm', taskId: 'a', hash: 'h1', at: c.ms }, 'the same key, whatever the message: its hash is answered')
    })

    t.test('releaseSend drops a claim only while it holds its key; claimSend over a claim takes it only from that very claim', async t => {
      const { store, c } = await fresh(t)
      if (store.claimSend === undefined || store.releaseSend === undefined) return
      const first = claimOf('t1', c.ms)
      t.equal(await store.claimSend(first, WINDOW_MS), null)
      await store.releaseSend(claimOf('t1', c.ms + 1))
      t.same(await store.claimSend(claimOf('t2', c.ms), WINDOW_MS), first, 'another claim of the key released nothing')
      await store.releaseSend(first)
      const second = claimOf('t2', c.ms + 5)
      t.equal(await store.claimSend(second, WINDOW_MS), null, 'released: the next claim takes the key')
      t.same(await store.claimSend(claimOf('t3', c.ms + 6), WINDOW_MS, first), second, 'over a claim that no longer holds it: refused')
      const third = claimOf('t3', c.ms + 7)
      t.equal(await store.claimSend(third, WINDOW_MS, second), null, 'over the claim that holds it: taken')
      t.same(await store.claimSend(claimOf('t4', c.ms), WINDOW_MS), third)
    })

    t.test('a claim lasts its window: once it has passed, the key is free again', async t => {
      const { store, c } = await fresh(t)
      if (store.claimSend === undefined) return
      t.equal(await store.claimSend(claimOf('t1', c.ms), 40), null)
      const next = claimOf('t2', c.ms)
      // Memory and PostgreSQL count the window on the clock; Redis on its own (PX): waited for.
      c.ms += 1000
      await until(async () => await (store.claimSend as Claim)(next, WINDOW_MS) === null)
      t.same(await store.claimSend(claimOf('t3', c.ms), WINDOW_MS), next, 'the new claim holds the key')
    })

    t.test('ping and close resolve', async t => {
      const { store } = await fresh(t)
      await t.resolves(store.ping())
      await t.resolves(store.close())
    })
  })
}
