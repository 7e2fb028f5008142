import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { RequestBudget } from '../services/serving/request-budget.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Bytes of requests in flight, bounded over every binding (`server.max_request_bytes`, services/serving/request-budget.ts). */
    a2aRequests: RequestBudget
  }
}

export interface RequestsPluginOptions {
  config: A2AConfig
}

/** The one request budget of this agent, which the HTTP routes and the gRPC binding share (not the answers' one). */
const requestsPlugin: FastifyPluginAsync<RequestsPluginOptions> = async (fastify, opts) => {
  const { server } = opts.config
  fastify.decorate('a2aRequests', new RequestBudget({
    maxBytes: server.max_request_bytes,
    maxBytesPerConnection: server.max_request_bytes_per_connection
  }))
}

export default fp(requestsPlugin, { name: 'a2a-requests', fastify: '5.x' })
