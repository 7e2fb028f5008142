import protobuf from 'protobufjs'

// ProtoJSON for the gRPC binding (docs/protocol.md, "The gRPC binding"): a gRPC request becomes the ProtoJSON params the
// binding's methods already take, and their ProtoJSON answers become protobuf again. protobufjs reads and writes the
// wire; what its objects do not share with ProtoJSON is mapped here, from the loaded types: `Timestamp` is an RFC 3339
// string, `Struct`/`Value`/`ListValue` are plain JSON, `Empty` is `{}`, 64-bit integers and enum names are strings,
// bytes are base64, and a field's `json_name` is its key. Each type's plan is made once, at its first use.
// Answers are encoded from the mapped plain objects, not from `fromObject`'s copy of them as protobufjs messages:
// protobufjs' `encode` takes plain objects whose enums are numbers, and reads 64-bit integers from strings and bytes
// from base64 itself. The copy was a third object tree per answer; the garbage collector was the largest part of what
// a gRPC SendMessage cost over its JSON-RPC twin (19 of 122 µs more, CPU profiles of 2026-11-28).

type Json = Record<string, unknown>

/** A plain object as protobufjs' `encode` takes it. */
type ProtoObject = Record<string, unknown>

const TIMESTAMP = '.google.protobuf.Timestamp'
const STRUCT = '.google.protobuf.Struct'
const VALUE = '.google.protobuf.Value'
const LIST_VALUE = '.google.protobuf.ListValue'

/** What a field holds, as far as the mapping goes. */
type Kind = 'scalar' | 'int64' | 'bytes' | 'float' | 'enum' | 'timestamp' | 'struct' | 'value' | 'list' | 'message'

interface FieldPlan {
  /** The protobufjs (camelCase) name. */
  readonly name: string
  /** The ProtoJSON key: the field's `json_name`, else its camelCase name. */
  readonly key: string
  readonly kind: Kind
  readonly repeated: boolean
  readonly map: boolean
  /** The message type of a `message` field. */
  readonly type?: protobuf.Type
  /** The enum of an `enum` field: its names by number, and its numbers by name. */
  readonly values?: Readonly<Record<number, string>>
  readonly numbers?: Readonly<Record<string, number>>
  /** A scalar without presence (not in a oneof, not `optional`): its default value is not written (ProtoJSON). */
  readonly implicit: boolean
}

interface TypePlan {
  readonly fields: readonly FieldPlan[]
  /** Fields that writing has to map (JSON → protobufjs); others are taken as they are. */
  readonly mapped: readonly FieldPlan[]
}

/** A request that could not be read: the handler answers INVALID_ARGUMENT with this reason. */
export class Undecodable {
  constructor (readonly reason: string) {}
}

const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64'])

export class ProtoCodec {
  readonly #root: protobuf.Root
  readonly #plans = new Map<protobuf.Type, TypePlan>()

  constructor (root: protobuf.Root) {
    this.#root = root
  }

  type (name: string): protobuf.Type {
    return this.#root.lookupType(name)
  }

  /** The request and response types of a service's RPC. */
  method (service: string, rpc: string): { request: protobuf.Type, response: protobuf.Type } {
    const method = this.#root.lookupService(service).methods[rpc]
    method.resolve()
    return { request: method.resolvedRequestType as protobuf.Type, response: method.resolvedResponseType as protobuf.Type }
  }

  /** Reads a message of `type` from the wire as ProtoJSON; an unreadable one is an `Undecodable`, never a throw. */
  read (type: protobuf.Type, bytes: Buffer): Json | Undecodable {
    let message: protobuf.Message
    try {
      message = type.decode(bytes)
    } catch (err) {
      return new Undecodable(`the request is not a ${type.fullName.slice(1)} message: ${(err as Error).message}`)
    }
    return this.toJson(type, message)
  }

