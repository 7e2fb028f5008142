import t from 'tap'
import { parseRfc3339 } from '../../../services/a2a/timestamp.js'

t.test('row 13: an RFC 3339 date-time is read as its instant, offsets, fractions and leap seconds included', async t => {
  t.equal(parseRfc3339('2026-01-01T00:00:00Z'), Date.UTC(2026, 0, 1))
  t.equal(parseRfc3339('2026-01-01t00:00:00z'), Date.UTC(2026, 0, 1), 'lower-case t and z')
  t.equal(parseRfc3339('2026-01-01 00:00:00Z'), Date.UTC(2026, 0, 1), 'a space for the T')
  t.equal(parseRfc3339('2026-01-01T02:30:00+02:30'), Date.UTC(2026, 0, 1))
  t.equal(parseRfc3339('2025-12-31T19:00:00-05:00'), Date.UTC(2026, 0, 1))
  t.equal(parseRfc3339('2026-01-01T00:00:00.123456789Z'), Date.UTC(2026, 0, 1) + 123, 'nanoseconds cut to ms')
  t.equal(parseRfc3339('2026-06-30T23:59:60Z'), Date.UTC(2026, 5, 30, 23, 59, 59, 999), 'a leap second')
  t.equal(parseRfc3339('2024-02-29T00:00:00Z'), Date.UTC(2024, 1, 29), 'a leap day')
  t.equal(parseRfc3339('0001-01-01T00:00:00Z'), -62135596800000, 'a year below 100 is that year')
})

t.test('row 13: anything but an RFC 3339 date-time is refused', async t => {
  for (const text of [
    '-1', '0', 'yesterday', '', '2026', '2026-01-01', '2026-01-01T00:00:00', '2026-01-01T00:00Z',
    '2026-13-01T00:00:00Z', '2026-00-01T00:00:00Z', '2026-01-00T00:00:00Z', '2026-02-30T00:00:00Z', '2025-02-29T00:00:00Z',
    '2026-01-01T24:00:00Z', '2026-01-01T00:60:00Z', '2026-01-01T00:00:61Z', '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00+01:60', '2026-01-01T00:00:00.Z', '2026-01-01T00:00:00+0100', ' 2026-01-01T00:00:00Z'
  ]) {
    t.equal(parseRfc3339(text), undefined, JSON.stringify(text))
  }
})
