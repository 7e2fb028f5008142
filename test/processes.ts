// Every process a test starts goes through `spawnChild` or `runChild`: it runs in a process group of its own, and that
// group (the child and whatever it started: npx's node, a bench's servers, a shell's commands) is killed
// - at the test's teardown;
// - when tap times the file out: the runner's timeout message arrives before any teardown runs, and a teardown that
//   hangs (a server that will not close) would keep the ones after it from running;
// - when this process exits without having torn down.
// What survives all three (this process killed outright) is found at the end of the run by
// scripts/with-services.js through A2A_TEST_RUN, which every child carries, even one whose environment the test
// writes whole.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { RUN_MARKER, killGroup } from '../scripts/run-processes.js'

/** `node --import TS_IMPORT file.ts` runs a TypeScript file of the project, as the tests are run. */
export const TS_IMPORT = new URL('../scripts/ts-import.js', import.meta.url).href

export interface Teardown {
  teardown (fn: () => unknown): void
}

/** The process groups (their leaders' pids) started here and not yet torn down. */
const groups = new Set<number>()

/** Kills every group not yet torn down. */
export function killAll (): void {
  for (const pgid of groups) killGroup(pgid)
  groups.clear()
}

/** The process groups started here and not yet torn down (for the tests of this module). */
export function liveGroups (): number[] {
  return [...groups]
}

process.on('exit', killAll)
// tap's runner says a file timed out with this message (then SIGALRM, then SIGKILL, half a second apart).
process.on('message', (msg: { tapAbort?: unknown } | null) => {
  if (msg?.tapAbort === 'timeout') killAll()
})

/**
 * Makes process group `pgid`, started by other means (a library that launches its process detached, as
 * playwright-core launches a browser), `t`'s: killed at its teardown, or sooner, as `spawnChild`'s are.
 */
export function adoptGroup (t: Teardown, pgid: number): void {
  groups.add(pgid)
  t.teardown(() => {
    groups.delete(pgid)
    killGroup(pgid)
  })
}

/**
 * `spawn`, with the child the leader of a process group of its own, killed with that group at `t`'s teardown (or
 * sooner, see above). Its environment carries A2A_TEST_RUN whatever `options.env` says.
 */
export function spawnChild (t: Teardown, command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  const env = { ...(options.env ?? process.env) }
  if (process.env[RUN_MARKER] !== undefined) env[RUN_MARKER] = process.env[RUN_MARKER]
  const child = spawn(command, args, { ...options, env, detached: true })
  // No pid: it never started (ENOENT), and says so by its 'error' event.
  if (child.pid !== undefined) adoptGroup(t, child.pid)
  return child
}

export interface ChildRun {
  /** The exit code, null when a signal ended it. */
  status: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  /** Whether `timeoutMs` passed and the group was killed. */
  timedOut: boolean
}

/**
 * Runs a command to its end (`spawnChild`), its output collected as text: like `execFile`, except that the whole
 * group is killed at `timeoutMs` and at teardown, and the process is never left running.
 */
export function runChild (t: Teardown, command: string, args: readonly string[], options: SpawnOptions & { timeoutMs?: number } = {}): Promise<ChildRun> {
  const { timeoutMs, ...spawnOptions } = options
  const child = spawnChild(t, command, args, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  let timedOut = false
  const timer = timeoutMs === undefined
    ? undefined
    : setTimeout(() => {
      timedOut = true
      killGroup(child.pid as number)
    }, timeoutMs)
  return new Promise(resolve => {
    child.once('error', err => {
      clearTimeout(timer)
      resolve({ status: null, signal: null, stdout, stderr: `${stderr}${err.message}\n`, timedOut })
    })
    child.once('close', (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, stdout, stderr, timedOut })
    })
  })
}
