// `services.postgres`: the PostgreSQL server's entry, found by its name, validated like the others.
import t from 'tap'
import { validateConfig } from '../../../services/config/validate.js'
import { postgresService } from '../../../services/config/postgres-service.js'
import { redisService } from '../../../services/config/redis-service.js'
import { problemsOf } from './problems.js'

t.test('services.postgres takes its defaults; type may be left out; it is not a Redis entry', async t => {
  const config = validateConfig({ services: { postgres: { url: 'postgres://a2a@db.example.com/a2a' } } })
  t.same(postgresService(config), { url: 'postgres://a2a@db.example.com/a2a', type: 'postgres', migrate: true, pool_size: 10, statement_timeout_ms: 5000 })
  t.equal(redisService(config), undefined)
  const both = validateConfig({
    services: { cache: { type: 'cache' }, postgres: { type: 'postgres', url: 'postgresql://db/a2a', pool_size: '4', migrate: false } }
  })
  t.equal(redisService(both)?.url, 'redis://127.0.0.1:6379')
  t.match(postgresService(both), { pool_size: 4, migrate: false })
  t.equal(postgresService(validateConfig({})), undefined, 'none by default')
})

t.test('a wrong services.postgres says what is wrong, with its path', async t => {
  t.same(problemsOf(() => validateConfig({ services: { postgres: {} } })), ['services.postgres.url: required'])
  t.same(problemsOf(() => validateConfig({ services: { postgres: { url: 'redis://db:6379' } } })),
    ['services.postgres.url: must be a postgres:// or postgresql:// URL'])
  t.same(problemsOf(() => validateConfig({ services: { postgres: { url: 'postgres://db/a2a', pool: 4 } } })),
    ['services.postgres.pool: unknown key (did you mean services.postgres.pool_size?)'])
  t.match(problemsOf(() => validateConfig({ services: { postgres: { url: 'postgres://db/a2a', pool_size: 0, statement_timeout_ms: 0 } } })),
    [/^services\.postgres\.pool_size: must be >= 1/, /^services\.postgres\.statement_timeout_ms: must be >= 1/])
  t.same(problemsOf(() => validateConfig({ services: { postgres: { type: 'cache', url: 'postgres://db/a2a' } } })),
    ['services.postgres.type: must be postgres (got "cache")'])
  t.same(problemsOf(() => validateConfig({ services: { db: { type: 'postgres', url: 'postgres://db/a2a' } } })),
    ['services.db.type: must be cache; the PostgreSQL entry is the one named services.postgres (got "postgres")'])
})
