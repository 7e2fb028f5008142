#!/usr/bin/env node
// Runs a command (the tap suite) with a Redis for the tests, named by A2A_TEST_REDIS_URL in its environment:
// - the Redis at A2A_TEST_REDIS_URL when the variable is set (the run fails at once when it does not answer); the
//   tests then use only its databases that are empty when they start, and never empty one they did not create;
// - otherwise a throwaway redis-server on a free port of 127.0.0.1 (nothing saved to disk), stopped at the end, whose
//   databases the tests empty freely (A2A_TEST_REDIS_OWNED=1). A Redis that happens to answer on 6379 is never used.
// Some tests start redis-server processes of their own (stalls, restarts), so redis-server must be on the PATH either
// way: without it this fails at once, with one line saying how to install it. Exits with the command's status.
// The command runs with a run id in A2A_TEST_RUN, which every process the tests start inherits: once it has exited,
// a process still carrying the id outlived its test, and is named on stderr and killed, and the run fails
// (scripts/run-processes.js).
import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { INSTALL_HINT, hasRedisServer, ping, startRedis } from './redis-server.js'
import { RUN_MARKER, leftoverReport, nestedMarker, newRunId, reapLeftovers } from './run-processes.js'

const [command, ...args] = process.argv.slice(2)
if (!command) {
  console.error('usage: node scripts/with-redis.js COMMAND [ARGS...]')
  process.exit(2)
}
if (!hasRedisServer()) {
  console.error(`The tests need redis-server on the PATH: ${INSTALL_HINT}.`)
  process.exit(1)
}

const given = process.env.A2A_TEST_REDIS_URL
let env
let throwaway = null
if (given) {
  if (!await ping(given)) {
    console.error(`No Redis answers at ${given} (A2A_TEST_REDIS_URL): start it, or unset the variable to let the run start a throwaway redis-server.`)
    process.exit(1)
  }
  env = { ...process.env, A2A_TEST_REDIS_OWNED: '' }
} else {
  throwaway = await startRedis()
  env = { ...process.env, A2A_TEST_REDIS_URL: throwaway.url, A2A_TEST_REDIS_OWNED: '1' }
}

const runId = newRunId()
env[RUN_MARKER] = nestedMarker(runId, process.env[RUN_MARKER])
const child = spawn(command, args, { stdio: 'inherit', env })
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal))
const status = await new Promise(resolve => {
  child.once('error', err => {
    console.error(`${command}: ${err.message}`)
    resolve(127)
  })
  child.once('exit', (code, signal) => resolve(code ?? 128 + constants.signals[signal]))
})
await throwaway?.stop()
const report = leftoverReport(await reapLeftovers(runId))
for (const line of report) console.error(line)
process.exit(report.length > 0 && status === 0 ? 1 : status)
