/* eslint-disable no-template-curly-in-string -- the strings hold ${VAR} references on purpose */
// A problem line names where its value came from when that is not the file's own text: $PORT, a flag, a ${VAR} with
// its file, line and column (services/config/load.ts, substitute.ts, explain.ts).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig, substituteEnv } from '../../../services/config/load.js'
import { problemsOfLoad } from './problems.js'

t.test('a problem with a value from the environment names where it came from', async t => {
  t.test('HOST, PORT and LOG_LEVEL name their variable', async t => {
    const env = { HOST: '', PORT: 'abc', LOG_LEVEL: 'loud' }
    t.same(await problemsOfLoad(loadConfig({ env, cwd: t.testdir({}) })), [
      'server.port: must be an integer (got "abc" from $PORT)',
      'server.log_level: must be one of fatal, error, warn, info, debug, trace, silent (got "loud" from $LOG_LEVEL)'
    ])
    const dir = t.testdir({ 'agent.yml': 'server:\n  host: ""\n' })
    t.same(await problemsOfLoad(loadConfig({ env: {}, cwd: dir })), ['server.host: must have at least 1 character(s)'])
  })

  t.test('a command-line flag is named over the variable it overrides', async t => {
    t.same(await problemsOfLoad(loadConfig({ env: { PORT: '7000' }, cwd: t.testdir({}), overrides: { port: 70000, logLevel: 'x' } })), [
      'server.port: must be <= 65535 (got 70000 from --port)',
      'server.log_level: must be one of fatal, error, warn, info, debug, trace, silent (got "x" from --log-level)'
    ])
  })

  t.test('REDIS_URL is named, without echoing the URL', async t => {
    const dir = t.testdir({ 'agent.yml': 'services:\n  main:\n    type: cache\n' })
    t.same(await problemsOfLoad(loadConfig({ env: { REDIS_URL: 'http://user:pw@h/99' }, cwd: dir })), [
      'services.main.db: must be <= 15 (got 99 from $REDIS_URL)'
    ])
    t.same(await problemsOfLoad(loadConfig({ env: { REDIS_URL: 'http://user:pw@h/1' }, cwd: dir })), [
      'services.main.url: must be a redis:// or rediss:// URL (from $REDIS_URL)'
    ])
  })

  t.test('a ${VAR} in the file names the variable, the file, and the line and column of the value', async t => {
    const dir = t.testdir({
      'agent.yml': [
        'server:',
        '  port: ${MY_PORT}',
        '  host: "${H}${H}"',
        'agent:',
        '  name: ${NAME:-Agent}',
        '  url: ${SCHEME}://${HOST_NAME}',
        'push_notifications:',
        '  config:',
        '    allowed_networks: [10.0.0.0/8, "${NET}"]',
        ''
      ].join('\n')
    })
    const file = join(dir, 'agent.yml')
    const env = { MY_PORT: 'abc', H: '', SCHEME: 'ftp', HOST_NAME: 'h', NET: 'lan' }
    t.same(await problemsOfLoad(loadConfig({ env, cwd: dir })), [
      `server.host: must have at least 1 character(s) (from $H at ${file}:3:9)`,
      `server.port: must be an integer (got "abc" from $MY_PORT at ${file}:2:9)`
    ])
    t.same(await problemsOfLoad(loadConfig({ env: { ...env, MY_PORT: '1', H: 'h' }, cwd: dir })), [
      `agent.url: must be a http:// or https:// URL (from $SCHEME, $HOST_NAME at ${file}:6:8)`,
      `push_notifications.config.allowed_networks.1: "lan" is not a CIDR such as 10.0.0.0/8 (from $NET at ${file}:9:36)`
    ])
  })

  t.test('a default written in the file is not from the environment', async t => {
    const dir = t.testdir({ 'agent.yml': 'server:\n  port: ${MY_PORT:-abc}\n' })
    t.same(await problemsOfLoad(loadConfig({ env: {}, cwd: dir })), ['server.port: must be an integer (got "abc")'])
  })

  t.test('a value with no node at its path names the file alone', async t => {
    // A number as a key: YAML keeps it a number, the configuration a string.
    const dir = t.testdir({ 'agent.yml': 'services:\n  1:\n    type: cache\n    url: ${U}\n' })
    t.same(await problemsOfLoad(loadConfig({ env: { U: 'http://h' }, cwd: dir })), [
      `services.1.url: must be a redis:// or rediss:// URL (from $U at ${join(dir, 'agent.yml')})`
    ])
  })

  t.test('substituteEnv tells which values took which variables', async t => {
    const seen: Array<[string[], string[]]> = []
    const input = { a: '${A}', b: ['${B:-x}', '${C:y}', '${D:?}'], c: 'plain', d: '${E:-x}' }
    t.same(substituteEnv(input, { A: 'a', B: 'b', C: '', D: 'd' }, (path, names) => seen.push([path, names])),
      { a: 'a', b: ['b', '', 'd'], c: 'plain', d: 'x' })
    t.same(seen, [[['a'], ['A']], [['b', '0'], ['B']], [['b', '1'], ['C']], [['b', '2'], ['D']]])
  })
})

t.test('the example of docs/configuration.md, "When the configuration is wrong", is what loading reports', async t => {
  const docs = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8')
  const section = docs.slice(docs.indexOf('## When the configuration is wrong'))
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  const printed = /```text\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  const dir = t.testdir({ 'agent.yml': yaml })
  const problems = await problemsOfLoad(loadConfig({ env: { PORT: 'abc', HOOK_TIMEOUT: '0' }, cwd: dir }))
  t.same(problems.map(line => line.replace(dir, '/srv/a2a')), printed.trimEnd().split('\n'))
})
