/* eslint-disable no-template-curly-in-string -- the strings hold ${VAR} references on purpose */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import {
  isConfigError,
  loadConfig,
  resolveConfigPath,
  substituteEnv,
  validateConfig
} from '../../../services/config/load.js'
import { initTemplate, writeTemplate } from '../../../services/config/template.js'
import { problemsOf, problemsOfLoad } from './problems.js'

const DEFAULTS = validateConfig({})

t.test('validation', async t => {
  t.test('an empty input gives the schema defaults', async t => {
    t.same(validateConfig(undefined), DEFAULTS)
    t.same(validateConfig(null), DEFAULTS)
    t.match(DEFAULTS, {
      agent: { name: 'Echo Agent', executor: 'builtin', skills: [] },
      server: { host: '127.0.0.1', port: 8000, log_level: 'info', request_timeout: 60, max_request_size: 16777216 },
      security: { enabled: false, auth: { api_key: { header: 'X-API-Key', keys: [] } } },
      push_notifications: { enabled: true, backend: 'memory', config: { timeout: 10, retry_delay: 1 } },
      tasks: { backend: 'memory' },
      services: {},
      console: { enabled: 'auto' }
    })
  })

  t.test('the input is not modified and defaults fill what it leaves out', async t => {
    const input = { agent: { name: 'Mine' }, server: { port: 9000 } }
    const config = validateConfig(input)
    t.same(input, { agent: { name: 'Mine' }, server: { port: 9000 } })
    t.equal(config.agent.name, 'Mine')
    t.equal(config.agent.version, '1.0.0')
    t.equal(config.server.port, 9000)
    t.equal(config.server.host, '127.0.0.1')
  })

  t.test('substituted strings are coerced to the schema types', async t => {
    const config = validateConfig({
      server: { port: '9000' },
      metrics: { enabled: 'true' },
      console: { enabled: 'false' },
      push_notifications: { config: { retry_delay: '0.5' } }
    })
    t.equal(config.server.port, 9000)
    t.equal(config.metrics.enabled, true)
    t.equal(config.console.enabled, false)
    t.equal(config.push_notifications.config.retry_delay, 0.5)
    t.equal(validateConfig({ console: { enabled: true } }).console.enabled, true)
    t.equal(validateConfig({ console: { enabled: 'auto' } }).console.enabled, 'auto')
  })

  t.test('an unknown key is reported with its full path', async t => {
    t.same(problemsOf(() => validateConfig({ push_notifications: { bogus: 1 } })), ['push_notifications.bogus: unknown key'])
    t.same(problemsOf(() => validateConfig({ bogus: 1 })), ['bogus: unknown key'])
  })

  t.test('a key named __proto__ is an unknown key, not a prototype', async t => {
    t.same(problemsOf(() => validateConfig(JSON.parse('{"__proto__":{"polluted":true}}'))), ['__proto__: unknown key'])
    t.same(problemsOf(() => validateConfig(parse('__proto__:\n  polluted: true\n'))), ['__proto__: unknown key'])
  })

  t.test('a wrong type is reported with its full path', async t => {
    t.same(problemsOf(() => validateConfig({ server: { port: 'eighty' } })), ['server.port: must be an integer (got "eighty")'])
    t.same(problemsOf(() => validateConfig({ server: 'x' })), ['server: must be a mapping (got "x")'])
    t.same(problemsOf(() => validateConfig('x')), ['(root): must be a mapping (got "x")'])
  })

  t.test('an out-of-range value is reported with its full path', async t => {
    t.same(problemsOf(() => validateConfig({ push_notifications: { config: { timeout: 0 } } })),
      ['push_notifications.config.timeout: must be >= 1 (got 0)'])
    t.same(problemsOf(() => validateConfig({ server: { max_request_size: 10 } })), ['server.max_request_size: must be >= 1024 (got 10)'])
  })

  t.test('a missing required key is reported, with array indexes as path segments', async t => {
    t.same(problemsOf(() => validateConfig({ agent: { description: 'x' } })), ['agent.name: required'])
    t.same(problemsOf(() => validateConfig({ agent: { name: 'A', skills: [{ id: 'a', name: 'A' }, { name: 'B' }] } })),
      ['agent.skills.1.id: required'])
  })

  t.test('enumerations, constants and empty strings get readable messages', async t => {
    t.same(problemsOf(() => validateConfig({ tasks: { backend: 'redis' } })), ['tasks.backend: must be one of memory, kvcache, postgres (got "redis")'])
    t.same(problemsOf(() => validateConfig({ console: { enabled: 'yes' } })), ['console.enabled: must be one of auto, true, false (got "yes")'])
    t.same(problemsOf(() => validateConfig({ services: { 'a/b~c': { type: 'db' } } })), ['services.a/b~c.type: must be cache (got "db")'])
    t.same(problemsOf(() => validateConfig({ agent: { name: '' } })), ['agent.name: must have at least 1 character(s)'])
  })

  t.test('every problem is reported at once', async t => {
    let error: unknown
    try {
      validateConfig({
        agent: { skills: [{}] },
        server: { port: 'x', bogus: true },
        push_notifications: { config: { timeout: 0 } },
        tasks: { backend: 'nope' }
      })
    } catch (err) {
      error = err
    }
    t.ok(isConfigError(error))
    t.match(error, { code: 'A2A_ERR_INVALID_CONFIG', message: /push_notifications\.config\.timeout: must be >= 1/ })
    const problems = isConfigError(error) ? error.problems : []
    t.same([...problems].sort(), [
      'agent.name: required',
      'agent.skills.0.id: required',
      'agent.skills.0.name: required',
      'push_notifications.config.timeout: must be >= 1 (got 0)',
      'server.bogus: unknown key',
      'server.port: must be an integer (got "x")',
      'tasks.backend: must be one of memory, kvcache, postgres (got "nope")'
    ])
  })

  t.test('isConfigError recognizes only configuration errors', async t => {
    t.equal(isConfigError(new Error('x')), false)
    t.equal(isConfigError('x'), false)
  })
})

