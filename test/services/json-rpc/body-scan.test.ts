import t from 'tap'
import { countItems } from '../../../services/json-rpc/body-scan.js'

t.test('countItems counts objects, arrays, keys and commas outside strings, and nothing inside them', async t => {
  t.equal(countItems('{"a":1}', 100), 2, 'an object and its key')
  t.equal(countItems('[1,2,3]', 100), 3, 'an array of n items counts n')
  t.equal(countItems('{"a":1,"b":[]}', 100), 5, 'an object, two keys, their comma, an empty array')
  t.equal(countItems('{"a":"x:y,[{"}', 100), 2, 'structure inside a string is text')
  t.equal(countItems('{"a\\":1,":"\\\\"}', 100), 2, 'escaped quotes stay inside; an escaped backslash ends before the quote')
  t.equal(countItems('  12 ', 100), 0)
})

t.test('countItems stops just past its bound', async t => {
  t.equal(countItems('[' + '0,'.repeat(1000) + '0]', 10), 11)
})

t.test('countItems reads a string of escapes longer than one step of its expression', async t => {
  t.equal(countItems(`{"a":"${'\\"'.repeat(10_000)},"}`, 100), 2)
  t.equal(countItems(`{"a":"${'\\"'.repeat(10_000)}`, 100), 2, 'a string left open ends the text')
})
