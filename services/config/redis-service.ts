import type { A2AConfig, CacheService } from '../../schemas/config.js'

/** The first `services` entry with `type: cache`: the Redis of the kvcache backends (CONTRACT.md §8.1). */
export function redisService (config: A2AConfig): CacheService | undefined {
  return Object.values(config.services).find((service): service is CacheService => service.type === 'cache')
}
