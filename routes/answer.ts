import { Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'
import type { HttpAnswers } from '../plugins/answers.js'
import { LARGE, jsonPieces, largerThan } from '../services/json-rpc/answer-json.js'
import { activatedHeaders } from '../services/a2a/extensions.js'

// How the JSON-RPC and HTTP+JSON route contexts send a JSON answer: within the answer budget (plugins/answers.ts),
// a large one made a piece a turn (services/json-rpc/answer-json.ts: issue 39 row 4, one request's synchronous work
// under 100 ms).

/** Sends `value` as JSON of media type `type`: stringified when sent, or, when large, made a piece a turn. */
export function sendJson (replies: HttpAnswers, reply: FastifyReply, value: unknown, type: string): void {
  if (largerThan(value, LARGE)) sendInTurns(replies, reply, value, type)
  else replies.send(reply, () => JSON.stringify(value), json => reply.type(type).send(json))
}

/**
 * A large answer, made a piece a turn, then sent within the answer budget by `replies.send` as the others are: made
 * again after a wait, so that a waiting answer holds its value, not its bytes.
 */
function sendInTurns (replies: HttpAnswers, reply: FastifyReply, value: unknown, type: string): void {
  const res = reply.raw
  let left = false
  // A client that leaves in the few turns its answer is made in (a race a test cannot time) gets nothing: taking
  // room for it then would keep that room, its response's `close` being past.
  /* c8 ignore next -- the client leaving in those few turns: a race a test cannot time */
  const leave = (): void => { left = true }
  res.once('close', leave)
  jsonPieces(value).then(made => {
    res.off('close', leave)
    /* c8 ignore next -- the same race */
    if (left) return
    const length = made.reduce((sum, piece) => sum + piece.length, 0)
    let first: Buffer[] | null = made
    replies.send(reply, () => {
      const pieces = first
      first = null
      return { length, pieces }
    }, ({ pieces }) => {
      reply.type(type).header('content-length', length)
      if (pieces !== null) reply.send(Readable.from(pieces))
      else jsonPieces(value).then(again => reply.send(Readable.from(again)))
    })
  })
}

/**
 * The answer's `A2A-Extensions` header (v0.3 methods: `X-A2A-Extensions` too): the extensions the request activated
 * for `method`, none: no header (docs/protocol.md, "Extensions"). Set on the response itself, so that an SSE answer,
 * written past Fastify, carries it too.
 */
export function echoExtensions (reply: FastifyReply, extensions: readonly string[], method: string): void {
  for (const [name, value] of Object.entries(activatedHeaders(extensions, method))) reply.raw.setHeader(name, value)
}
