import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { Redis } from 'ioredis'
import type { A2AConfig } from '../schemas/config.js'
import { redisService } from '../services/config/redis-service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Redis of the first `services` entry with `type: cache` (or the client given), null without one. */
    a2aRedis: Redis | null
  }
}

export interface RedisPluginOptions {
  config: A2AConfig
  /** A client to borrow: never closed by us. */
  redis?: Redis
}

/**
 * How long QUIT may wait at close before the socket is dropped: a round trip to a Redis that answers takes
 * milliseconds. It comes after the task drain's last writes (each up to the 2 s command timeout) and the webhook
 * queue's own quit: 1 s keeps a close with Redis stalled within `shutdown_timeout` + 3.5 s, under the 5 s force exit.
 */
const QUIT_TIMEOUT_MS = 1_000

/**
 * One Redis client for everything that lives in Redis (CONTRACT.md §8.1, §9 and §10): push configs, rate-limit
 * buckets, and later tasks and events. Made from the config only when a cache service is configured; closed on
 * close only when we made it.
 */
const redisPlugin: FastifyPluginAsync<RedisPluginOptions> = async (fastify, opts) => {
  const service = redisService(opts.config)
  if (opts.redis !== undefined || service === undefined) {
    fastify.decorate('a2aRedis', opts.redis ?? null)
    return
  }
  // Loaded only when Redis is configured: ioredis costs memory a memory-only agent need not pay.
  const { createRedisClient, quitWithin } = await import('../services/redis/client.js')
  const owned = createRedisClient(service, { log: fastify.log.child({ component: 'redis' }) })
  fastify.decorate('a2aRedis', owned)
  fastify.addHook('onClose', async () => {
    await quitWithin(owned, QUIT_TIMEOUT_MS, fastify.log)
  })
}

export default fp(redisPlugin, { name: 'a2a-redis', fastify: '5.x' })
