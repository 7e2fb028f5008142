import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse } from 'yaml'
import { loadConfig } from '../services/config/load.js'

const root = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url))

t.test('docker-compose.yml, nginx.conf and deploy/agent.yml agree with each other', async t => {
  const compose = parse(readFileSync(root('docker-compose.yml'), 'utf8'), { merge: true })
  const nginx = readFileSync(root('deploy/nginx.conf'), 'utf8')
  const services = compose.services
  t.same(Object.keys(services).sort(), ['agent-a', 'agent-b', 'jaeger', 'lb', 'postgres', 'redis'])
  t.equal(services.redis.ports, undefined, 'Redis publishes no host port')
  t.equal(services.postgres.ports, undefined, 'nor does PostgreSQL')
  t.same(services.postgres.profiles, ['postgres'], 'PostgreSQL starts only with its profile')
  t.same(services.jaeger.profiles, ['tracing'], 'Jaeger starts only with its profile')
  t.same(services.jaeger.ports, ['127.0.0.1:16686:16686'], 'its UI on this machine only')

  const upstream = [...nginx.matchAll(/^\s*server\s+([\w-]+):(\d+)/gm)].map(m => ({ host: m[1], port: Number(m[2]) }))
  t.same(upstream.map(u => u.host).sort(), ['agent-a', 'agent-b'], 'nginx balances over both agents')
  for (const name of ['agent-a', 'agent-b']) {
    const env = services[name].environment
    t.equal(Number(env.PORT), upstream.find(u => u.host === name)?.port, `${name} listens where nginx sends`)
    t.equal(env.HOST, '0.0.0.0')
    t.match(env.REDIS_URL, /^redis:\/\/redis:6379\//, `${name} reaches the compose Redis`)
    // eslint-disable-next-line no-template-curly-in-string -- compose's own substitution, not a template
    t.equal(env.A2A_CONFIG, '${A2A_COMPOSE_CONFIG:-/config/agent.yml}', 'deploy/agent.yml unless the PostgreSQL recipe names its own')
    t.match(env.DATABASE_URL, /^postgres:\/\/postgres:[^@]+@postgres:5432\/a2a$/, `${name} reaches the compose PostgreSQL`)
    t.same(services[name].depends_on.postgres, { condition: 'service_healthy', required: false }, `${name} waits for PostgreSQL when it runs`)
    t.ok(services[name].volumes.some((v: string) => v.startsWith('./deploy/agent.yml:/config/agent.yml')))
    t.ok(services[name].volumes.some((v: string) => v.startsWith('./deploy/agent-postgres.yml:/config/agent-postgres.yml')))
    t.equal(services[name].image, 'fastify-a2a:local', `${name} runs the one image`)
    // eslint-disable-next-line no-template-curly-in-string -- compose's own substitution, not a template
    t.equal(env.A2A_TELEMETRY, '${A2A_COMPOSE_TRACING:-false}', `${name} traces only when the recipe says so`)
    t.equal(env.OTEL_EXPORTER_OTLP_ENDPOINT, 'http://jaeger:4318', `${name} exports to the compose Jaeger's OTLP/HTTP port`)
    t.equal(services.lb.depends_on[name].condition, 'service_healthy', `nginx waits for ${name} to be healthy`)
  }
  t.equal(services['agent-a'].build, '.', 'built once, by agent-a')
  t.equal(services['agent-b'].build, undefined, 'agent-b builds nothing')
  t.equal(services['agent-b'].pull_policy, 'never', 'nor pulls the local image')
  const listen = Number(/^\s*listen\s+(\d+);/m.exec(nginx)?.[1])
  t.same(services.lb.ports, [`127.0.0.1:8000:${listen}`], 'one published port, on the nginx listener')
  t.ok(services.lb.volumes.includes('./deploy/nginx.conf:/etc/nginx/conf.d/default.conf:ro'))
  t.match(nginx, /proxy_buffering off;/, 'SSE is not buffered')
  t.match(nginx, /proxy_http_version 1\.1;/)
  const readTimeout = Number(/proxy_read_timeout (\d+)s;/.exec(nginx)?.[1])
  t.ok(readTimeout > 15, 'idle streams outlive the 15 s keep-alive')

  const { config } = await loadConfig({ file: root('deploy/agent.yml'), env: { REDIS_URL: services['agent-a'].environment.REDIS_URL }, cwd: root('.') })
  t.equal(config.tasks.backend, 'kvcache')
  t.equal(config.push_notifications.backend, 'kvcache')
  t.equal(config.services.cache.url, 'redis://redis:6379/0')
  t.equal(config.telemetry.enabled, false, 'no traces unless asked')
  const traced = await loadConfig({ file: root('deploy/agent.yml'), env: { A2A_TELEMETRY: 'true' }, cwd: root('.') })
  t.equal(traced.config.telemetry.enabled, true, 'A2A_TELEMETRY=true turns them on')
  // The client cannot choose its address: nginx overwrites the header, and the agents trust that one hop only.
  t.match(nginx, /proxy_set_header X-Forwarded-For \$remote_addr;/)
  // The card follows the Host the client reached the agents by: it must keep its port.
  t.match(nginx, /proxy_set_header Host \$http_host;/)
  t.notMatch(nginx, /proxy_add_x_forwarded_for/)
  t.equal(config.server.proxy_hops, 1)
  t.equal(config.server.trust_proxy, false)
  const maxBody = Number(/client_max_body_size (\d+)m;/.exec(nginx)?.[1]) * 1024 * 1024
  t.equal(maxBody, config.server.max_request_size, 'nginx lets through what the agent accepts')

  // The PostgreSQL profile's config: the same agent, its tasks and push configs in the compose PostgreSQL.
  const onPostgres = (await loadConfig({ file: root('deploy/agent-postgres.yml'), env: { DATABASE_URL: services['agent-a'].environment.DATABASE_URL }, cwd: root('.') })).config
  t.equal(onPostgres.tasks.backend, 'postgres')
  t.equal(onPostgres.push_notifications.backend, 'postgres')
  t.equal(onPostgres.services.postgres.url, services['agent-a'].environment.DATABASE_URL)
  t.same({ ...onPostgres, tasks: config.tasks, push_notifications: config.push_notifications, services: config.services }, config, 'otherwise the same as deploy/agent.yml')
})

t.test('the Dockerfile builds on node:20-slim, runs as a non-root user with production dependencies, and checks /health', async t => {
  const docker = readFileSync(root('Dockerfile'), 'utf8')
  t.match(docker, /^FROM node:20-slim AS build$/m)
  t.match(docker, /^FROM node:20-slim$/m)
  t.match(docker, /npm ci --omit=dev/)
  t.match(docker, /^USER node$/m)
  t.match(docker, /^RUN npm run build$/m, 'built by the build script itself (the compiler, then the protos)')
  t.match(docker, /^HEALTHCHECK .*\n.*\/health/m)
  t.match(docker, /^ENTRYPOINT \["node", "dist\/cli\.js"\]$/m)
  // glibc (node:20-slim is Debian) keeps freed large blocks unless its mmap threshold is fixed (docs/deploy.md, "Memory").
  t.match(docker, /^ENV MALLOC_MMAP_THRESHOLD_=131072$/m)
})
