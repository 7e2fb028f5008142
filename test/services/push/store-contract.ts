// The acceptance test of a push config store backend: every backend must pass this suite, which checks the
// obligations of the PushConfigStore contract (the interface's TSDoc, services/push/store.ts) through the interface
// alone. To run it against a new backend, add a test file that calls `pushStoreContract(t, '<name>', makeStore)`:
// `makeStore` gives each case a fresh, empty store and a `cleanup` that releases it (and empties what it wrote).
// memory-store.test.ts and redis-store.test.ts do so; docs/stores.md says more. The optional `holds` and `forget`
// are checked when the store has them. What the suite cannot check (expiry by `ttlSeconds`, StorageUnavailable when
// the backend is down) each backend tests in its own file.
import type { Test } from 'tap'
import type { PushNotificationConfig } from '../../../schemas/push-config.js'
import type { PushConfigStore, PutOptions } from '../../../services/push/store.js'

/** What a contract run needs: a fresh, empty store, and how to release it. */
export type MakeStore = () => Promise<{ store: PushConfigStore, cleanup: () => Promise<void> }>

const MAX = 10
const OPTS: PutOptions = { maxPerTask: MAX }
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const url = (n: number | string) => `https://hooks.example.com/${n}`

/**
 * The one PushConfigStore contract (services/push/store.ts), run against every backend.
 * Each case gets its own store from `makeStore` and releases it when done.
 */
