import t from 'tap'
import { ModelError, SseDataParser, readChatStream, type ModelReply } from '../../../services/agent/openai-stream.js'

const enc = (s: string) => new TextEncoder().encode(s)

/** Reads a stream given as network reads; returns what it yielded and returned, and how many reads it counted. */
async function read (reads: string[]): Promise<{ texts: string[], reply: ModelReply, reads: number }> {
  let count = 0
  const texts: string[] = []
  const stream = readChatStream(reads.map(enc), () => { count++ })
  let next = await stream.next()
  while (next.done !== true) {
    texts.push(next.value)
    next = await stream.next()
  }
  return { texts, reply: next.value, reads: count }
}

const data = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`
const delta = (d: unknown, finish: string | null = null) => data({ choices: [{ index: 0, delta: d, finish_reason: finish }] })

t.test('the SSE parser joins data lines, takes any line ending, and skips comments and other fields', async t => {
  const parser = new SseDataParser()
  t.same(parser.push(': keep-alive\n\nevent: x\nid: 1\nretry: 5\ndata: a\ndata:b\ndata\n\n'), ['a\nb\n'])
  t.same(parser.push('data: one\r\n\r\ndata: two\r\rdata: th'), ['one', 'two'])
  t.same(parser.push('ree\r'), [], 'a CR at the end may be half of a CRLF')
  t.same(parser.push('\n\r\n'), ['three'])
  t.same(parser.push('data: last\r'), [])
  t.same(parser.end(), ['last'], 'what is left at the end is a last event')
  t.same(parser.end(), [])
  t.same(parser.push('field-only\n\n'), [])
})

t.test('content deltas are yielded per read, joined, and the reply holds the whole text', async t => {
  const { texts, reply, reads } = await read([
    delta({ role: 'assistant', content: '' }) + delta({ content: 'Hel' }) + delta({ content: 'lo' }),
    ': comment\n\n' + data({ choices: [] }) + data({ usage: { total_tokens: 3 } }),
    delta({ content: ' you' }) + delta({}, 'stop') + 'data: [DONE]\n\n',
    delta({ content: 'after done is ignored' })
  ])
  t.same(texts, ['Hello', ' you'])
  t.same(reply, { content: 'Hello you', toolCalls: [], finishReason: 'stop' })
  t.equal(reads, 3, 'the stream is left at [DONE]')
})

t.test('the completion\'s id, model and token usage are read into the reply, the usage from its chunk with no choices', async t => {
  const { texts, reply } = await read([
    data({ id: 'chatcmpl-9', model: 'm-1', choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: null }], usage: null }),
    data({ id: '', model: '', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
    data({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 1.5 } }),
    data({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } }) + 'data: [DONE]\n\n'
  ])
  t.same(texts, ['ok'])
  t.same(reply, { content: 'ok', toolCalls: [], finishReason: 'stop', id: 'chatcmpl-9', model: 'm-1', usage: { inputTokens: 7, outputTokens: 2 } })
})

t.test('a [DONE] in the middle of a read ends the reply there', async t => {
  const { reply } = await read([delta({ content: 'a' }) + 'data: [DONE]\n\n' + delta({ content: 'b' })])
  t.same(reply, { content: 'a', toolCalls: [], finishReason: null })
})

t.test('a stream without [DONE] is whole when it gave a finish reason, even without a final blank line', async t => {
  const { reply } = await read([delta({ content: 'a' }), delta({ content: 'b' }, 'length').trimEnd()])
  t.same(reply, { content: 'ab', toolCalls: [], finishReason: 'length' })
  await t.rejects(read([delta({ content: 'a' })]), new ModelError('stream ended early', 'The language model sent an answer that could not be read.'))
})

t.test('tool calls are assembled from their fragments by index', async t => {
  const { reply } = await read([
    delta({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'list_directory', arguments: '' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }, { index: 1, id: 'call_b', function: { name: 'status' } }] }),
    delta({ tool_calls: [{ index: 0, id: '', function: { name: '', arguments: 'th":"."}' } }, { index: 1 }] }),
    delta({ tool_calls: [{ function: { name: 'whole', arguments: '{}' } }, { index: 5, id: 'gap' }] }),
    delta({}, 'tool_calls'),
    'data: [DONE]\n\n'
  ])
  t.same(reply.toolCalls, [
    { id: 'call_a', name: 'list_directory', arguments: '{"path":"."}' },
    { id: 'call_b', name: 'status', arguments: '' },
    { id: 'call_2', name: 'whole', arguments: '{}' },
    { id: 'gap', name: '', arguments: '' }
  ])
  t.equal(reply.finishReason, 'tool_calls')
})

t.test('data that cannot be read is a ModelError with a safe message', async t => {
  const unreadable = 'The language model sent an answer that could not be read.'
  const cases: Array<[string, string, string]> = [
    ['data: {"choices": [\n\n', 'stream data is not JSON', unreadable],
    ['data: [1]\n\n', 'stream data is not an object', unreadable],
    ['data: null\n\n', 'stream data is not an object', unreadable],
    [data({ error: { message: 'overloaded' } }), 'error reported in the stream', 'The language model reported an error.'],
    [delta({ tool_calls: ['x'] }), 'tool call fragment is not an object', unreadable],
    [delta({ tool_calls: [{ index: -1 }] }), 'tool call index out of range', unreadable],
    [delta({ tool_calls: [{ index: 64 }] }), 'tool call index out of range', unreadable],
    [delta({ tool_calls: [{ index: 1.5 }] }), 'tool call index out of range', unreadable]
  ]
  for (const [raw, reason, safe] of cases) {
    const err = await read([raw]).catch(e => e)
    t.ok(err instanceof ModelError, raw)
    t.match(err, { reason, safeMessage: safe, status: undefined, message: `language model request failed: ${reason}` })
  }
})

t.test('choices without a delta or with a non-string content give no text', async t => {
  const { texts, reply } = await read([
    data({ choices: [{ index: 0 }] }) + data({ choices: ['x'] }) + delta({ content: 5, tool_calls: 'x' }) + delta({ content: 'ok' }, 'stop')
  ])
  t.same(texts, ['ok'])
  t.equal(reply.content, 'ok')
})