t.test('semantic checks', async t => {
  const key = { keys: [{ key: 'k' }] }

  t.test('security on with auth_type oauth2 needs an oauth2 section', async t => {
    t.same(problemsOf(() => validateConfig({ security: { enabled: true, auth_type: 'oauth2', auth: { api_key: key } } })),
      ['security.auth.oauth2: required when security.auth_type is oauth2'])
  })

  t.test('security on needs at least one credential source', async t => {
    t.same(problemsOf(() => validateConfig({ security: { enabled: true } })),
      ['security.auth: security is enabled but no api_key.keys, bearer.tokens or oauth2 is configured'])
    t.equal(validateConfig({ security: { enabled: true, auth: { api_key: key } } }).security.enabled, true)
    t.equal(validateConfig({
      security: { enabled: true, auth_type: 'bearer', auth: { bearer: { tokens: [{ token: 't', user: 'u' }] } } }
    }).security.auth_type, 'bearer')
    const oauth2 = { introspection_endpoint: 'https://idp.example.com/introspect', client_id: 'c', client_secret: 's' }
    t.match(validateConfig({ security: { enabled: true, auth_type: 'oauth2', auth: { oauth2 } } }).security.auth.oauth2,
      { ...oauth2, validation_strategy: 'introspection', cache_ttl: 60 })
  })

  t.test('a kvcache backend needs a cache service', async t => {
    t.same(problemsOf(() => validateConfig({ push_notifications: { backend: 'kvcache' }, tasks: { backend: 'kvcache' } })), [
      'push_notifications.backend: kvcache needs a services entry with type: cache',
      'tasks.backend: kvcache needs a services entry with type: cache'
    ])
    const config = validateConfig({
      tasks: { backend: 'kvcache' }, push_notifications: { backend: 'kvcache' }, services: { redis: { type: 'cache' } }
    })
    t.same(config.services.redis, { type: 'cache', url: 'redis://127.0.0.1:6379', db: 0, max_connections: 20, retry_on_timeout: true })
  })

  t.test('shared tasks need shared push configs, unless push is off', async t => {
    const services = { redis: { type: 'cache' } }
    t.same(problemsOf(() => validateConfig({ tasks: { backend: 'kvcache' }, services })), [
      'push_notifications.backend: must be kvcache when tasks.backend is kvcache (instances share webhook delivery)'
    ])
    t.equal(validateConfig({ tasks: { backend: 'kvcache' }, push_notifications: { enabled: false }, services }).tasks.backend, 'kvcache')
  })

  t.test('protocol.grpc takes CONTRACT.md §13\'s keys; its port is its own, and port 0 needs an advertised URL', async t => {
    const limits = { max_connections: 1000, handshake_timeout: 20, max_concurrent_streams: 100, max_session_memory: 32, idle_timeout: 300, keepalive_time: 60, keepalive_timeout: 20 }
    t.same(validateConfig({}).protocol.grpc, { enabled: false, port: 50051, advertised_url: '', ...limits })
    t.same(validateConfig({ protocol: { grpc: { enabled: true, port: 9090, advertised_url: 'grpc://agent.example.com:443' } } }).protocol.grpc,
      { enabled: true, port: 9090, advertised_url: 'grpc://agent.example.com:443', ...limits })
    t.match(problemsOf(() => validateConfig({ protocol: { grpc: { max_connections: 0 } } })), [/^protocol\.grpc\.max_connections: must be >= 1/])
    t.same(problemsOf(() => validateConfig({ server: { port: 9090 }, protocol: { grpc: { enabled: true, port: 9090 } } })), [
      'protocol.grpc.port: must differ from server.port (the gRPC server has a port of its own)'
    ])
    t.same(problemsOf(() => validateConfig({ protocol: { grpc: { enabled: true, port: 0 } } })), [
      'protocol.grpc.advertised_url: needed with protocol.grpc.port 0 (the card cannot name a port chosen at start)'
    ])
    t.equal(validateConfig({ protocol: { grpc: { enabled: true, port: 0, advertised_url: '127.0.0.1:7000' } } }).protocol.grpc.port, 0)
    t.match(problemsOf(() => validateConfig({ protocol: { grpc: { port: 70000 } } })), [/^protocol\.grpc\.port: must be <= 65535/])
  })

  t.test('URLs must parse and use the expected schemes', async t => {
    const oauth2 = { introspection_endpoint: 'ftp://idp.example.com/', client_id: 'c', client_secret: 's' }
    t.same(problemsOf(() => validateConfig({
      agent: { name: 'A', url: 'not a url' },
      security: { auth: { oauth2 } },
      services: { a: { type: 'cache', url: 'http://redis:6379' }, b: { type: 'cache', url: 'redis://' } }
    })), [
      'agent.url: must be a http:// or https:// URL',
      'security.auth.oauth2.introspection_endpoint: must be a http:// or https:// URL',
      'services.a.url: must be a redis:// or rediss:// URL',
      'services.b.url: must be a redis:// or rediss:// URL'
    ])
    t.same(problemsOf(() => validateConfig({ agent: { name: 'A', url: 'ftp://agent.example.com/' } })),
      ['agent.url: must be a http:// or https:// URL'])
    const config = validateConfig({
      agent: { name: 'A', url: 'https://agent.example.com/a2a/' },
      services: { cache: { type: 'cache', url: 'rediss://user:pw@redis.example.com:6380/2' } }
    })
    t.equal(config.agent.url, 'https://agent.example.com/a2a/')
  })

  t.test('allowed_networks entries must be CIDRs', async t => {
    const allowed = ['10.0.0.0/8', '::1/128', '10.0.0.0', '10.0.0.0/33', 'fe80::/129', 'example.com/8', '127.0.0.1/x']
    t.same(problemsOf(() => validateConfig({ push_notifications: { config: { allowed_networks: allowed } } })), [
      'push_notifications.config.allowed_networks.2: "10.0.0.0" is not a CIDR such as 10.0.0.0/8',
      'push_notifications.config.allowed_networks.3: "10.0.0.0/33" is not a CIDR such as 10.0.0.0/8',
      'push_notifications.config.allowed_networks.4: "fe80::/129" is not a CIDR such as 10.0.0.0/8',
      'push_notifications.config.allowed_networks.5: "example.com/8" is not a CIDR such as 10.0.0.0/8',
      'push_notifications.config.allowed_networks.6: "127.0.0.1/x" is not a CIDR such as 10.0.0.0/8'
    ])
    t.same(validateConfig({ push_notifications: { config: { allowed_networks: ['127.0.0.0/8', '::/0'] } } })
      .push_notifications.config.allowed_networks, ['127.0.0.0/8', '::/0'])
  })

  t.test('agent.llm has its defaults, its ranges, and an http(s) base_url', async t => {
    t.same(DEFAULTS.agent.llm, {
      base_url: 'https://api.openai.com/v1',
      api_key: '',
      model: 'gpt-4o-mini',
      system_prompt: 'You are a helpful assistant.',
      temperature: 0.2,
      max_tokens: 1024,
      timeout: 60,
      max_tool_rounds: 5,
      history_tokens: 8000,
      max_retries: 3,
      retry_delay: 1
    })
    const llm = (values: Record<string, unknown>) => problemsOf(() => validateConfig({ agent: { name: 'A', executor: 'openai', llm: values } }))
    t.same(llm({ temperature: 2.5, max_tokens: 0, timeout: 0, max_tool_rounds: -1, history_tokens: 1.5, max_retries: 21, retry_delay: -1 }), [
      'agent.llm.temperature: must be <= 2 (got 2.5)',
      'agent.llm.max_tokens: must be >= 1 (got 0)',
      'agent.llm.timeout: must be > 0 (got 0)',
      'agent.llm.max_tool_rounds: must be >= 0 (got -1)',
      'agent.llm.history_tokens: must be an integer (got 1.5)',
      'agent.llm.max_retries: must be <= 20 (got 21)',
      'agent.llm.retry_delay: must be >= 0 (got -1)'
    ])
    t.same(llm({ model: '', api_key: 5, bogus: true }), ['agent.llm.bogus: unknown key', 'agent.llm.model: must have at least 1 character(s)'])
    t.same(llm({ base_url: 'ftp://models.example.com/' }), ['agent.llm.base_url: must be a http:// or https:// URL'])
    t.same(llm({ base_url: 'localhost:11434' }), ['agent.llm.base_url: must be a http:// or https:// URL'])
    t.equal(validateConfig({ agent: { name: 'A', llm: { base_url: 'http://127.0.0.1:11434/v1', api_key: 'k' } } }).agent.llm.api_key, 'k')
  })

  t.test('agent.llm.api_key reads the environment, as the template writes it', async t => {
    const input = substituteEnv({ agent: { name: 'A', llm: { api_key: '${OPENAI_API_KEY:-}' } } }, { OPENAI_API_KEY: 'sk-x' })
    t.equal(validateConfig(input).agent.llm.api_key, 'sk-x')
    t.equal(validateConfig(substituteEnv(parse(initTemplate()), { OPENAI_API_KEY: 'sk-y' })).agent.llm.api_key, 'sk-y')
  })

  t.test('semantic checks run only once the schema passes', async t => {
    t.same(problemsOf(() => validateConfig({ security: { enabled: true }, server: { port: -1 } })), ['server.port: must be >= 0 (got -1)'])
  })
})

