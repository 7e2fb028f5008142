// The page tokens of `list` (services/tasks/page-token.ts): each store reads back only its own.
import t from 'tap'
import { decodePageToken, encodePageToken } from '../../../services/tasks/page-token.js'

t.test('a token gives back its sequence to the store that issued it, and to no other', async t => {
  t.equal(decodePageToken('p', encodePageToken('p', '123456789012345678'), 18), '123456789012345678')
  t.equal(decodePageToken('m', encodePageToken('m', 42), 15), '42')
  const refused = { code: -32602, data: 'params.pageToken: is not a token this server issued' }
  for (const token of [encodePageToken('r', 42), encodePageToken('p', '1234567890123456789'), encodePageToken('p', '12a'),
    encodePageToken('p', ''), 'not base64 at all', '']) {
    t.throws(() => decodePageToken('p', token, 18), refused, JSON.stringify(token))
  }
})
