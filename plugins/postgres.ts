import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { Pool } from 'pg'
import type { A2AConfig } from '../schemas/config.js'
import { postgresService } from '../services/config/postgres-service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The pool of `services.postgres`, null without one (docs/stores.md, "PostgreSQL"). */
    a2aPostgres: Pool | null
  }
}

export interface PostgresPluginOptions {
  config: A2AConfig
}

/**
 * One pool for everything that lives in PostgreSQL, made only when a backend uses it (`tasks.backend` or
 * `push_notifications.backend` postgres).
 * Before the app is ready, the database is migrated (or its schema checked): a server that cannot reach it, or finds
 * a schema it cannot use, fails its start with one line (PostgresUnreachable, SchemaMismatch) and opens nothing.
 * The pool is ended on close, after the stores that borrow it.
 */
const postgresPlugin: FastifyPluginAsync<PostgresPluginOptions> = async (fastify, opts) => {
  const service = postgresService(opts.config)
  const { tasks, push_notifications: push } = opts.config
  if (service === undefined || (tasks.backend !== 'postgres' && !(push.enabled && push.backend === 'postgres'))) {
    fastify.decorate('a2aPostgres', null)
    return
  }
  // Loaded only when PostgreSQL is used: the driver costs memory a memory or Redis agent need not pay.
  const { createPool, prepareDatabase } = await import('../services/postgres/pool.js')
  const log = fastify.log.child({ component: 'postgres' })
  await prepareDatabase(service, log)
  const pool = createPool(service, log)
  fastify.decorate('a2aPostgres', pool)
  fastify.addHook('onClose', async () => {
    await pool.end()
  })
}

export default fp(postgresPlugin, { name: 'a2a-postgres', fastify: '5.x' })
