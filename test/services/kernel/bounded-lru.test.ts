import t from 'tap'
import { boundedLru } from '../../../services/kernel/bounded-lru.js'

t.test('a bounded LRU keeps at most max entries and drops the least recently used first', async t => {
  const cache = boundedLru<string, number>(3)
  cache.set('a', 1)
  cache.set('b', 2)
  cache.set('c', 3)
  t.equal(cache.get('a'), 1, 'a read makes a the most recently used')
  cache.set('d', 4)
  t.equal(cache.size, 3)
  t.notOk(cache.has('b'), 'b, the least recently used, went first')
  t.same([...cache.keys()], ['d', 'a', 'c'], 'most recently used first')
  cache.set('a', 5)
  t.equal(cache.size, 3, 'a key set again takes no second slot')
  t.equal(cache.get('a'), 5)
})

t.test('an empty bounded LRU of 100,000 keys takes memory as it fills, not up front', async t => {
  const before = process.memoryUsage()
  const caches = Array.from({ length: 20 }, () => boundedLru<string, number>(100_000))
  const after = process.memoryUsage()
  const grown = (after.heapUsed - before.heapUsed) + (after.arrayBuffers - before.arrayBuffers)
  // lru-cache's `max` would take 2.7 MiB each: 54 MiB for these 20.
  t.ok(grown < 20 * 256 * 1024, `20 empty caches took ${Math.round(grown / 1024)} KiB, under 256 KiB each`)
  t.equal(caches.length, 20)
})
