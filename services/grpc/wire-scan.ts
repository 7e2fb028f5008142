import protobuf from 'protobufjs'

/*
 * One pass over a gRPC request's bytes before protobufjs decodes them, for the limit that decoding itself would
 * break (`tasks.max_keys`, issue 39 row 4): a SendMessage whose data part carried 400,000 keys (8.7 MB) was refused
 * only after its decode and its ProtoJSON, which blocked the event loop 1,035 ms (2-core machine, 2026-11-27). This
 * pass reads tags and lengths only, allocates nothing, and stops just past its bound.
 */

/**
 * An upper bound of the object keys and array items the ProtoJSON of a `type` message in `bytes` carries, counted up
 * to `max`: more than `max` returns `max + 1`. Each field on the wire counts one (a key, or an item of a repeated
 * field), a map entry one, and a packed field one per byte; a `google.protobuf.Value` counts its kind's field as one
 * more, so a Struct of n keys counts 2n: the count is at most twice the real one, plus one per message. Bytes that
 * are not the message end the count where they stop making sense; decoding then refuses them.
 */
export function wireItems (type: protobuf.Type, bytes: Uint8Array, max: number): number {
  const reader = protobuf.Reader.create(bytes)
  let items = 0
  /** The fields of a `t` message up to `end`; false once past `max`. */
  const scan = (t: protobuf.Type, end: number): boolean => {
    while (reader.pos < end) {
      const tag = reader.uint32()
      const field = t.fieldsById[tag >>> 3] as protobuf.Field | undefined
      if ((tag & 7) !== 2) {
        reader.skipType(tag & 7)
        items++
      } else {
        const length = reader.uint32()
        const stop = reader.pos + length
        if (stop > end) return true
        const inner = field?.resolvedType
        if (field instanceof protobuf.MapField) {
          items++
          if (inner instanceof protobuf.Type && !entry(inner, stop)) return false
        } else if (inner instanceof protobuf.Type) {
          items++
          if (items > max || !scan(inner, stop)) return false
        } else {
          // A packed repeated scalar has at least one byte an item; a string or bytes is one.
          items += field !== undefined && field.repeated && field.type !== 'string' && field.type !== 'bytes' ? length : 1
        }
        reader.pos = stop
      }
      if (items > max) return false
    }
    return true
  }
  /** A map entry up to `end`: its key (field 1) is not counted, its message value (field 2) is scanned. */
  const entry = (value: protobuf.Type, end: number): boolean => {
    while (reader.pos < end) {
      const tag = reader.uint32()
      if (tag === (2 << 3 | 2)) {
        const length = reader.uint32()
        const stop = reader.pos + length
        if (stop > end) return true
        if (!scan(value, stop)) return false
        reader.pos = stop
      } else {
        reader.skipType(tag & 7)
      }
    }
    return true
  }
  try {
    scan(type, bytes.length)
  } catch {
    // Not the message (a length past the end, a bad wire type): decoding says so.
  }
  return Math.min(items, max + 1)
}
