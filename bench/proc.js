// Child processes for the benchmark: start one server, wait until it answers, sample its CPU time and RSS from /proc,
// stop it. Everything listens on 127.0.0.1 only.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'

/** Linux clock ticks per second (USER_HZ), the unit of utime and stime in /proc/<pid>/stat. */
const CLK_TCK = 100

export { freePort } from '../scripts/redis-server.js'

/** CPU seconds (user + system, every thread) the process has used so far; of several processes, their sum. */
export function cpuSeconds (pid) {
  if (Array.isArray(pid)) return pid.reduce((sum, one) => sum + cpuSeconds(one), 0)
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
}

/** Resident set size in MB (VmRSS); of several processes, their sum. */
export function rssMb (pid) {
  if (Array.isArray(pid)) return pid.reduce((sum, one) => sum + rssMb(one), 0)
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return kb === null ? NaN : Number(kb[1]) / 1024
}

/**
 * Watches a process (or several, summed) while a load runs: CPU as a share of one core over the window, and the peak RSS (sampled every
 * 200 ms). Call `stop()` at the end of the window.
 */
export function watch (pid) {
  const cpu0 = cpuSeconds(pid)
  const t0 = process.hrtime.bigint()
  let peak = rssMb(pid)
  const timer = setInterval(() => { peak = Math.max(peak, rssMb(pid)) }, 200)
  return {
    stop () {
      clearInterval(timer)
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9
      peak = Math.max(peak, rssMb(pid))
      return { cpu: Math.round(100 * (cpuSeconds(pid) - cpu0) / seconds), rssPeak: Math.round(peak) }
    }
  }
}

/**
 * Starts `node ARGS` and resolves once `ready(url)` is true. `extraEnv` adds to this process's environment.
 * Resolves `{ child, url, stop }`; `stop()` sends SIGTERM and waits for the exit (SIGKILL after 10 s).
 */
export async function start (args, port, ready, extraEnv = {}) {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...extraEnv },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const exited = once(child, 'exit')
  const url = `http://127.0.0.1:${port}/`
  async function stop () {
    if (child.exitCode !== null || child.signalCode !== null) return
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.kill('SIGTERM')
    await exited
    clearTimeout(kill)
  }
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`)
    if (await ready(url).catch(() => false)) return { child, url, stop }
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  await stop()
  throw new Error(`${args.join(' ')} did not answer within 15 s`)
}
