import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { buildAgentCard } from '../services/agent-card.js'

export interface WellKnownRoutesOptions {
  config: A2AConfig
  /** The plugin prefix, for the card's url. */
  cardPrefix: string
  /** Readiness checks by name: each throws when its backend does not answer. */
  checks: Record<string, () => Promise<void>>
}

/** How long one readiness check may take before the backend counts as down. */
const READY_TIMEOUT_MS = 2_000

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
  const card = buildAgentCard(config, { prefix: opts.cardPrefix })
  const fixed = config.agent.url === undefined ? undefined : JSON.stringify(card)
  const path = opts.cardPrefix.endsWith('/') ? opts.cardPrefix : opts.cardPrefix + '/'

  fastify.get('/health', { schema: { response: { 200: HealthSchema } } }, async function () {
    return { status: 'healthy', agent: config.agent.name, version: config.agent.version, timestamp: new Date().toISOString() }
  })

  fastify.get('/ready', { schema: { response: { 200: ReadySchema, 503: ReadySchema } } }, async function (_request, reply) {
    const checks: Record<string, string> = {}
    let ok = true
    await Promise.all(Object.entries(opts.checks).map(async ([name, check]) => {
      try {
        await withTimeout(check(), READY_TIMEOUT_MS)
        checks[name] = 'ok'
      } catch (err) {
        ok = false
        checks[name] = 'unavailable'
        reply.log.warn({ err, check: name }, 'readiness check failed')
      }
    }))
    if (!ok) reply.code(503)
    return { status: ok ? 'ready' : 'unavailable', checks }
  })

  for (const cardPath of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
    fastify.get(cardPath, async function (request, reply) {
      reply.type('application/json; charset=utf-8')
      if (fixed !== undefined) return reply.send(fixed)
      // Without agent.url, the card points where the client reached us (port mappings, port 0, proxies).
      const url = `${request.protocol}://${request.host}${path}`
      return reply.send(JSON.stringify({ ...card, url, additionalInterfaces: [{ url, transport: 'JSONRPC' }] }))
    })
  }
}

function withTimeout (promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<void>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

export default wellKnownRoutes
