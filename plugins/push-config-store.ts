import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { InvalidPluginOptions } from '../services/kernel/errors.js'
import { MemoryPushConfigStore } from '../services/push/memory-store.js'
import { startSweeper, sweepIntervalMs } from '../services/kernel/sweeper.js'
import type { PushConfigStore } from '../services/push/store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Push notification configs per task: memory, Redis (`kvcache`) or PostgreSQL (`postgres`). */
    a2aPushConfigs: PushConfigStore
  }
}

export interface PushConfigStoreOptions {
  config: A2AConfig
}

/** The push config store of `push_notifications.backend` (CONTRACT.md §8.1). `webhook` behaves as `memory`. */
const pushConfigStore: FastifyPluginAsync<PushConfigStoreOptions> = async (fastify, opts) => {
  const settings = opts.config.push_notifications
  if (settings.backend === 'postgres') {
    const pool = fastify.a2aPostgres
    /* c8 ignore next -- validateConfig refuses postgres without services.postgres; a guard for direct use */
    if (pool === null) throw new InvalidPluginOptions('push_notifications.backend: postgres needs services.postgres')
    // Loaded only when used, with the driver (plugins/postgres.ts).
    const { PostgresPushConfigStore } = await import('../services/push/postgres-store.js')
    const { Sealing } = await import('../services/push/sealing.js')
    const sealing = settings.encryption_key === '' ? undefined : new Sealing(settings.encryption_key, settings.previous_encryption_keys)
    const store = new PostgresPushConfigStore(pool, { sealing })
    fastify.decorate('a2aPushConfigs', store)
    // A task's configs expire `tasks.ttl` after its last put (the push service passes it), as on Redis.
    const sweeper = startSweeper(() => store.deleteExpired(), {
      intervalMs: sweepIntervalMs(opts.config.tasks.ttl),
      log: fastify.log.child({ component: 'push-configs' }),
      failure: 'expired push configs not deleted'
    })
    fastify.addHook('preClose', async () => { await sweeper.stop() })
    return
  }
  if (settings.backend !== 'kvcache') {
    fastify.decorate('a2aPushConfigs', new MemoryPushConfigStore())
    return
  }
  const client = fastify.a2aRedis
  /* c8 ignore next -- validateConfig refuses kvcache without a cache service; a guard for direct use */
  if (client === null) throw new InvalidPluginOptions('push_notifications.backend: kvcache needs a services entry with type: cache')
  // Loaded only when used, as the Redis task store is (plugins/tasks.ts).
  const { RedisPushConfigStore } = await import('../services/push/redis-store.js')
  fastify.decorate('a2aPushConfigs', new RedisPushConfigStore(client, { keyPrefix: settings.key_prefix }))
}

export default fp(pushConfigStore, { name: 'a2a-push-config-store', fastify: '5.x', dependencies: ['a2a-redis', 'a2a-postgres'] })
