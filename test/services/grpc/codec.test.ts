// The gRPC binding's ProtoJSON codec (services/grpc/codec.ts): every kind of field both ways, on a proto of the
// test's own that has each of them, then on the A2A protos themselves.
import { join } from 'node:path'
import protobuf from 'protobufjs'
import t from 'tap'
import { ProtoCodec, Undecodable } from '../../../services/grpc/codec.js'
import { protoCodec } from '../../../services/grpc/protos.js'

const PROTO = `
syntax = "proto3";
package t;
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/empty.proto";

enum Color { COLOR_UNSPECIFIED = 0; COLOR_RED = 1; }
message Inner {
  google.protobuf.Timestamp at = 1;
  string note = 2 [json_name = "remark"];
}
message Plain { string a = 1; int32 b = 2; }
message All {
  string s = 1;
  int64 big = 2;
  bytes raw = 3;
  double ratio = 4;
  Color color = 5;
  google.protobuf.Timestamp at = 6;
  google.protobuf.Struct meta = 7;
  google.protobuf.Value any = 8;
  google.protobuf.ListValue list = 9;
  repeated Inner inners = 10;
  map<string, Inner> by_name = 11;
  map<string, string> tags = 12;
  Plain plain = 13;
  repeated google.protobuf.Timestamp times = 14;
  All child = 15;
  google.protobuf.Empty empty = 16;
  optional int32 maybe = 17;
  repeated string words = 18;
  repeated Color colors = 19;
}
`

function codecOf (dir: string): { codec: ProtoCodec, all: protobuf.Type } {
  const root = new protobuf.Root()
  root.loadSync(join(dir, 'all.proto'), { keepCase: false })
  root.resolveAll()
  const codec = new ProtoCodec(root)
  return { codec, all: codec.type('t.All') }
}

t.test('every kind of field, written from ProtoJSON and read back as ProtoJSON', async t => {
  const { codec, all } = codecOf(t.testdir({ 'all.proto': PROTO }))
  const json = {
    s: 'text',
    big: '9007199254740993',
    raw: Buffer.from('bytes!').toString('base64'),
    ratio: 0.25,
    color: 'COLOR_RED',
    at: '2026-11-26T10:00:00.123Z',
    meta: { str: 'v', num: 2, yes: true, none: null, list: [1, 'two', [3], { four: 4 }], obj: { deep: { er: [] } } },
    any: [null, { k: false }],
    list: ['a', 1],
    inners: [{ at: '2026-11-26T10:00:00.000123456Z', remark: 'first' }, { remark: 'second' }],
    byName: { x: { remark: 'in a map', at: '1970-01-01T00:00:01.000Z' } },
    tags: { a: 'b' },
    plain: { a: 'p', b: 3 },
    times: ['2026-01-01T00:00:00.000Z'],
    child: { s: 'child', meta: {} },
    empty: {},
    maybe: 0,
    words: ['w']
  }
  const bytes = codec.write(all, json)
  t.same(codec.read(all, bytes), json, 'the same ProtoJSON back')
  // What protobufjs itself reads from those bytes: the json_name and the well-known types really went in as such.
  const decoded = all.toObject(all.decode(bytes), { longs: String }) as any
  t.equal(decoded.inners[0].note, 'first', 'remark is the json_name of note')
  t.same(decoded.at, { seconds: String(Date.parse('2026-11-26T10:00:00Z') / 1000), nanos: 123000000 })
  t.equal(decoded.inners[0].at.nanos, 123456)
  t.same(decoded.meta.fields.str, { stringValue: 'v' })
  t.same(decoded.any.listValue.values[0], { nullValue: 0 })
  t.equal(decoded.big, '9007199254740993')
})

