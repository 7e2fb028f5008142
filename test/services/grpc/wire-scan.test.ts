// The count of keys and items on a gRPC request's wire, before it is decoded (services/grpc/wire-scan.ts).
import { join } from 'node:path'
import protobuf from 'protobufjs'
import t from 'tap'
import { ProtoCodec } from '../../../services/grpc/codec.js'
import { protoCodec } from '../../../services/grpc/protos.js'
import { wireItems } from '../../../services/grpc/wire-scan.js'

const PROTO = `
syntax = "proto3";
package w;
import "google/protobuf/struct.proto";
message Inner { string s = 1; }
message M {
  string a = 1;
  int32 b = 2;
  repeated int32 packed = 3;
  repeated Inner inners = 4;
  map<string, Inner> by_name = 5;
  map<string, string> tags = 6;
  google.protobuf.Struct data = 7;
  repeated string words = 8;
  fixed32 f = 9;
  double d = 10;
}
`

function typeOf (dir: string): { codec: ProtoCodec, m: protobuf.Type } {
  const root = new protobuf.Root()
  root.loadSync(join(dir, 'w.proto'), { keepCase: false })
  root.resolveAll()
  const codec = new ProtoCodec(root)
  return { codec, m: codec.type('w.M') }
}

t.test('wireItems counts each field, item and map entry, a packed field by its bytes, a Struct key twice', async t => {
  const { codec, m } = typeOf(t.testdir({ 'w.proto': PROTO }))
  const count = (json: unknown) => wireItems(m, codec.write(m, json), 1000)
  t.equal(count({}), 0)
  t.equal(count({ a: 'x', b: 3, f: 1, d: 0.5 }), 4, 'one for each scalar field')
  t.equal(count({ packed: [1, 2, 300] }), 4, 'a packed field: one a byte, at least one an item')
  t.equal(count({ words: ['a', 'b', 'c'] }), 3, 'a repeated string: one an item')
  t.equal(count({ inners: [{ s: 'x' }, {}] }), 3, 'a repeated message: one an item, and its fields')
  t.equal(count({ byName: { x: { s: 'y' }, z: {} } }), 3, 'a map entry counts one, its key nothing, its message value its fields')
  t.equal(count({ tags: { a: 'b', c: 'd' } }), 2, 'a map of strings: one an entry')
  t.equal(count({ data: { k0: 0, k1: 'x', k2: { deep: [1, 2] } } }), 13, 'the field, then a Struct: two a key, a list: two an item')
})

t.test('wireItems stops just past its bound', async t => {
  const { codec, m } = typeOf(t.testdir({ 'w.proto': PROTO }))
  const data = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]))
  t.equal(wireItems(m, codec.write(m, { data }), 100), 101)
  t.equal(wireItems(m, codec.write(m, { inners: Array.from({ length: 200 }, () => ({ s: 'x' })) }), 100), 101, 'at any depth')
})

t.test('wireItems ends its count on bytes that are not the message, never throwing', async t => {
  const { m } = typeOf(t.testdir({ 'w.proto': PROTO }))
  t.equal(wireItems(m, Buffer.from([0x0a, 0x05, 0x61]), 100), 0, 'a length past the end')
  t.equal(wireItems(m, Buffer.from([0x22, 0x05, 0x61]), 100), 0, 'a message\'s length past the end')
  t.equal(wireItems(m, Buffer.from([0x2a, 0x04, 0x12, 0x05, 0x0a, 0x00]), 100), 1, 'a map value\'s length past its entry')
  t.equal(wireItems(m, Buffer.from([0x0f]), 100), 0, 'a wire type that does not exist')
})

t.test('wireItems counts a SendMessage of n data keys within twice n, so a message at tasks.max_keys passes', async t => {
  const codec = protoCodec()
  const type = codec.type('lf.a2a.v1.SendMessageRequest')
  const data = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]))
  const bytes = codec.write(type, { message: { messageId: 'g-1', role: 'ROLE_USER', parts: [{ data }, { text: 'x' }] }, metadata: { m: 1 } })
  const items = wireItems(type, bytes, 1_000_000)
  t.ok(items >= 1001 && items <= 2 * 1001 + 16, `${items} items`)
})
