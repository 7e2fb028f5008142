import type { A2AConfig, PostgresService } from '../../schemas/config.js'

/** `services.postgres`: the PostgreSQL server of the postgres backends (docs/stores.md). */
export function postgresService (config: A2AConfig): PostgresService | undefined {
  const service = config.services.postgres
  return service?.type === 'postgres' ? service : undefined
}