t.test('environment substitution', async t => {
  t.test('${VAR} takes the variable, empty included', async t => {
    t.equal(substituteEnv('${A}', { A: 'a' }), 'a')
    t.equal(substituteEnv('x${A}y', { A: '' }), 'xy')
  })

  t.test('${VAR:default} uses the default only when the variable is unset', async t => {
    t.equal(substituteEnv('${B:def}', {}), 'def')
    t.equal(substituteEnv('${B:def}', { B: '' }), '')
    t.equal(substituteEnv('${B:def}', { B: 'b' }), 'b')
    t.equal(substituteEnv('${B:}', {}), '')
    t.equal(substituteEnv('${B:http://h:1/}', {}), 'http://h:1/')
  })

  t.test('${VAR:-default} uses the default when the variable is unset or empty', async t => {
    t.equal(substituteEnv('${C:-def}', {}), 'def')
    t.equal(substituteEnv('${C:-def}', { C: '' }), 'def')
    t.equal(substituteEnv('${C:-def}', { C: 'c' }), 'c')
    t.equal(substituteEnv('${C:-}', {}), '')
  })

  t.test('${VAR:?message} requires the variable and reports the message', async t => {
    t.equal(substituteEnv('${D:?set D}', { D: 'd' }), 'd')
    t.same(problemsOf(() => substituteEnv({ a: { b: '${D:?set D to the token}' } }, {})),
      ['a.b: environment variable D is not set: set D to the token'])
    t.same(problemsOf(() => substituteEnv({ a: '${D:?}' }, { D: '' })), ['a: environment variable D is empty'])
  })

  t.test('a missing variable with no default names the variable and the config path', async t => {
    const input = { security: { auth: { oauth2: { client_id: '${OAUTH_CLIENT_ID}', client_secret: '${OAUTH_CLIENT_SECRET}' } } } }
    t.same(problemsOf(() => substituteEnv(input, { OAUTH_CLIENT_ID: 'id' })),
      ['security.auth.oauth2.client_secret: environment variable OAUTH_CLIENT_SECRET is not set'])
    t.same(problemsOf(() => substituteEnv({ agent: { skills: [{ id: '${X}', name: '${Y}' }] } }, {})), [
      'agent.skills.0.id: environment variable X is not set',
      'agent.skills.0.name: environment variable Y is not set'
    ])
    t.same(problemsOf(() => substituteEnv('${X}', {})), ['(root): environment variable X is not set'])
  })

  t.test('several references in one string are all replaced', async t => {
    t.equal(substituteEnv('redis://${H}:${P:-6379}/${DB:0}', { H: 'cache', P: '' }), 'redis://cache:6379/0')
  })

  t.test('$${ is a literal ${ and other dollars are left alone', async t => {
    t.equal(substituteEnv('$${A} costs $5 and $$ and $HOME', { A: 'a' }), '${A} costs $5 and $$ and $HOME')
  })

  t.test('a malformed reference is an error', async t => {
    t.same(problemsOf(() => substituteEnv({ a: '${1X}', b: 'x${Y', c: '${}', d: '${A:-${B}}' }, {})), [
      'a: "${1X}" is not a valid variable reference',
      'b: "${" has no closing "}" (write "$${" for a literal "${")',
      'c: "${}" is not a valid variable reference',
      'd: "${A:-${B}" is not a valid variable reference'
    ])
  })

  t.test('only string values change, never keys, and the input is not modified', async t => {
    const input = { '${A}': '${A}', list: ['${A}', 1, true, null], n: 2 }
    t.same(substituteEnv(input, { A: 'a' }), { '${A}': 'a', list: ['a', 1, true, null], n: 2 })
    t.same(input, { '${A}': '${A}', list: ['${A}', 1, true, null], n: 2 })
  })
})

