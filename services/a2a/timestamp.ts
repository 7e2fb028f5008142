// RFC 3339 timestamps (section 5.6, `date-time`), as the v1.0 protocol's `google.protobuf.Timestamp` in JSON.
// `Date.parse` is no check: it takes "-1", "2026" or "2026-02-30T00:00:00Z" (as 2 March).

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

/** The instant an RFC 3339 `date-time` names, in ms since the epoch; undefined when it is not one. */
export function parseRfc3339 (text: string): number | undefined {
  const m = DATE_TIME.exec(text)
  if (m === null) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number)
  const offsetHours = m[10] === undefined ? 0 : Number(m[10])
  const offsetMinutes = m[11] === undefined ? 0 : Number(m[11])
  // A leap second (60) is allowed at the end of any minute; it is read as that minute's last millisecond.
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) {
    return undefined
  }
  const date = new Date(0)
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  date.setUTCFullYear(year, month - 1, day)
  if (date.getUTCDate() !== day) return undefined
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000)
  date.setUTCHours(hour, minute, Math.min(second, 59), second === 60 ? 999 : fraction)
  const sign = m[9] === '-' ? -1 : 1
  return date.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000
}
