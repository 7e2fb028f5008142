// The A2A routes' JSON body reader (routes/body.ts): read and decoded a chunk at a time, within the body limit.
import { PassThrough } from 'node:stream'
import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import t from 'tap'
import { jsonBodyParser } from '../../routes/body.js'

/** Runs the parser on `chunks` (Buffers or strings), with the given Content-Length; resolves what `done` got. */
function read (chunks: Array<Buffer | string>, opts: { length?: number, limit?: number, emptyIsNone?: boolean, fail?: Error } = {}): Promise<{ err: (Error & { code?: string, statusCode?: number }) | null, value?: unknown }> {
  const headers = opts.length === undefined ? {} : { 'content-length': String(opts.length) }
  const payload = new PassThrough()
  return new Promise(resolve => {
    jsonBodyParser(100, opts.limit ?? 1000, opts.emptyIsNone)({ headers } as unknown as FastifyRequest, payload as unknown as IncomingMessage, (err, value) => resolve({ err, value }))
    for (const chunk of chunks) payload.write(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
    if (opts.fail !== undefined) payload.destroy(opts.fail)
    else payload.end()
  })
}

t.test('a character split between two chunks of the body is decoded whole', async t => {
  const bytes = Buffer.from('{"text":"漢字"}')
  const { err, value } = await read([bytes.subarray(0, 11), bytes.subarray(11)], { length: bytes.length })
  t.equal(err, null)
  t.same(value, { text: '漢字' })
})

t.test('a body over the limit is refused as Fastify refuses it: by its Content-Length, or once more has come', async t => {
  t.match(await read(['{}'], { length: 2000 }), { err: { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 } })
  t.match(await read(['{"a":"', 'x'.repeat(600), 'x'.repeat(600), '"}']), { err: { code: 'FST_ERR_CTP_BODY_TOO_LARGE' } }, 'with no Content-Length (chunked)')
})

t.test('a body shorter than its Content-Length, or broken off, is a body that could not be read', async t => {
  t.match(await read(['{}'], { length: 10 }), { err: { code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH', statusCode: 400 } })
  t.match(await read(['{"a":'], { fail: new Error('aborted') }), { err: { message: 'aborted', statusCode: 400 } })
})

t.test('an empty body is no body where the route allows it, else not valid JSON', async t => {
  t.same(await read([], { length: 0, emptyIsNone: true }), { err: null, value: undefined })
  t.match(await read([], { length: 0 }), { err: { code: -32700, data: 'the body is not valid JSON' } })
})

t.test('a body is parsed as secure-json-parse would: a byte order mark dropped, __proto__ and constructor.prototype keys removed', async t => {
  const bom = await read(['\ufeff{"a":1}'])
  t.same(bom.value, { a: 1 })
  const tricky = await read(['{"a":{"__proto__":{"x":1},"constructor":{"prototype":{"y":2}},"b":[{"\\u005f_proto__":{}}]}}'])
  t.equal(tricky.err, null)
  t.same(tricky.value, { a: { b: [{}] } })
  t.equal(Object.getPrototypeOf((tricky.value as { a: object }).a), Object.prototype)
  t.same(await read(['12']), { err: null, value: 12 }, 'a value that is no object is left as it is')
  t.same(await read(['null']), { err: null, value: null })
})

t.test('a body of over a million characters is parsed the same, in a later turn than it is counted in', async t => {
  const text = 'z'.repeat(1_200_000)
  const body = JSON.stringify({ text, nested: [[[]]] })
  const { err, value } = await read([body], { limit: 2_000_000 })
  t.equal(err, null)
  t.same(value, { text, nested: [[[]]] })
  t.match(await read([`{"text":"${text}",}`], { limit: 2_000_000 }), { err: { code: -32700 } }, 'and refused the same when it is not JSON')
  // Parsed by JSON.parse and the walk rather than secure-json-parse's parse: the same byte order mark and keys dropped.
  const tricky = await read([`\ufeff{"text":"${text}","__proto__":{"x":1},"constructor":{"prototype":{"y":2}}}`], { limit: 2_000_000 })
  t.equal(tricky.err, null)
  t.same(tricky.value, { text })
  t.equal(Object.getPrototypeOf(tricky.value), Object.prototype)
})