  /**
   * Writes a ProtoJSON object as a message of `type`. The Buffer is a view of the bytes protobufjs wrote, not a copy:
   * copying the 33 MB answer to a 16 MiB text message took 22 ms of the 65 its writing took (2026-11-27).
   */
  write (type: protobuf.Type, json: unknown): Buffer {
    const object = this.fromJson(type, (json ?? {}) as Json)
    const bytes = type.encode(object).finish()
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  /** A decoded message as ProtoJSON: only the fields it carries, each in its JSON form. */
  toJson (type: protobuf.Type, message: protobuf.Message | ProtoObject): Json {
    const out: Json = {}
    const source = message as unknown as ProtoObject
    for (const field of this.#plan(type).fields) {
      // proto3 defaults live on the prototype: a field the message carries is its own. Lists and maps are always
      // own (the constructor makes them), and written only when they have entries.
      if (!Object.hasOwn(source, field.name)) continue
      const value = source[field.name]
      if (field.map) {
        const keys = Object.keys(value as ProtoObject)
        if (keys.length === 0) continue
        const entries: Json = {}
        for (const key of keys) entries[key] = this.#valueToJson(field, (value as ProtoObject)[key])
        out[field.key] = entries
      } else if (field.repeated) {
        const items = value as unknown[]
        if (items.length === 0) continue
        const list = new Array(items.length)
        for (let i = 0; i < items.length; i++) list[i] = this.#valueToJson(field, items[i])
        out[field.key] = list
      } else if (!(field.implicit && isDefault(value, field.kind))) {
        out[field.key] = this.#valueToJson(field, value)
      }
    }
    return out
  }

  /** A ProtoJSON object as `encode` takes it: the mapped fields converted, the rest as they are. */
  fromJson (type: protobuf.Type, json: Json): ProtoObject {
    const plan = this.#plan(type)
    if (plan.mapped.length === 0) return json
    const out: ProtoObject = { ...json }
    for (const field of plan.mapped) {
      if (field.key !== field.name) delete out[field.key]
      const value = json[field.key]
      if (value === undefined || value === null) continue
      if (field.map) {
        const entries: ProtoObject = {}
        for (const key of Object.keys(value as Json)) entries[key] = this.#valueFromJson(field, (value as Json)[key])
        out[field.name] = entries
      } else if (field.repeated) {
        const items = (value as unknown[]).map(item => this.#valueFromJson(field, item))
        out[field.name] = field.kind === 'enum' ? items.filter(item => item !== undefined) : items
      } else {
        const mapped = this.#valueFromJson(field, value)
        // An enum name the enum does not have: not written, as `fromObject` leaves such a field unset.
        if (mapped === undefined) delete out[field.name]
        else out[field.name] = mapped
      }
    }
    return out
  }

  #valueToJson (field: FieldPlan, value: unknown): unknown {
    switch (field.kind) {
      case 'scalar': return value
      case 'int64': return String(value)
      case 'bytes': return Buffer.from(value as Uint8Array).toString('base64')
      case 'float': return Number.isFinite(value) ? value : String(value)
      case 'enum': return (field.values as Readonly<Record<number, string>>)[value as number] ?? value
      case 'timestamp': return timestampToJson(value as ProtoObject)
      case 'struct': return structToJson(value as ProtoObject)
      case 'value': return valueToJson(value as ProtoObject)
      case 'list': return listToJson(value as ProtoObject)
      case 'message': return this.toJson(field.type as protobuf.Type, value as ProtoObject)
    }
  }

  #valueFromJson (field: FieldPlan, value: unknown): unknown {
    switch (field.kind) {
      case 'timestamp': return timestampFromJson(value as string)
      case 'struct': return structFromJson(value as Json)
      case 'value': return valueFromJson(value)
      case 'list': return listFromJson(value as unknown[])
      case 'message': return this.fromJson(field.type as protobuf.Type, value as Json)
      case 'enum': {
        // A name the enum does not have is undefined: the field is then not written.
        const numbers = field.numbers as Readonly<Record<string, number>>
        return typeof value !== 'string' ? value : Object.hasOwn(numbers, value) ? numbers[value] : undefined
      }
      // A scalar under a json_name of its own.
      default: return value
    }
  }

  #plan (type: protobuf.Type): TypePlan {
    let plan = this.#plans.get(type)
    if (plan !== undefined) return plan
    // Set before the fields are walked: a type that holds itself (directly or not) finds its plan.
    const fields: FieldPlan[] = []
    const mapped: FieldPlan[] = []
    plan = { fields, mapped }
    this.#plans.set(type, plan)
    for (const field of type.fieldsArray) {
      field.resolve()
      const jsonName = (field.options as { json_name?: string } | undefined)?.json_name
      const described = describe(field)
      const implicit = field.partOf === null && !(field.resolvedType instanceof protobuf.Type)
      const entry: FieldPlan = { name: field.name, key: jsonName ?? field.name, repeated: field.repeated, map: field.map, implicit, ...described }
      fields.push(entry)
      if (entry.key !== entry.name || this.#needsMapping(entry)) mapped.push(entry)
    }
    return plan
  }

