// A large answer made a piece a turn (services/json-rpc/answer-json.ts): the same JSON as JSON.stringify, whole.
import t from 'tap'
import { PIECE, jsonPieces, largerThan } from '../../../services/json-rpc/answer-json.js'

const joined = async (value: unknown): Promise<string> => Buffer.concat(await jsonPieces(value)).toString('utf8')

t.test('jsonPieces writes what JSON.stringify writes, for every kind of value', async t => {
  const value = {
    text: 'plain "quoted" \\ \n\u0001 漢 😀',
    numbers: [0, -1.5, 1e21, NaN, Infinity],
    flags: [true, false, null],
    left: undefined,
    fn: () => 1,
    sym: Symbol('s'),
    list: [undefined, () => 1, Symbol('s'), { a: [] }, []],
    at: new Date(0),
    own: { toJSON: () => ({ made: 'by toJSON' }) },
    nested: { deep: { deeper: [{ k: 'v' }] } },
    empty: {}
  }
  t.equal(await joined(value), JSON.stringify(value))
  t.equal(await joined('top'), JSON.stringify('top'))
  t.equal(await joined(null), 'null')
})

t.test('jsonPieces writes strings longer than a piece whole, escapes and surrogate pairs included', async t => {
  // A surrogate pair straddles the first slice's end: it must not be cut into two escaped halves.
  const pair = 'a'.repeat(PIECE - 1) + '😀' + 'b'.repeat(10)
  const escapes = '\n"\\'.repeat(PIECE)
  const value = { history: [{ parts: [{ text: pair }, { text: escapes }] }], artifacts: [{ parts: [{ text: '漢'.repeat(PIECE + 3) }] }] }
  const pieces = await jsonPieces(value)
  t.ok(pieces.length > 3, `made in ${pieces.length} pieces`)
  t.equal(Buffer.concat(pieces).toString('utf8'), JSON.stringify(value))
})

t.test('largerThan counts strings, keys and other values, and stops once past its limit', async t => {
  t.equal(largerThan({ a: 'xyz' }, 100), false)
  t.equal(largerThan({ a: 'x'.repeat(101) }, 100), true)
  t.equal(largerThan(Array.from({ length: 30 }, () => 1), 100), true, '4 for a number')
  t.equal(largerThan([{ [('k').repeat(97)]: null }], 100), true, 'a key counts its name and 4, and its value')
  t.equal(largerThan([null, 'x'], 100), false)
})