t.test('what ProtoJSON has no other way to say: non-finite doubles, unknown enum numbers, a Value with no kind, empties', async t => {
  const { codec, all } = codecOf(t.testdir({ 'all.proto': PROTO }))
  const raw = (object: Record<string, unknown>) => Buffer.from(all.encode(all.fromObject(object)).finish())
  t.same(codec.read(all, raw({ ratio: NaN })), { ratio: 'NaN' })
  t.same(codec.read(all, raw({ ratio: -Infinity })), { ratio: '-Infinity' })
  t.same(codec.read(all, raw({ color: 7 })), { color: 7 }, 'an enum number the proto does not name stays a number')
  t.same(codec.read(all, raw({ any: {} })), { any: null }, 'a Value with no kind is null')
  t.same(codec.read(all, raw({})), {}, 'unset fields are left out')
  t.same(codec.read(all, raw({ s: '', big: '0', raw: '', ratio: 0, color: 0, words: [], tags: {} })), {},
    'defaults and empty lists are left out, even when a writer put them on the wire')
  t.same(codec.read(all, raw({ raw: Buffer.from('0').toString('base64'), big: '10' })), { raw: 'MA==', big: '10' }, 'not defaults')
  t.same(codec.read(all, raw({ maybe: 0, plain: {} })), { maybe: 0, plain: {} }, 'what has presence is kept at its default')
  t.same(codec.read(all, codec.write(all, { meta: { gone: undefined, kept: 1 }, words: undefined, plain: null })), { meta: { kept: 1 } },
    'undefined and null are unset')
  t.same(codec.write(all, undefined), Buffer.alloc(0), 'no object: an empty message')
  t.same(codec.read(all, codec.write(all, { times: ['2026-01-01T00:00:00Z'] })), { times: ['2026-01-01T00:00:00.000Z'] }, 'whole seconds')
  const plain = codec.type('t.Plain')
  t.same(codec.read(plain, codec.write(plain, { a: 'x', b: 1 })), { a: 'x', b: 1 }, 'a type with nothing to map is written as it is')
})

t.test('enums are written by number from their names, as fromObject would set them', async t => {
  const { codec, all } = codecOf(t.testdir({ 'all.proto': PROTO }))
  t.same(codec.read(all, codec.write(all, { color: 'COLOR_RED' })), { color: 'COLOR_RED' })
  t.same(codec.read(all, codec.write(all, { color: 7 })), { color: 7 }, 'a number is written as it is')
  t.same(codec.read(all, codec.write(all, { color: 'COLOR_BLUE', s: 'kept' })), { s: 'kept' }, 'a name the enum does not have is not written')
  t.same(codec.read(all, codec.write(all, { color: 'constructor' })), {}, 'nor is a name only Object.prototype has')
  t.same(codec.read(all, codec.write(all, { colors: ['COLOR_RED', 'NOPE', 1] })), { colors: ['COLOR_RED', 'COLOR_RED'] },
    'in a list, such a name is left out')
  const json = { s: 'x', color: 'COLOR_RED', child: { color: 'COLOR_RED', at: '2026-01-01T00:00:00.000Z' } }
  const viaMessages = Buffer.from(all.encode(all.fromObject(codec.fromJson(all, json))).finish())
  t.same(codec.write(all, json), viaMessages, 'the same bytes as through protobufjs messages')
})

t.test('bytes that are not the message are Undecodable, never a throw', async t => {
  const { codec, all } = codecOf(t.testdir({ 'all.proto': PROTO }))
  const bad = codec.read(all, Buffer.from([0x12, 0x10, 0x01]))
  t.type(bad, Undecodable)
  t.match((bad as Undecodable).reason, /^the request is not a t\.All message: /)
})

t.test('the A2A protos: a v1.0 Task with metadata and a data part, a v0.3 status whose message is `update` on the wire', async t => {
  const codec = protoCodec()
  const task = codec.type('lf.a2a.v1.Task')
  const json = {
    id: 't1',
    contextId: 'c1',
    status: {
      state: 'TASK_STATE_WORKING',
      message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'hi' }, { data: { a: [1, null] }, mediaType: 'application/json' }] },
      timestamp: '2026-11-26T10:00:00.123Z'
    },
    metadata: { k: 'v' }
  }
  t.same(codec.read(task, codec.write(task, json)), json)
  const status = codec.type('a2a.v1.TaskStatus')
  const bytes = codec.write(status, { state: 'TASK_STATE_CANCELLED', message: { messageId: 'x', role: 'ROLE_USER', content: [{ text: 'a' }] } })
  t.equal((status.decode(bytes) as any).update.messageId, 'x')
  t.same(codec.read(status, bytes), { state: 'TASK_STATE_CANCELLED', message: { messageId: 'x', role: 'ROLE_USER', content: [{ text: 'a' }] } })
  const { request, response } = codec.method('lf.a2a.v1.A2AService', 'SendMessage')
  t.equal(request.fullName, '.lf.a2a.v1.SendMessageRequest')
  t.equal(response.fullName, '.lf.a2a.v1.SendMessageResponse')
})