  /** Whether writing a field's JSON needs more than `encode`: an enum or a well-known type somewhere in it, or a rename. */
  #needsMapping (field: FieldPlan): boolean {
    if (field.kind === 'enum' || field.kind === 'timestamp' || field.kind === 'struct' || field.kind === 'value' || field.kind === 'list') return true
    if (field.kind !== 'message') return false
    const plan = this.#plan(field.type as protobuf.Type)
    return plan.mapped.length > 0
  }
}

function describe (field: protobuf.Field): Pick<FieldPlan, 'kind' | 'type' | 'values' | 'numbers'> {
  const resolved = field.resolvedType
  if (resolved instanceof protobuf.Enum) {
    const values: Record<number, string> = {}
    for (const [name, number] of Object.entries(resolved.values)) values[number] ??= name
    return { kind: 'enum', values, numbers: resolved.values }
  }
  if (resolved instanceof protobuf.Type) {
    switch (resolved.fullName) {
      case TIMESTAMP: return { kind: 'timestamp' }
      case STRUCT: return { kind: 'struct' }
      case VALUE: return { kind: 'value' }
      case LIST_VALUE: return { kind: 'list' }
      default: return { kind: 'message', type: resolved }
    }
  }
  if (INT64.has(field.type)) return { kind: 'int64' }
  if (field.type === 'bytes') return { kind: 'bytes' }
  if (field.type === 'double' || field.type === 'float') return { kind: 'float' }
  return { kind: 'scalar' }
}

/** A scalar's default: empty text or bytes, zero (enums' first value too, and a 64-bit zero), false. */
function isDefault (value: unknown, kind: Kind): boolean {
  if (kind === 'bytes') return (value as Uint8Array).length === 0
  if (kind === 'int64') return String(value) === '0'
  return value === '' || value === 0 || value === false
}

// ---------------------------------------------------------------------------------------------------------------
// The well-known types.

/** RFC 3339 in UTC, with 3 fractional digits, or 9 when the nanoseconds need them. */
function timestampToJson (value: ProtoObject): string {
  const seconds = Number(value.seconds)
  const nanos = Number(value.nanos)
  const iso = new Date(seconds * 1000 + Math.floor(nanos / 1e6)).toISOString()
  if (nanos % 1e6 === 0) return iso
  return `${iso.slice(0, 19)}.${String(nanos).padStart(9, '0')}Z`
}

/** An RFC 3339 string (the answers' own: they are never anything else) as seconds and nanoseconds. */
function timestampFromJson (value: string): ProtoObject {
  const ms = Date.parse(value)
  const nanos = Number((/\.(\d+)/.exec(value)?.[1] ?? '').slice(0, 9).padEnd(9, '0'))
  // A number, not a string: `encode` turns a string into a Long by parsing it (1.7 µs of a gRPC answer, profiled).
  return { seconds: Math.floor(ms / 1000), nanos }
}

function structToJson (value: ProtoObject): Json {
  const out: Json = {}
  const fields = value.fields as ProtoObject
  for (const key of Object.keys(fields)) out[key] = valueToJson(fields[key] as ProtoObject)
  return out
}

function listToJson (value: ProtoObject): unknown[] {
  return (value.values as ProtoObject[]).map(valueToJson)
}

function valueToJson (value: ProtoObject): unknown {
  if (Object.hasOwn(value, 'nullValue')) return null
  if (Object.hasOwn(value, 'numberValue')) return value.numberValue
  if (Object.hasOwn(value, 'stringValue')) return value.stringValue
  if (Object.hasOwn(value, 'boolValue')) return value.boolValue
  if (Object.hasOwn(value, 'structValue')) return structToJson(value.structValue as ProtoObject)
  if (Object.hasOwn(value, 'listValue')) return listToJson(value.listValue as ProtoObject)
  // A Value with no kind set.
  return null
}

/** An object's JSON as a Struct: a key whose value is undefined is left out, as JSON leaves it. */
function structFromJson (value: Json): ProtoObject {
  const fields: ProtoObject = {}
  for (const key of Object.keys(value)) {
    const item = value[key]
    if (item !== undefined) fields[key] = valueFromJson(item)
  }
  return { fields }
}

function listFromJson (value: unknown[]): ProtoObject {
  return { values: value.map(valueFromJson) }
}

function valueFromJson (value: unknown): ProtoObject {
  if (value == null) return { nullValue: 0 }
  if (typeof value === 'object') return Array.isArray(value) ? { listValue: listFromJson(value) } : { structValue: structFromJson(value as Json) }
  if (typeof value === 'number') return { numberValue: value }
  if (typeof value === 'boolean') return { boolValue: value }
  return { stringValue: String(value) }
}
