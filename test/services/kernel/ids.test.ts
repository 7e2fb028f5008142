import t from 'tap'
import { newId } from '../../../services/kernel/ids.js'

/** A version 4 UUID: version nibble 4, variant bits 10. */
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('ids are version 4 UUIDs, all different, across many refills of the random pool', async t => {
  const seen = new Set<string>()
  let malformed = 0
  for (let i = 0; i < 20_000; i++) {
    const id = newId()
    if (!UUID_V4.test(id)) malformed++
    seen.add(id)
  }
  t.equal(malformed, 0)
  t.equal(seen.size, 20_000)
})

t.test('every hex digit position takes every value: the bytes are random, not a counter', async t => {
  // 4,000 ids: a digit that never varies would show up as a position with fewer than 16 distinct values.
  const ids = Array.from({ length: 4000 }, () => newId().replaceAll('-', ''))
  const fixed = [12, 16] // the version digit (always 4) and the variant digit (8, 9, a or b)
  for (let at = 0; at < 32; at++) {
    const values = new Set(ids.map(id => id[at]))
    if (at === 12) t.same([...values], ['4'], 'the version digit')
    else if (at === 16) t.same([...values].sort(), ['8', '9', 'a', 'b'], 'the variant digit')
    else if (!fixed.includes(at) && values.size !== 16) t.fail(`digit ${at} took only ${values.size} values`)
  }
  t.pass('every other digit took all 16 values')
})
