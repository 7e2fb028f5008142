// Webhook host lookups, bounded (services/push/host-lookups.ts). The resolver here is one the test answers by hand,
// standing in for a DNS server that does not answer; the last test uses the system's.
import type { LookupAddress } from 'node:dns'
import t from 'tap'
import { createHostLookups } from '../../../services/push/host-lookups.js'
import { until } from '../../helper.js'

/** A resolver whose every lookup waits until the test answers it. */
function heldResolver () {
  const held = new Map<string, Array<{ answer: (addresses: LookupAddress[]) => void, fail: (err: Error) => void }>>()
  let calls = 0
  let running = 0
  let most = 0
  const lookup = async (hostname: string): Promise<LookupAddress[]> => {
    calls++
    running++
    most = Math.max(most, running)
    try {
      return await new Promise<LookupAddress[]>((resolve, reject) => {
        held.set(hostname, [...(held.get(hostname) ?? []), { answer: resolve, fail: reject }])
      })
    } finally {
      running--
    }
  }
  const answer = (hostname: string, address = '192.0.2.1'): void => {
    for (const call of held.get(hostname) ?? []) call.answer([{ address, family: 4 }])
    held.delete(hostname)
  }
  const fail = (hostname: string, code: string): void => {
    for (const call of held.get(hostname) ?? []) call.fail(Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code }))
    held.delete(hostname)
  }
  return { lookup, answer, fail, calls: () => calls, most: () => most, held: () => [...held.keys()] }
}

const codeOf = async (promise: Promise<unknown>): Promise<string | undefined> =>
  await promise.then(() => undefined, (err: NodeJS.ErrnoException) => err.code)

t.test('200 deliveries to one name at once make one lookup, and all get its answer', async t => {
  const resolver = heldResolver()
  const lookups = createHostLookups({ lookup: resolver.lookup })
  const all = Array.from({ length: 200 }, () => lookups.resolve('hooks.example.com'))
  t.equal(resolver.calls(), 1)
  resolver.answer('hooks.example.com')
  for (const addresses of await Promise.all(all)) t.same(addresses, [{ address: '192.0.2.1', family: 4 }])
  t.equal(lookups.inFlight, 0)
})

t.test('names that are never answered hold at most two lookups; the rest wait, and past maxWaiting are refused at once', async t => {
  const resolver = heldResolver()
  const lookups = createHostLookups({ lookup: resolver.lookup, maxWaiting: 5 })
  const names = Array.from({ length: 10 }, (_, i) => `n${i}.example.com`)
  const results = names.map(name => codeOf(lookups.resolve(name)))
  t.equal(lookups.inFlight, 2, 'two run')
  t.equal(lookups.waiting, 5, 'five wait')
  t.same(await Promise.all(results.slice(7)), ['EAI_AGAIN', 'EAI_AGAIN', 'EAI_AGAIN'], 'the others are refused at once')
  t.same(resolver.held(), ['n0.example.com', 'n1.example.com'])
  resolver.answer('n0.example.com')
  await until(() => resolver.held().includes('n2.example.com'))
  t.equal(await results[0], undefined, 'answered')
  t.equal(lookups.inFlight, 2, 'the place freed went to the next in line')
  t.equal(resolver.most(), 2, 'never more than two at once')
  lookups.close()
  t.same(await Promise.all(results.slice(3, 7)), ['ECANCELLED', 'ECANCELLED', 'ECANCELLED', 'ECANCELLED'], 'close refuses what waits')
  t.equal(await codeOf(lookups.resolve('n0.example.com')), 'ECANCELLED', 'and what comes after')
  resolver.answer('n1.example.com')
  resolver.answer('n2.example.com')
})

t.test('a caller waits at most timeoutMs; a lookup given up on keeps its place until it ends; one nobody waits for leaves the line', async t => {
  const resolver = heldResolver()
  const lookups = createHostLookups({ lookup: resolver.lookup, timeoutMs: 50 })
  // (The lookups' timers do not keep a process alive, and the held resolver has nothing that does: this does.)
  const alive = setInterval(() => {}, 1000)
  t.teardown(() => clearInterval(alive))
  const first = codeOf(lookups.resolve('a.example.com'))
  const second = codeOf(lookups.resolve('b.example.com'))
  const third = codeOf(lookups.resolve('c.example.com'))
  t.same(await Promise.all([first, second, third]), ['ETIMEOUT', 'ETIMEOUT', 'ETIMEOUT'])
  t.equal(lookups.inFlight, 2, 'the two started lookups still hold their threads')
  t.equal(lookups.waiting, 0, 'the one nobody waits for left the line')
  resolver.answer('a.example.com')
  await until(() => lookups.inFlight === 1)
  t.same(resolver.held(), ['b.example.com'], 'c was never looked up')
  const later = lookups.resolve('a.example.com')
  t.equal(resolver.calls(), 3, 'a later caller looks up again')
  resolver.answer('a.example.com')
  t.same(await later, [{ address: '192.0.2.1', family: 4 }])
  resolver.answer('b.example.com')
})

t.test('a name that does not exist is remembered for negativeTtlMs; other failures are not', async t => {
  const resolver = heldResolver()
  let clock = 0
  const lookups = createHostLookups({ lookup: resolver.lookup, negativeTtlMs: 5000, now: () => clock })
  const missing = codeOf(lookups.resolve('gone.example.com'))
  resolver.fail('gone.example.com', 'ENOTFOUND')
  t.equal(await missing, 'ENOTFOUND')
  t.equal(await codeOf(lookups.resolve('gone.example.com')), 'ENOTFOUND', 'refused from memory')
  t.equal(resolver.calls(), 1, 'with no second lookup')
  clock = 5001
  const again = codeOf(lookups.resolve('gone.example.com'))
  t.equal(resolver.calls(), 2, 'looked up again once the time is up')
  resolver.answer('gone.example.com')
  t.equal(await again, undefined, 'and found this time')
  const refused = codeOf(lookups.resolve('flaky.example.com'))
  resolver.fail('flaky.example.com', 'EAI_AGAIN')
  t.equal(await refused, 'EAI_AGAIN')
  const retried = lookups.resolve('flaky.example.com')
  t.equal(resolver.calls(), 4, 'a temporary failure is not remembered')
  resolver.answer('flaky.example.com')
  await retried
})

t.test('by default the system resolver answers, the hosts file included', async t => {
  const lookups = createHostLookups()
  const addresses = await lookups.resolve('localhost')
  t.ok(addresses.some(a => a.address === '127.0.0.1' || a.address === '::1'), JSON.stringify(addresses))
  lookups.close()
})
