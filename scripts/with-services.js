#!/usr/bin/env node
// Runs a command (the tap suite) with the services the tests use, named in its environment.
// Redis, in A2A_TEST_REDIS_URL:
// - the Redis at A2A_TEST_REDIS_URL when the variable is set (the run fails at once when it does not answer); the
//   tests then use only its databases that are empty when they start, and never empty one they did not create;
// - otherwise a throwaway redis-server on a free port of 127.0.0.1 (nothing saved to disk), stopped at the end, whose
//   databases the tests empty freely (A2A_TEST_REDIS_OWNED=1). A Redis that happens to answer on 6379 is never used.
// Some tests start redis-server processes of their own (stalls, restarts), so redis-server must be on the PATH either
// way: without it this fails at once, with one line saying how to install it.
// PostgreSQL, in A2A_TEST_POSTGRES_URL:
// - the server at A2A_TEST_POSTGRES_URL when the variable is set (the run fails at once when it does not answer); the
//   tests there create databases of their own and drop only those (testDatabase, test/helper.ts);
// - otherwise a throwaway cluster on a free port of 127.0.0.1, in a temp folder (scripts/postgres-server.js), run as
//   the postgres user when this runs as root, stopped and removed at the end (A2A_TEST_POSTGRES_OWNED=1). A
//   PostgreSQL that happens to answer on 5432 is never used. Without the variable, PostgreSQL's initdb and postgres
//   must be installed: without them this fails at once, with one line saying how to install them.
// The two throwaways start side by side: the cluster's initdb takes a second or more.
// Exits with the command's status. The command runs with a run id in A2A_TEST_RUN, which every process the tests
// start inherits: once it has exited, a process still carrying the id outlived its test, and is named on stderr and
// killed, and the run fails (scripts/run-processes.js).
import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { POSTGRES_INSTALL_HINT, pingPostgres, postgresBinDir, startPostgres } from './postgres-server.js'
import { INSTALL_HINT, hasRedisServer, ping, startRedis } from './redis-server.js'
import { RUN_MARKER, leftoverReport, nestedMarker, newRunId, reapLeftovers } from './run-processes.js'

const [command, ...args] = process.argv.slice(2)
if (!command) {
  console.error('usage: node scripts/with-services.js COMMAND [ARGS...]')
  process.exit(2)
}
if (!hasRedisServer()) {
  console.error(`The tests need redis-server on the PATH: ${INSTALL_HINT}.`)
  process.exit(1)
}
const givenRedis = process.env.A2A_TEST_REDIS_URL
const givenPostgres = process.env.A2A_TEST_POSTGRES_URL
if (!givenPostgres && postgresBinDir() === null) {
  console.error(`The tests need PostgreSQL's initdb and postgres, or a server named in A2A_TEST_POSTGRES_URL: ${POSTGRES_INSTALL_HINT}.`)
  process.exit(1)
}

// A signal while the services start is acted on once they have: they are stopped, and the command never runs.
let child = null
let interrupted = null
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (child) child.kill(signal)
    else interrupted ??= signal
  })
}

/** One line per given service that does not answer. */
async function unanswered () {
  const [redis, postgres] = await Promise.all([!givenRedis || ping(givenRedis), !givenPostgres || pingPostgres(givenPostgres)])
  return [
    ...(redis ? [] : [`No Redis answers at ${givenRedis} (A2A_TEST_REDIS_URL): start it, or unset the variable to let the run start a throwaway redis-server.`]),
    ...(postgres ? [] : [`No PostgreSQL answers at ${givenPostgres} (A2A_TEST_POSTGRES_URL): start it, or unset the variable to let the run start a throwaway cluster.`])
  ]
}

/** Starts the throwaways the run needs, `[redis, postgres]` (null: given); on a failure, stops those started and exits 1. */
async function startThrowaways () {
  const started = await Promise.allSettled([givenRedis ? null : startRedis(), givenPostgres ? null : startPostgres()])
  const services = started.map(s => s.value ?? null)
  const failed = started.find(s => s.status === 'rejected')
  if (failed || interrupted) {
    await stopAll(services)
    if (failed) console.error(failed.reason.message)
    process.exit(failed ? 1 : 128 + constants.signals[interrupted])
  }
  return services
}

function stopAll (services) {
  return Promise.all(services.map(service => service?.stop()))
}

const down = await unanswered()
for (const line of down) console.error(line)
if (down.length > 0) process.exit(1)
const [redis, postgres] = await startThrowaways()
const env = {
  ...process.env,
  A2A_TEST_REDIS_URL: redis?.url ?? givenRedis,
  A2A_TEST_REDIS_OWNED: redis ? '1' : '',
  A2A_TEST_POSTGRES_URL: postgres?.url ?? givenPostgres,
  A2A_TEST_POSTGRES_OWNED: postgres ? '1' : ''
}

const runId = newRunId()
env[RUN_MARKER] = nestedMarker(runId, process.env[RUN_MARKER])
child = spawn(command, args, { stdio: 'inherit', env })
const status = await new Promise(resolve => {
  child.once('error', err => {
    console.error(`${command}: ${err.message}`)
    resolve(127)
  })
  child.once('exit', (code, signal) => resolve(code ?? 128 + constants.signals[signal]))
})
await stopAll([redis, postgres])
const report = leftoverReport(await reapLeftovers(runId))
for (const line of report) console.error(line)
process.exit(report.length > 0 && status === 0 ? 1 : status)
