// A throwaway redis-server for the bench's Redis (kvcache) target: its own process on a free port of 127.0.0.1, no
// persistence, so that its command counts and CPU time are the server's alone. Stopped at the end of the target.
import { Redis } from 'ioredis'
import { startRedis as start } from '../scripts/redis-server.js'

const MISSING = 'the Redis target needs redis-server on the PATH (Debian: apt-get install -y redis-server), ' +
  'or --redis URL of a Redis to use (its command counts then include whatever else uses it)'

/** Starts redis-server; resolves `{ url, pid, stop }` once it answers PING. */
export function startRedis () {
  return start(MISSING)
}

/** Calls per command so far (`INFO commandstats`), e.g. `{ evalsha: 120, hget: 300 }`. */
export async function commandStats (url) {
  const client = new Redis(url, { maxRetriesPerRequest: 1, enableReadyCheck: false })
  try {
    const text = await client.info('commandstats')
    const out = {}
    for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2])
    return out
  } finally {
    client.disconnect()
  }
}

/** The bytes Redis has received from its clients so far (`INFO stats` `total_net_input_bytes`). */
export async function netInputBytes (url) {
  const client = new Redis(url, { maxRetriesPerRequest: 1, enableReadyCheck: false })
  try {
    return Number(/^total_net_input_bytes:(\d+)/m.exec(await client.info('stats'))?.[1])
  } finally {
    client.disconnect()
  }
}

/** What the bench's own reading connection sends: not the server's work. */
const OWN = /^(info|client\|.*|hello)$/

/** The calls per command between two `commandStats`, less the bench's own (INFO and connection set-up). */
export function statsDelta (before, after) {
  const out = {}
  for (const [name, calls] of Object.entries(after)) {
    const n = calls - (before[name] ?? 0)
    if (n > 0 && !OWN.test(name)) out[name] = n
  }
  return out
}

/**
 * Counts what Redis executes from now until `stop()` (MONITOR): the commands that came over a connection (round
 * trips: what costs the server a write, a parse and a reply) apart from those the scripts ran. `stop()` resolves
 * `{ roundTrips, fromScripts, byCommand }`, `byCommand` counting the round trips by name.
 */
export async function monitorCommands (url) {
  const client = new Redis(url, { maxRetriesPerRequest: 1 })
  const monitor = await client.monitor()
  const counts = { roundTrips: 0, fromScripts: 0, byCommand: {} }
  monitor.on('monitor', (time, args, source) => {
    if (source === 'lua') {
      counts.fromScripts++
      return
    }
    const name = String(args[0]).toLowerCase()
    counts.roundTrips++
    counts.byCommand[name] = (counts.byCommand[name] ?? 0) + 1
  })
  return {
    async stop () {
      const probe = new Redis(url, { maxRetriesPerRequest: 1, enableReadyCheck: false })
      // The probe's ECHO passes through MONITOR after everything sent before it: the count is complete then.
      await new Promise(resolve => {
        monitor.on('monitor', (time, args) => { if (String(args[0]).toLowerCase() === 'echo' && args[1] === 'a2a-bench-end') resolve() })
        probe.echo('a2a-bench-end').catch(() => {})
      })
      probe.disconnect()
      monitor.disconnect()
      client.disconnect()
      counts.roundTrips-- // the probe's ECHO
      counts.byCommand.echo--
      if (counts.byCommand.echo === 0) delete counts.byCommand.echo
      return counts
    }
  }
}
