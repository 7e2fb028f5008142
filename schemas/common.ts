import { Type } from '@sinclair/typebox'

/** A JSON-RPC request id: string, integer or null (CONTRACT.md §4). */
export const JsonRpcIdSchema = Type.Union([Type.String(), Type.Integer(), Type.Null()])

/** Identifiers chosen by clients (message ids, config ids) and by us (UUIDs). */
export const IdSchema = Type.String({ minLength: 1, maxLength: 256 })

/** Free-form metadata objects: their contents are the client's business. */
export const MetadataSchema = Type.Record(Type.String(), Type.Unknown())

export const NullableMetadataSchema = Type.Union([MetadataSchema, Type.Null()])

/** A string enum as `{ type: 'string', enum }`: one clear validation error, unlike a union of literals. */
export function StringEnum<const T extends readonly string[]> (values: T, opts: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: values, ...opts })
}
