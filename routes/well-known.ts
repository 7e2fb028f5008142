import { createHash } from 'node:crypto'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { A2AConfig } from '../schemas/config.js'
import { buildAgentCard, cardBindingsOf, cardInterfaces, type CardBindings } from '../services/a2a/agent-card.js'
import { cardSignerOf, signedCard } from '../services/a2a/card-signing.js'
import { readiness, type ReadinessChecks } from '../services/serving/readiness.js'

export interface WellKnownRoutesOptions {
  config: A2AConfig
  /** The plugin prefix, for the card's url. */
  cardPrefix: string
  /** The bindings the card lists besides JSON-RPC, and their tenant (CONTRACT.md §11.5); none by default. */
  cardBindings?: CardBindings
  /** Readiness checks by name: each throws when its backend does not answer. */
  checks: ReadinessChecks
}

/** CONTRACT.md §11.5: the card may be cached for five minutes. */
const CARD_CACHE_CONTROL = 'public, max-age=300'

/** A Host that is a host and an optional port: a DNS name, an IPv4 address or a bracketed IPv6 one. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/

/** How many Hosts' cards are kept, signed and tagged (without `agent.url` the card differs by Host). */
const HOST_CARDS = 100

/** A strong validator of the card's bytes. */
function etag (body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}

/** How long one readiness check may take before the backend counts as down. */

const HealthSchema = {
  type: 'object',
  properties: {
    status: { type: 'string' },
    agent: { type: 'string' },
    version: { type: 'string' },
    timestamp: { type: 'string' }
  }
}

const ReadySchema = {
  type: 'object',
  properties: {
    status: { type: 'string' },
    checks: { type: 'object', additionalProperties: { type: 'string' } }
  }
}

/** `/health`, `/ready` and the agent card: public routes, never authenticated (CONTRACT.md §3). */
const wellKnownRoutes: FastifyPluginAsync<WellKnownRoutesOptions> = async (fastify, opts) => {
  const { config } = opts
  const bindings = opts.cardBindings ?? cardBindingsOf(config)

  fastify.get('/health', { schema: { response: { 200: HealthSchema } } }, async function () {
    return { status: 'healthy', agent: config.agent.name, version: config.agent.version, timestamp: new Date().toISOString() }
  })

  fastify.get('/ready', { schema: { response: { 200: ReadySchema, 503: ReadySchema } } }, async function (_request, reply) {
    const { ok, checks } = await readiness(opts.checks, (name, err) => reply.log.warn({ err, check: name }, 'readiness check failed'))
    if (!ok) reply.code(503)
    return { status: ok ? 'ready' : 'unavailable', checks }
  })

  // One hybrid card for every request, whatever its A2A-Version (CONTRACT.md §11.5).
  const respond = cardResponder(config, opts.cardPrefix, bindings)
  for (const cardPath of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
    fastify.get(cardPath, async function (request, reply) {
      return respond(request, reply)
    })
  }

  // The public key the card is signed with, for verifiers that do not have it (docs/protocol.md, "Signed cards").
  const signer = cardSignerOf(config)
  if (signer !== undefined) {
    const jwks = await signer.jwks()
    fastify.get('/.well-known/jwks.json', async function (_request, reply) {
      reply.header('cache-control', CARD_CACHE_CONTROL)
      return jwks
    })
  }
}

/**
 * Answers the public card (CONTRACT.md §11.5): the configured one, or without `agent.url` the one at the Host the
 * client reached, with its cache headers and a 304 to a matching If-None-Match. `GET /v1/card` answers with it too.
 */
export function cardResponder (config: A2AConfig, cardPrefix: string, bindings: CardBindings): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> {
  const card = buildAgentCard(config, { ...bindings, prefix: cardPrefix })
  const signer = cardSignerOf(config)
  const fixed = config.agent.url !== undefined
  const path = cardPrefix.endsWith('/') ? cardPrefix : cardPrefix + '/'
  // Each form's bytes and tag, made (and signed: ES256 signatures differ each time) once per form: the configured
  // card under '', a Host's under its URL.
  const bodies = new LRUCache<string, Promise<{ body: string, tag: string }>>({ max: HOST_CARDS })
  const served = (url: string) => {
    let made = bodies.get(url)
    if (made === undefined) {
      made = signedCard(signer, url === '' ? card : { ...card, ...cardInterfaces(url, bindings) })
        .then(signed => { const body = JSON.stringify(signed); return { body, tag: etag(body) } })
      bodies.set(url, made)
    }
    return made
  }
  return async function (request, reply) {
    let url = ''
    if (!fixed) {
      // Without agent.url, the card points where the client reached us (port mappings, port 0, proxies), but only
      // through a Host that is a host and a port: anything else gets the configured address, never an echo.
      const host = request.host
      if (HOST.test(host)) url = `${request.protocol === 'https' ? 'https' : 'http'}://${host}${path}`
      // The card differs by Host: a cache must not hand one client's card to another.
      reply.header('vary', 'Host')
    }
    const { body, tag } = await served(url)
    reply.header('cache-control', CARD_CACHE_CONTROL)
    reply.header('etag', tag)
    if (request.headers['if-none-match'] === tag) return reply.code(304).send()
    reply.type('application/json; charset=utf-8')
    return reply.send(body)
  }
}

export default wellKnownRoutes