export function pushStoreContract (t: Test, name: string, makeStore: MakeStore): void {
  t.test(`${name}: the push config store contract`, async t => {
    async function fresh (t: Test): Promise<PushConfigStore> {
      const { store, cleanup } = await makeStore()
      t.teardown(cleanup)
      return store
    }

    t.test('the first id-less config of a task gets the id default, later ones UUIDs', async t => {
      const store = await fresh(t)
      const first = await store.put('t1', { url: url(1), token: 'tok' }, OPTS)
      t.same(first, { config: { id: 'default', url: url(1), token: 'tok' }, created: true })
      const second = await store.put('t1', { url: url(2) }, OPTS)
      t.equal(second.created, true)
      t.match(second.config.id, UUID)
      const third = await store.put('t1', { url: url(3) }, OPTS)
      t.match(third.config.id, UUID)
      t.not(third.config.id, second.config.id)
    })

    t.test('a task whose configs all have ids gives its first id-less config a UUID', async t => {
      const store = await fresh(t)
      await store.put('t1', { id: 'mine', url: url(1) }, OPTS)
      const { config } = await store.put('t1', { url: url(2) }, OPTS)
      t.match(config.id, UUID)
    })

    t.test('a new config with its own id is created under that id', async t => {
      const store = await fresh(t)
      t.same(await store.put('t1', { id: 'abc', url: url(1) }, OPTS), { config: { id: 'abc', url: url(1) }, created: true })
      t.same(await store.get('t1', 'abc'), { id: 'abc', url: url(1) })
    })

    t.test('the same id replaces that config in its place', async t => {
      const store = await fresh(t)
      await store.put('t1', { id: 'a', url: url(1), token: 'old' }, OPTS)
      await store.put('t1', { id: 'b', url: url(2) }, OPTS)
      const replaced = await store.put('t1', { id: 'a', url: url(3) }, OPTS)
      t.same(replaced, { config: { id: 'a', url: url(3) }, created: false })
      // The whole config is replaced: the old token is gone.
      t.same(await store.list('t1'), [{ id: 'a', url: url(3) }, { id: 'b', url: url(2) }])
    })

    t.test('the same url without an id replaces that config and keeps its id', async t => {
      const store = await fresh(t)
      const first = await store.put('t1', { url: url(1), token: 'old' }, OPTS)
      await store.put('t1', { id: 'x', url: url(2) }, OPTS)
      const again = await store.put('t1', { url: url(2), token: 'new' }, OPTS)
      t.same(again, { config: { id: 'x', url: url(2), token: 'new' }, created: false })
      const firstAgain = await store.put('t1', { url: url(1) }, OPTS)
      t.same(firstAgain, { config: { id: first.config.id, url: url(1) }, created: false })
      t.same(await store.list('t1'), [{ id: 'default', url: url(1) }, { id: 'x', url: url(2), token: 'new' }])
    })

    t.test('a different url without an id adds a config', async t => {
      const store = await fresh(t)
      await store.put('t1', { url: url(1) }, OPTS)
      const added = await store.put('t1', { url: url(2) }, OPTS)
      t.equal(added.created, true)
      t.equal((await store.list('t1')).length, 2)
    })

    t.test('list is in creation order, and a replacement keeps its place', async t => {
      const store = await fresh(t)
      t.same(await store.list('t1'), [])
      const ids: string[] = []
      for (let n = 0; n < 5; n++) ids.push((await store.put('t1', { url: url(n) }, OPTS)).config.id)
      await store.put('t1', { url: url(0), token: 'again' }, OPTS)
      await store.put('t1', { id: ids[2], url: url('two') }, OPTS)
      const list = await store.list('t1')
      t.same(list.map(c => c.id), ids)
      t.same(list.map(c => c.url), [url(0), url(1), url('two'), url(3), url(4)])
      t.equal(list[0].token, 'again')
    })

    t.test('latest is the config of the last put, whether it created or replaced', async t => {
      const store = await fresh(t)
      t.equal(await store.latest('t1'), null)
      await store.put('t1', { id: 'a', url: url(1) }, OPTS)
      t.same(await store.latest('t1'), { id: 'a', url: url(1) })
      await store.put('t1', { id: 'b', url: url(2) }, OPTS)
      t.same(await store.latest('t1'), { id: 'b', url: url(2) })
      await store.put('t1', { id: 'a', url: url(3) }, OPTS)
      t.same(await store.latest('t1'), { id: 'a', url: url(3) })
      await store.put('t1', { url: url(2), token: 'tok' }, OPTS)
      t.same(await store.latest('t1'), { id: 'b', url: url(2), token: 'tok' })
    })

    t.test('a task holds at most maxPerTask configs; the next new one is refused and nothing changes', async t => {
      const store = await fresh(t)
      for (let n = 0; n < MAX; n++) await store.put('t1', { url: url(n) }, OPTS)
      const before = await store.list('t1')
      const latest = await store.latest('t1')
      t.equal(before.length, MAX)
      await t.rejects(store.put('t1', { url: url('extra') }, OPTS), {
        code: 'A2A_ERR_PUSH_CONFIG_LIMIT',
        message: `Task t1 already has ${MAX} push configs`
      })
      await t.rejects(store.put('t1', { id: 'new-id', url: url(0) }, OPTS), { code: 'A2A_ERR_PUSH_CONFIG_LIMIT' })
      t.same(await store.list('t1'), before)
      t.same(await store.latest('t1'), latest)
      t.equal(await store.get('t1', 'new-id'), null)

      // Replacing still works at the limit, by id and by url.
      const byId = await store.put('t1', { id: before[3].id, url: url('three') }, OPTS)
      t.same(byId, { config: { id: before[3].id, url: url('three') }, created: false })
      const byUrl = await store.put('t1', { url: url(5), token: 'five' }, OPTS)
      t.same(byUrl, { config: { id: before[5].id, url: url(5), token: 'five' }, created: false })
      t.equal((await store.list('t1')).length, MAX)
    })

    t.test('the limit is the one passed to put', async t => {
      const store = await fresh(t)
      await store.put('t1', { url: url(1) }, { maxPerTask: 1 })
      await t.rejects(store.put('t1', { url: url(2) }, { maxPerTask: 1 }), {
        code: 'A2A_ERR_PUSH_CONFIG_LIMIT',
        message: 'Task t1 already has 1 push configs'
      })
      t.equal((await store.put('t1', { url: url(2) }, { maxPerTask: 2 })).created, true)
    })

    t.test('get answers null for an unknown task or config id', async t => {
      const store = await fresh(t)
      t.equal(await store.get('nope', 'default'), null)
      await store.put('t1', { url: url(1) }, OPTS)
      t.equal(await store.get('t1', 'other'), null)
      t.same(await store.get('t1', 'default'), { id: 'default', url: url(1) })
    })

    t.test('remove says whether the config existed', async t => {
      const store = await fresh(t)
      t.equal(await store.remove('nope', 'default'), false)
      await store.put('t1', { id: 'a', url: url(1) }, OPTS)
      await store.put('t1', { id: 'b', url: url(2) }, OPTS)
      t.equal(await store.remove('t1', 'zzz'), false)
      t.equal(await store.remove('t1', 'a'), true)
      t.equal(await store.remove('t1', 'a'), false)
      t.equal(await store.get('t1', 'a'), null)
      t.same(await store.list('t1'), [{ id: 'b', url: url(2) }])
    })

    t.test('removing the latest makes latest the config put before it; removing another leaves it', async t => {
      const store = await fresh(t)
      await store.put('t1', { id: 'a', url: url(1) }, OPTS)
      await store.put('t1', { id: 'b', url: url(2) }, OPTS)
      await store.put('t1', { id: 'c', url: url(3) }, OPTS)
      await store.put('t1', { id: 'a', url: url(1), token: 'again' }, OPTS)
      t.equal((await store.latest('t1'))?.id, 'a')
      await store.remove('t1', 'b')
      t.equal((await store.latest('t1'))?.id, 'a')
      await store.remove('t1', 'a')
      t.same(await store.latest('t1'), { id: 'c', url: url(3) })
      await store.remove('t1', 'c')
      t.equal(await store.latest('t1'), null)
    })

    t.test('after every config is removed, an id-less put gets default again', async t => {
      const store = await fresh(t)
      const first = await store.put('t1', { url: url(1) }, OPTS)
      const second = await store.put('t1', { url: url(2) }, OPTS)
      await store.remove('t1', first.config.id)
      await store.remove('t1', second.config.id)
      t.same(await store.list('t1'), [])
      t.equal(await store.latest('t1'), null)
      t.same(await store.put('t1', { url: url(3) }, OPTS), { config: { id: 'default', url: url(3) }, created: true })
    })

    t.test('credentials are stored and returned: stripping them is for the methods', async t => {
      const store = await fresh(t)
      const config: PushNotificationConfig = {
        url: url(1), token: 'tok', authentication: { schemes: ['Bearer'], credentials: 'secret' }
      }
      const expected = { id: 'default', ...config }
      t.same((await store.put('t1', config, OPTS)).config, expected)
      t.same(await store.get('t1', 'default'), expected)
      t.same(await store.latest('t1'), expected)
      t.same(await store.list('t1'), [expected])
      // An empty schemes list survives the round trip as an array.
      await store.put('t1', { id: 'e', url: url(2), authentication: { schemes: [] } }, OPTS)
      t.same(await store.get('t1', 'e'), { id: 'e', url: url(2), authentication: { schemes: [] } })
    })

    t.test('no object handed in or out can change what is stored', async t => {
      const store = await fresh(t)
      const input: PushNotificationConfig = { url: url(1), authentication: { schemes: ['Bearer'], credentials: 's' } }
      const put = await store.put('t1', input, OPTS)
      input.url = url('changed')
      input.authentication!.schemes.push('ApiKey')
      put.config.token = 'injected'
      ;(await store.get('t1', 'default'))!.authentication!.schemes.push('x')
      ;(await store.latest('t1'))!.url = url('latest')
      ;(await store.list('t1'))[0].authentication!.credentials = 'changed'
      t.same(await store.get('t1', 'default'), {
        id: 'default', url: url(1), authentication: { schemes: ['Bearer'], credentials: 's' }
      })
    })

    t.test('tasks are isolated from each other', async t => {
      const store = await fresh(t)
      await store.put('t1', { url: url(1) }, OPTS)
      const other = await store.put('t2', { url: url(1) }, OPTS)
      t.same(other, { config: { id: 'default', url: url(1) }, created: true })
      await store.put('t2', { id: 'only-t2', url: url(2) }, OPTS)
      t.equal(await store.get('t1', 'only-t2'), null)
      t.equal(await store.remove('t1', 'only-t2'), false)
      await store.remove('t2', 'default')
      t.same(await store.list('t1'), [{ id: 'default', url: url(1) }])
      t.same(await store.latest('t1'), { id: 'default', url: url(1) })
      t.same(await store.list('t2'), [{ id: 'only-t2', url: url(2) }])
    })

    t.test('a config with an id is created under it, even with the url of a config stored under another id', async t => {
      const store = await fresh(t)
      await store.put('t1', { url: url(1) }, OPTS)
      t.same(await store.put('t1', { id: 'second', url: url(1) }, OPTS), { config: { id: 'second', url: url(1) }, created: true })
      t.same(await store.list('t1'), [{ id: 'default', url: url(1) }, { id: 'second', url: url(1) }])
    })

    t.test('a config removed and put again goes to the end of the creation order', async t => {
      const store = await fresh(t)
      for (const id of ['a', 'b', 'c']) await store.put('t1', { id, url: url(id) }, OPTS)
      await store.remove('t1', 'a')
      t.equal((await store.put('t1', { id: 'a', url: url('again') }, OPTS)).created, true)
      t.same((await store.list('t1')).map(c => c.id), ['b', 'c', 'a'])
      t.same(await store.latest('t1'), { id: 'a', url: url('again') })
    })

    t.test('every field of a config is kept as given, version included; a replacement without one drops it', async t => {
      const store = await fresh(t)
      // The push service stores `version: '1.0'` with a config made through a v1.0 method.
      const made = { url: url(1), token: 'tok', version: '1.0' as const }
      t.same(await store.put('t1', made, OPTS), { config: { id: 'default', ...made }, created: true })
      t.same(await store.get('t1', 'default'), { id: 'default', ...made })
      t.same(await store.latest('t1'), { id: 'default', ...made })
      t.same(await store.list('t1'), [{ id: 'default', ...made }])
      await store.put('t1', { id: 'default', url: url(1) }, OPTS)
      t.same(await store.get('t1', 'default'), { id: 'default', url: url(1) })
    })

    t.test('concurrent puts never pass the limit, and exactly one id-less config gets default', async t => {
      const store = await fresh(t)
      const results = await Promise.allSettled(Array.from({ length: MAX + 5 }, (_, n) => store.put('t1', { url: url(n) }, OPTS)))
      const created = results.flatMap(r => r.status === 'fulfilled' ? [r.value.config.id] : [])
      const refused = results.flatMap(r => r.status === 'rejected' ? [r.reason] : [])
      t.equal(created.length, MAX)
      t.equal(refused.length, 5)
      for (const err of refused) t.match(err, { code: 'A2A_ERR_PUSH_CONFIG_LIMIT' })
      t.equal(created.filter(id => id === 'default').length, 1)
      t.equal(new Set(created).size, MAX, 'ids are distinct')
      t.same((await store.list('t1')).map(c => c.id).sort(), [...created].sort())
    })

    t.test('holds, when the store has it, says at once whether a task has a config', async t => {
      const store = await fresh(t)
      if (store.holds === undefined) {
        t.pass('no holds: the notifier lists the task\'s configs')
        return
      }
      t.equal(store.holds('t1'), false)
      const { config } = await store.put('t1', { url: url(1) }, OPTS)
      await store.put('t2', { url: url(2) }, OPTS)
      t.equal(store.holds('t1'), true)
      await store.remove('t1', config.id)
      t.equal(store.holds('t1'), false, 'none left')
      t.equal(store.holds('t2'), true)
    })

    t.test('forget, when the store has it, drops every config of that task and of no other', async t => {
      const store = await fresh(t)
      if (store.forget === undefined) {
        t.pass('no forget: configs expire by ttlSeconds')
        return
      }
      await store.put('t1', { url: url(1) }, OPTS)
      await store.put('t1', { url: url(2) }, OPTS)
      await store.put('t2', { url: url(3) }, OPTS)
      store.forget('t1')
      store.forget('never-seen')
      t.same(await store.list('t1'), [])
      t.equal(await store.latest('t1'), null)
      t.equal(await store.get('t1', 'default'), null)
      t.same(await store.list('t2'), [{ id: 'default', url: url(3) }])
      t.same((await store.put('t1', { url: url(4) }, OPTS)).config.id, 'default', 'the task starts afresh')
    })

    t.test('ping and close resolve', async t => {
      const store = await fresh(t)
      await t.resolves(store.ping())
      await t.resolves(store.close())
    })
  })
}
