#!/usr/bin/env node
// Runs a command (the tap suite) with a Redis for the tests, named by A2A_TEST_REDIS_URL in its environment:
// - the Redis at A2A_TEST_REDIS_URL (default redis://127.0.0.1:6379) when it answers;
// - otherwise a throwaway redis-server on a free port of 127.0.0.1 (nothing saved to disk), stopped at the end.
// Some tests start redis-server processes of their own (stalls, restarts), so redis-server must be on the PATH either
// way: without it this fails at once, with one line saying how to install it. Exits with the command's status.
import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { INSTALL_HINT, hasRedisServer, ping, startRedis } from './redis-server.js'

const DEFAULT_URL = 'redis://127.0.0.1:6379'

const [command, ...args] = process.argv.slice(2)
if (!command) {
  console.error('usage: node scripts/with-redis.js COMMAND [ARGS...]')
  process.exit(2)
}
if (!hasRedisServer()) {
  console.error(`The tests need redis-server on the PATH: ${INSTALL_HINT}.`)
  process.exit(1)
}

const wanted = process.env.A2A_TEST_REDIS_URL || DEFAULT_URL
let url = wanted
let throwaway = null
if (!await ping(wanted)) {
  throwaway = await startRedis()
  url = throwaway.url
  console.error(`No Redis answers at ${wanted}: the tests use a throwaway redis-server at ${url}, stopped at the end.`)
}

const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, A2A_TEST_REDIS_URL: url } })
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal))
const status = await new Promise(resolve => {
  child.once('error', err => {
    console.error(`${command}: ${err.message}`)
    resolve(127)
  })
  child.once('exit', (code, signal) => resolve(code ?? 128 + constants.signals[signal]))
})
await throwaway?.stop()
process.exit(status)
