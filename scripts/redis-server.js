// A throwaway redis-server: its own process on a free port of 127.0.0.1, nothing saved to disk. Used by the test
// command when no Redis answers (scripts/with-services.js) and by the bench's Redis targets (bench/redis.js).
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'

/** One line on how to get redis-server. */
export const INSTALL_HINT = 'install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis)'

/** Whether `redis-server` is on the PATH. */
export function hasRedisServer () {
  return !spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error
}

/** A port of 127.0.0.1 nothing listens on now. */
export async function freePort () {
  const srv = createServer().listen(0, '127.0.0.1')
  await once(srv, 'listening')
  const { port } = srv.address()
  srv.close()
  await once(srv, 'close')
  return port
}

/** Whether a Redis at `url` answers PING (within about a second). */
export async function ping (url) {
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000, commandTimeout: 1000 })
  probe.on('error', () => {})
  const answer = await probe.connect().then(() => probe.ping()).catch(() => null)
  probe.disconnect()
  return answer === 'PONG'
}

/**
 * Starts redis-server on a free port; resolves `{ url, port, pid, stop }` once it answers PING. Rejects with
 * `missing` when redis-server is not on the PATH, and when it does not answer within 10 s.
 */
export async function startRedis (missing = `redis-server is not on the PATH: ${INSTALL_HINT}`) {
  const port = await freePort()
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const failed = once(child, 'error').then(() => { throw new Error(missing) })
  failed.catch(() => {})
  const url = `redis://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    await Promise.race([failed, new Promise(resolve => setTimeout(resolve, 50))])
    if (await ping(url)) {
      return {
        url,
        port,
        pid: child.pid,
        async stop () {
          if (child.exitCode !== null || child.signalCode !== null) return
          child.kill('SIGKILL')
          await once(child, 'exit')
        }
      }
    }
  }
  /* c8 ignore next 2 -- a redis-server that starts and never answers: not reproducible here */
  child.kill('SIGKILL')
  throw new Error(`redis-server on port ${port} did not answer within 10 s`)
}
