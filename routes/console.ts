import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { SINK_TOKEN, SINK_TOKEN_RULE, type ConsoleSinks } from '../services/console/sinks.js'

/** Options of the console routes, registered by the plugin entry while `console.enabled` holds. */
export interface ConsoleRoutesOptions {
  /** Where the console's push deliveries are kept. */
  sinks: ConsoleSinks
}

/** A push delivery is one Task; larger bodies get 413 and are not kept. */
export const SINK_BODY_LIMIT = 256 * 1024

/**
 * Everything the page may load or call is its own inline code and this origin: no other host, so it works offline
 * and nothing injected into it can run or send data elsewhere.
 */
function contentSecurityPolicy (nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join('; ')
}

function badToken (reply: FastifyReply): FastifyReply {
  return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: SINK_TOKEN_RULE })
}

const DeliverySchema = {
  type: 'object',
  properties: {
    seq: { type: 'integer' },
    receivedAt: { type: 'string' },
    taskId: { type: ['string', 'null'] },
    state: { type: ['string', 'null'] },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    body: { type: 'string' }
  }
}

const SinkSchema = {
  type: 'object',
  properties: {
    url: { type: ['string', 'null'] },
    deliveries: { type: 'array', items: DeliverySchema }
  }
}

const ErrorSchema = {
  type: 'object',
  properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } }
}

/**
 * `GET /console`, the developer console (CONTRACT.md §3): a public page whose JSON-RPC calls go to `POST /` with the
 * credentials typed into it. Also its webhook sink: `POST /console/sink/:token` keeps a push delivery,
 * `GET /console/sink/:token` shows the sink's URL and deliveries. Registered only while `console.enabled` holds.
 */
const consoleRoutes: FastifyPluginAsync<ConsoleRoutesOptions> = async (fastify, opts) => {
  const { sinks } = opts
  // Deliveries are kept as the text they arrived as, whatever their type; parsers stay inside this context.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', { parseAs: 'string', bodyLimit: SINK_BODY_LIMIT }, (_request, body, done) => {
    done(null, body)
  })

  // The page is told the v0.3 dialect (the a2aConfig decorator, index.ts) so that it spells v0.3 states as the
  // server writes them.
  fastify.get('/console', async function (_request, reply) {
    // The page's text (48 KB of script and style) loads with the first visit: a server nobody opens it on never does.
    const { consolePage } = await import('../services/console/page.js')
    const nonce = randomBytes(16).toString('base64')
    return reply
      .headers({
        'content-security-policy': contentSecurityPolicy(nonce),
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-store'
      })
      .type('text/html; charset=utf-8')
      .send(consolePage(nonce, { dialect: this.a2aConfig.protocol.dialect }))
  })

  fastify.get<{ Params: { token: string } }>('/console/sink/:token', {
    schema: { response: { 200: SinkSchema, 400: ErrorSchema } }
  }, async function (request, reply) {
    const { token } = request.params
    if (!SINK_TOKEN.test(token)) return badToken(reply)
    reply.header('cache-control', 'no-store')
    return { url: sinks.urlFor(token), deliveries: sinks.list(token) }
  })

  fastify.post<{ Params: { token: string }, Body: string | undefined }>('/console/sink/:token', {
    bodyLimit: SINK_BODY_LIMIT,
    schema: { response: { 400: ErrorSchema } }
  }, async function (request, reply) {
    const { token } = request.params
    if (!SINK_TOKEN.test(token)) return badToken(reply)
    sinks.record(token, request.headers, request.body ?? '')
    return reply.code(204).send()
  })
}

export default consoleRoutes