t.test('config file lookup', async t => {
  t.test('an explicit file wins, relative to cwd', async t => {
    t.equal(resolveConfigPath({ file: 'x.yml', env: { A2A_CONFIG: '/etc/a.yml' }, cwd: '/srv' }), '/srv/x.yml')
    t.equal(resolveConfigPath({ file: '/abs/x.yml', env: {}, cwd: '/srv' }), '/abs/x.yml')
  })

  t.test('A2A_CONFIG comes next, and an empty one counts as unset', async t => {
    const dir = t.testdir({ 'agent.yml': 'agent:\n  name: Local\n' })
    t.equal(resolveConfigPath({ env: { A2A_CONFIG: 'conf/a.yml' }, cwd: dir }), join(dir, 'conf/a.yml'))
    t.equal(resolveConfigPath({ env: { A2A_CONFIG: '' }, cwd: dir }), join(dir, 'agent.yml'))
  })

  t.test('./agent.yml is used when it exists, else there is no file', async t => {
    const dir = t.testdir({ 'agent.yml': '' })
    t.equal(resolveConfigPath({ env: {}, cwd: dir }), join(dir, 'agent.yml'))
    t.equal(resolveConfigPath({ env: {}, cwd: t.testdir({}) }), undefined)
  })
})

t.test('loading', async t => {
  t.test('with no file at all the config is the defaults', async t => {
    const { config, path } = await loadConfig({ env: {}, cwd: t.testdir({}) })
    t.equal(path, undefined)
    t.same(config, DEFAULTS)
  })

  t.test('process.env and process.cwd() are the defaults of the options', async t => {
    const dir = t.testdir({ 'agent.yml': 'agent:\n  name: From cwd\n' })
    const cwd = process.cwd()
    const saved = { ...process.env }
    process.chdir(dir)
    for (const name of ['A2A_CONFIG', 'HOST', 'PORT', 'LOG_LEVEL', 'REDIS_URL']) delete process.env[name]
    t.teardown(() => {
      process.chdir(cwd)
      process.env = saved
    })
    const { config, path } = await loadConfig()
    t.equal(config.agent.name, 'From cwd')
    t.equal(path, join(dir, 'agent.yml'))
  })

  t.test('./agent.yml is found through cwd', async t => {
    const dir = t.testdir({ 'agent.yml': 'agent:\n  name: Local Agent\nserver:\n  port: 9100\n' })
    const { config, path } = await loadConfig({ env: {}, cwd: dir })
    t.equal(path, join(dir, 'agent.yml'))
    t.equal(config.agent.name, 'Local Agent')
    t.equal(config.server.port, 9100)
    t.equal(config.server.host, '127.0.0.1')
  })

  t.test('A2A_CONFIG names the file, and an empty one falls through to ./agent.yml', async t => {
    const dir = t.testdir({ 'agent.yml': 'agent:\n  name: Local\n', conf: { 'a.yml': 'agent:\n  name: From env\n' } })
    t.equal((await loadConfig({ env: { A2A_CONFIG: 'conf/a.yml' }, cwd: dir })).config.agent.name, 'From env')
    t.equal((await loadConfig({ env: { A2A_CONFIG: '' }, cwd: dir })).config.agent.name, 'Local')
    t.equal((await loadConfig({ file: 'agent.yml', env: { A2A_CONFIG: 'conf/a.yml' }, cwd: dir })).config.agent.name, 'Local')
  })

  t.test('environment variables are substituted before validation', async t => {
    const dir = t.testdir({
      'agent.yml': [
        'agent:',
        '  name: ${AGENT_NAME:-Subst Agent}',
        'server:',
        '  port: ${MY_PORT}',
        'security:',
        '  enabled: true',
        '  auth:',
        '    api_key:',
        '      keys:',
        '        - key: ${API_KEY:?the CI key}',
        ''
      ].join('\n')
    })
    const { config } = await loadConfig({ env: { MY_PORT: '9200', API_KEY: 'secret' }, cwd: dir })
    t.equal(config.agent.name, 'Subst Agent')
    t.equal(config.server.port, 9200)
    t.same(config.security.auth.api_key.keys, [{ key: 'secret', scopes: [] }])
    t.same(await problemsOfLoad(loadConfig({ env: {}, cwd: dir })), [
      'server.port: environment variable MY_PORT is not set',
      'security.auth.api_key.keys.0.key: environment variable API_KEY is not set: the CI key'
    ])
  })

  t.test('HOST, PORT and LOG_LEVEL override the file, and empty ones do not', async t => {
    const dir = t.testdir({ 'agent.yml': 'server:\n  host: 10.0.0.1\n  port: 7000\n  log_level: warn\n' })
    const { config } = await loadConfig({ env: { HOST: '0.0.0.0', PORT: '7100', LOG_LEVEL: 'debug' }, cwd: dir })
    t.match(config.server, { host: '0.0.0.0', port: 7100, log_level: 'debug' })
    const unchanged = await loadConfig({ env: { HOST: '', PORT: '', LOG_LEVEL: '', REDIS_URL: '' }, cwd: dir })
    t.match(unchanged.config.server, { host: '10.0.0.1', port: 7000, log_level: 'warn' })
    t.same(unchanged.config.services, {})
    const defaults = await loadConfig({ env: { PORT: '7300' }, cwd: t.testdir({}) })
    t.equal(defaults.config.server.port, 7300)
    t.same(await problemsOfLoad(loadConfig({ env: { PORT: 'http' }, cwd: dir })), ['server.port: must be an integer (got "http" from $PORT)'])
  })

  t.test('CLI overrides win over the environment, which wins over the file', async t => {
    const dir = t.testdir({ 'agent.yml': 'server:\n  host: file-host\n  port: 7000\n  log_level: warn\n' })
    const env = { HOST: 'env-host', PORT: '7100', LOG_LEVEL: 'error' }
    const { config } = await loadConfig({ env, cwd: dir, overrides: { host: 'cli-host', port: 7200, logLevel: 'trace' } })
    t.match(config.server, { host: 'cli-host', port: 7200, log_level: 'trace' })
    const partial = await loadConfig({ env, cwd: dir, overrides: { port: 0 } })
    t.match(partial.config.server, { host: 'env-host', port: 0, log_level: 'error' })
  })

  t.test('a server section that is not a mapping is reported, not replaced', async t => {
    const dir = t.testdir({ 'agent.yml': 'server: 8080\n' })
    t.same(await problemsOfLoad(loadConfig({ env: { HOST: 'h' }, cwd: dir })), ['server: must be a mapping (got 8080)'])
  })

  t.test('REDIS_URL creates services.cache when no cache service exists, its path picking the db', async t => {
    const { config } = await loadConfig({ env: { REDIS_URL: 'redis://r.example:6379/3' }, cwd: t.testdir({}) })
    t.same(config.services, {
      cache: { type: 'cache', url: 'redis://r.example:6379/3', db: 3, max_connections: 20, retry_on_timeout: true }
    })
  })

  t.test('REDIS_URL replaces the url of the first cache service, and without a path its db stays', async t => {
    const dir = t.testdir({
      'agent.yml': 'services:\n  redis:\n    type: cache\n    url: redis://old:6379\n    db: 5\n' +
        '  other:\n    type: cache\n    url: redis://other:6379\n'
    })
    const { config } = await loadConfig({ env: { REDIS_URL: 'rediss://new.example:6380' }, cwd: dir })
    t.match(config.services, { redis: { url: 'rediss://new.example:6380', db: 5 }, other: { url: 'redis://other:6379', db: 0 } })
    const withDb = await loadConfig({ env: { REDIS_URL: 'redis://new.example:6379/7' }, cwd: dir })
    t.match(withDb.config.services.redis, { url: 'redis://new.example:6379/7', db: 7 })
  })

  t.test('a bad REDIS_URL or services section is reported by validation', async t => {
    const empty = t.testdir({})
    t.same(await problemsOfLoad(loadConfig({ env: { REDIS_URL: 'not a url' }, cwd: empty })),
      ['services.cache.url: must be a redis:// or rediss:// URL (from $REDIS_URL)'])
    t.same(await problemsOfLoad(loadConfig({ env: { REDIS_URL: 'redis://h/99' }, cwd: empty })),
      ['services.cache.db: must be <= 15 (got 99 from $REDIS_URL)'])
    const notMapping = t.testdir({ 'agent.yml': 'services: [a]\n' })
    t.same(await problemsOfLoad(loadConfig({ env: { REDIS_URL: 'redis://h' }, cwd: notMapping })), ['services: must be a mapping (got a list)'])
    const notCache = t.testdir({ 'agent.yml': 'services:\n  cache:\n    type: db\n' })
    t.same(await problemsOfLoad(loadConfig({ env: { REDIS_URL: 'redis://h' }, cwd: notCache })),
      ['services.cache.type: must be cache (got "db")'])
  })

  t.test('an empty or comment-only file gives the defaults', async t => {
    const dir = t.testdir({ 'agent.yml': '# nothing here\n' })
    t.same((await loadConfig({ env: {}, cwd: dir })).config, DEFAULTS)
  })

  t.test('a YAML syntax error names the file, line and column', async t => {
    const dir = t.testdir({ 'agent.yml': 'agent:\n  name: [unclosed\nserver:\n  port: 1\n' })
    const problems = await problemsOfLoad(loadConfig({ env: {}, cwd: dir }))
    t.ok(problems.length > 0)
    t.match(problems[0], `${join(dir, 'agent.yml')}:`)
    t.match(problems[0], /agent\.yml:\d+:\d+: \S/)
  })

  t.test('a duplicate key is a YAML error', async t => {
    const dir = t.testdir({ 'agent.yml': 'server:\n  port: 1\n  port: 2\n' })
    const problems = await problemsOfLoad(loadConfig({ env: {}, cwd: dir }))
    t.match(problems, [/agent\.yml:3:3: .*unique/])
  })

  t.test('a top level that is not a mapping names the file and line', async t => {
    const dir = t.testdir({ 'list.yml': '# a list\n- a\n- b\n', 'scalar.yml': 'hello\n' })
    t.same(await problemsOfLoad(loadConfig({ file: 'list.yml', env: {}, cwd: dir })),
      [`${join(dir, 'list.yml')}:2:1: the top level must be a mapping of keys (agent:, server:, ...)`])
    t.same(await problemsOfLoad(loadConfig({ file: 'scalar.yml', env: {}, cwd: dir })),
      [`${join(dir, 'scalar.yml')}:1:1: the top level must be a mapping of keys (agent:, server:, ...)`])
  })

  t.test('an alias bomb is refused', async t => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]']
    for (let i = 0; i < 5; i++) {
      const prev = String.fromCharCode(97 + i)
      const next = String.fromCharCode(98 + i)
      lines.push(`${next}: &${next} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`)
    }
    const dir = t.testdir({ 'agent.yml': lines.join('\n') + '\n' })
    t.match(await problemsOfLoad(loadConfig({ env: {}, cwd: dir })), [/agent\.yml: .*alias/i])
  })

  t.test('a config file that cannot be read is reported', async t => {
    const dir = t.testdir({})
    t.same(await problemsOfLoad(loadConfig({ file: 'missing.yml', env: {}, cwd: dir })),
      [`${join(dir, 'missing.yml')}: cannot read the config file (ENOENT)`])
  })
})

