import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { SsePluginOptions } from './sse-types.js'
import { StreamHub } from './stream-hub.js'

export type { EventSource, SsePluginOptions, StreamClaim } from './sse-types.js'
export { StreamHub } from './stream-hub.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Open Server-Sent Event streams: opening, heartbeats, backpressure and shutdown. */
    a2aStreams: StreamHub
  }
}

/**
 * Server-Sent Events for the streaming methods (CONTRACT.md §7). Register it inside the route context that
 * streams; on close, open streams get their current snapshot and are ended.
 */
const ssePlugin: FastifyPluginAsync<SsePluginOptions> = async (fastify, opts) => {
  const hub = new StreamHub({ ...opts, answers: opts.answers ?? (fastify.hasDecorator('a2aReplies') ? fastify.a2aReplies : undefined) })
  fastify.decorate('a2aStreams', hub)
  fastify.addHook('preClose', async () => {
    if (opts.beforeShutdown !== undefined) await opts.beforeShutdown()
    hub.endAll()
    hub.close()
  })
  fastify.addHook('onClose', async () => {
    await opts.slots?.close()
  })
}

export default fp(ssePlugin, { name: 'a2a-sse', fastify: '5.x' })
