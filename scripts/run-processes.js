// The processes a test run leaves behind. scripts/with-services.js gives the command it runs (the tap suite) a run id
// in A2A_TEST_RUN; every process started under it inherits the variable (test/processes.ts adds it to a child whose
// environment a test writes whole). Once the command has exited, any process whose environment still carries the id
// outlived its test: it is named, killed, and the run fails. A run inside a run (the wrapper's own tests) appends its
// id to the list, so the outer run sees its leftovers too. Linux only (it reads /proc); elsewhere nothing is found.
import { randomBytes } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

/** The environment variable that marks a process as started by a test run: space-separated run ids. */
export const RUN_MARKER = 'A2A_TEST_RUN'

/** SIGKILLs process group `pgid`: its leader and everything it started that has not left the group. */
export function killGroup (pgid) {
  try {
    process.kill(-pgid, 'SIGKILL')
  } catch {
    // The whole group has exited already.
  }
}

/** A fresh run id. */
export function newRunId () {
  return `${process.pid}-${randomBytes(4).toString('hex')}`
}

/** `A2A_TEST_RUN` for a run inside the run named by `outer` (the variable as it is now): that list plus `id`. */
export function nestedMarker (id, outer = '') {
  return [...outer.split(' ').filter(Boolean), id].join(' ')
}

function read (path, encoding) {
  try {
    return readFileSync(path, encoding)
  } catch {
    // Gone meanwhile, a zombie, or not ours to read.
    return null
  }
}

/**
 * The live processes (this one aside) whose environment has run id `id` in A2A_TEST_RUN: `{ pid, command }` each,
 * `command` its command line. `proc` is where the process table is read (a fake one in the tests).
 */
export function markedProcesses (id, proc = '/proc') {
  let names
  try {
    names = readdirSync(proc)
  } catch {
    return []
  }
  const found = []
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    const environ = read(`${proc}/${name}/environ`, 'latin1')
    const entry = environ?.split('\0').find(e => e.startsWith(`${RUN_MARKER}=`))
    if (entry === undefined || !entry.slice(RUN_MARKER.length + 1).split(' ').includes(id)) continue
    const command = (read(`${proc}/${name}/cmdline`, 'utf8') ?? '').split('\0').filter(Boolean).join(' ')
    found.push({ pid: Number(name), command })
  }
  return found
}

/**
 * The processes of run `id` still alive once it has ended: waits up to `graceMs` for processes already on their way
 * out (killed a moment ago), then SIGKILLs those left and resolves with them (`{ pid, command }`), empty when none.
 */
export async function reapLeftovers (id, { graceMs = 1000, proc = '/proc', kill = process.kill } = {}) {
  let left = markedProcesses(id, proc)
  for (let waited = 0; left.length > 0 && waited < graceMs; waited += 50) {
    await sleep(50)
    left = markedProcesses(id, proc)
  }
  for (const { pid } of left) {
    try {
      kill(pid, 'SIGKILL')
    } catch {
      // It ended on its own meanwhile.
    }
  }
  return left
}

/** The lines that report `left` (what `reapLeftovers` found), or none. */
export function leftoverReport (left) {
  if (left.length === 0) return []
  return [
    `${left.length} process${left.length === 1 ? '' : 'es'} started by the tests outlived the run (now killed); ` +
      'a test must stop every process it starts (test/processes.ts):',
    ...left.map(({ pid, command }) => `  ${pid} ${command.length > 200 ? `${command.slice(0, 200)}…` : command}`)
  ]
}