t.test('the init template', async t => {
  t.test('validates as is, with no environment, and equals the defaults', async t => {
    const config = validateConfig(substituteEnv(parse(initTemplate()), {}))
    t.same(config, DEFAULTS)
  })

  t.test('every top-level section is in it', async t => {
    t.same(Object.keys(parse(initTemplate())), Object.keys(DEFAULTS))
  })

  t.test('writeTemplate writes the file and refuses to overwrite it without force', async t => {
    const dir = t.testdir({})
    const file = join(dir, 'agent.yml')
    t.equal(await writeTemplate(file), true)
    t.equal(readFileSync(file, 'utf8'), initTemplate())
    writeFileSync(file, 'mine\n')
    t.equal(await writeTemplate(file), false)
    t.equal(readFileSync(file, 'utf8'), 'mine\n')
    t.equal(await writeTemplate(file, { force: true }), true)
    t.equal(readFileSync(file, 'utf8'), initTemplate())
  })

  t.test('writeTemplate passes on other write errors', async t => {
    const dir = t.testdir({})
    mkdirSync(join(dir, 'taken'))
    await t.rejects(writeTemplate(join(dir, 'missing', 'agent.yml')), { code: 'ENOENT' })
    await t.rejects(writeTemplate(join(dir, 'taken'), { force: true }), { code: 'EISDIR' })
  })
})
