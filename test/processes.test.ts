// Process hygiene of the suite: every process a test starts is killed with its whole group at teardown, when the
// file times out, and when the test process exits (test/processes.ts); whatever outlives its run anyway is named,
// killed, and fails the run (scripts/run-processes.js, called by scripts/with-services.js).
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { RUN_MARKER, leftoverReport, markedProcesses, nestedMarker, newRunId, reapLeftovers } from '../scripts/run-processes.js'
import { TEST_REDIS, until } from './helper.js'
import { TS_IMPORT, adoptGroup, killAll, liveGroups, runChild, spawnChild } from './processes.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const WRAPPER = join(ROOT, 'scripts', 'with-services.js')
const TAP = join(ROOT, 'node_modules', '.bin', 'tap')
const FIXTURES = join(ROOT, 'test', 'fixtures', 'processes')

/** Whether `pid` is a live process (a zombie, dead and not yet reaped, is not). */
function alive (pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/**
 * A fake process table: `pid -> { environ, cmdline }` (environ null: unreadable, as another user's is; cmdline null:
 * gone, as a process's that exits while the table is read).
 */
function fakeProc (t: Test, table: Record<string, { environ: string[] | null, cmdline?: string[] | null }>): string {
  const tree: Record<string, unknown> = { self: {}, uptime: '1 2\n' }
  for (const [pid, { environ, cmdline = [] }] of Object.entries(table)) {
    if (environ === null) tree[pid] = {}
    else tree[pid] = { environ: environ.join('\0') + '\0', ...(cmdline === null ? {} : { cmdline: cmdline.join('\0') + '\0' }) }
  }
  return t.testdir(tree as Parameters<typeof t.testdir>[0])
}

// Nothing of the test run's tap reaches the child runs: they are runs of their own.
const ENV: Record<string, string | undefined> = {}
for (const [name, value] of Object.entries(process.env)) {
  if (!/^(TAP|_TAPJS|NODE_OPTIONS$)/.test(name)) ENV[name] = value
}

t.test('the scanner finds the processes whose A2A_TEST_RUN holds the run id, and only those', async t => {
  const proc = fakeProc(t, {
    101: { environ: ['PATH=/bin', `${RUN_MARKER}=run-1`], cmdline: ['node', 'dist/cli.js', 'serve'] },
    102: { environ: [`${RUN_MARKER}=outer run-1`], cmdline: ['redis-server', '*:0'] },
    103: { environ: [`${RUN_MARKER}=run-10`], cmdline: ['sleep', '1'] },
    104: { environ: ['PATH=/bin'], cmdline: ['bash'] },
    105: { environ: null },
    106: { environ: [`${RUN_MARKER}=run-1`], cmdline: null },
    [process.pid]: { environ: [`${RUN_MARKER}=run-1`], cmdline: ['this', 'process'] }
  })
  t.same(markedProcesses('run-1', proc).sort((a, b) => a.pid - b.pid), [
    { pid: 101, command: 'node dist/cli.js serve' },
    { pid: 102, command: 'redis-server *:0' },
    { pid: 106, command: '' }
  ], 'the id as a whole word of the list; never another run\'s, an unmarked or unreadable process, or this one')
  t.same(markedProcesses('run-1', join(proc, 'missing')), [], 'no process table (not Linux): nothing found')
  t.equal(nestedMarker('inner'), 'inner')
  t.equal(nestedMarker('inner', 'outer'), 'outer inner', 'a run inside a run is the outer run\'s too')
  t.match(newRunId(), new RegExp(`^${process.pid}-[0-9a-f]{8}$`))
  t.not(newRunId(), newRunId())
})

t.test('the leftovers of a run: those on their way out are waited for, the rest are killed and reported', async t => {
  const proc = fakeProc(t, {
    201: { environ: [`${RUN_MARKER}=run-2`], cmdline: ['node', 'leaked.js'] },
    202: { environ: [`${RUN_MARKER}=run-2`], cmdline: ['sh', '-c', 'x'.repeat(300)] }
  })
  const killed: Array<[number, string]> = []
  const kill = (pid: number, signal: string) => {
    killed.push([pid, signal])
    if (pid === 202) throw Object.assign(new Error('gone'), { code: 'ESRCH' })
    return true
  }
  const left = await reapLeftovers('run-2', { graceMs: 100, proc, kill })
  t.same(left.map(p => p.pid).sort(), [201, 202])
  t.same(killed.sort(), [[201, 'SIGKILL'], [202, 'SIGKILL']])
  const report = leftoverReport(left.sort((a, b) => a.pid - b.pid))
  t.equal(report[0], '2 processes started by the tests outlived the run (now killed); a test must stop every process it starts (test/processes.ts):')
  t.equal(report[1], '  201 node leaked.js')
  t.equal(report[2], `  202 sh -c ${'x'.repeat(194)}…`, 'a long command line is cut')
  t.match(leftoverReport([{ pid: 1, command: 'a' }]), [/^1 process started by the tests outlived the run /, '  1 a'])
  t.same(leftoverReport([]), [])

  // A process that ends within the grace period is not a leftover.
  const going = fakeProc(t, { 301: { environ: [`${RUN_MARKER}=run-3`], cmdline: ['sleep'] } })
  setTimeout(() => rmSync(join(going, '301'), { recursive: true }), 120)
  t.same(await reapLeftovers('run-3', { graceMs: 5000, proc: going, kill: () => { throw new Error('never called') } }), [])
  t.same(await reapLeftovers('run-none', { proc: going }), [], 'nothing marked: nothing to wait for')
})

t.test('a child is killed with its whole group at teardown, and carries the run marker whatever its environment', async t => {
  let pids: number[] = []
  let marker = ''
  await t.test('a test that starts a shell which starts a process', async t => {
    const child = spawnChild(t, 'sh', ['-c', `echo "$${RUN_MARKER}"; sleep 600 & echo $!; wait`], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'ignore'] })
    let out = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
    await until(() => out.split('\n').length === 3)
    const [seen, grandchild] = out.split('\n')
    marker = seen
    pids = [child.pid as number, Number(grandchild)]
    t.ok(pids.every(alive), 'both run')
    t.ok(liveGroups().includes(child.pid as number))
  })
  t.equal(marker, process.env[RUN_MARKER] ?? '', 'A2A_TEST_RUN reaches a child given an environment without it')
  await until(() => !pids.some(alive))
  t.notOk(liveGroups().includes(pids[0]), 'torn down')
})

t.test('killAll, on the runner\'s timeout message, kills every group not yet torn down', async t => {
  const child = spawnChild({ teardown: () => {} }, 'sleep', ['600'], { stdio: 'ignore' })
  const pid = child.pid as number
  t.ok(alive(pid))
  process.emit('message', { tapAbort: 'timeout' }, undefined)
  await until(() => !alive(pid))
  t.same(liveGroups(), [])
  process.emit('message', null, undefined)
  process.emit('message', { tapAbort: 'other' }, undefined)
  killAll()
})

t.test('a group started by other means (a detached launch) is adopted: killed at teardown', async t => {
  let pid = 0
  await t.test('a test that adopts it', async t => {
    const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' })
    pid = child.pid as number
    adoptGroup(t, pid)
    t.ok(liveGroups().includes(pid))
  })
  await until(() => !alive(pid))
  t.notOk(liveGroups().includes(pid))
})

t.test('runChild collects the output and status; at timeoutMs the group is killed; a missing command is an error', async t => {
  const ok = await runChild(t, process.execPath, ['-e', 'console.log("out"); console.error("err"); process.exit(3)'])
  t.same(ok, { status: 3, signal: null, stdout: 'out\n', stderr: 'err\n', timedOut: false })
  const slow = await runChild(t, 'sh', ['-c', 'sleep 600 & echo $!; wait'], { timeoutMs: 500 })
  t.equal(slow.timedOut, true)
  t.equal(slow.signal, 'SIGKILL')
  t.notOk(alive(Number(slow.stdout.trim())), 'the shell\'s own process was killed with it')
  const missing = await runChild(t, 'no-such-command-a2a', [])
  t.match(missing, { status: null, stdout: '', stderr: /ENOENT/, timedOut: false })
})

t.test('a process that exits without tearing down takes its children with it', async t => {
  const run = await runChild(t, process.execPath, ['--import', TS_IMPORT, join(FIXTURES, 'exit.ts')], { env: ENV, cwd: ROOT, timeoutMs: 60_000 })
  t.equal(run.status, 0, run.stderr)
  const pids = run.stdout.trim().split(' ').map(Number)
  t.equal(pids.length, 2)
  await until(() => !pids.some(alive))
  t.pass('the child and its own process are gone')
})

t.test('a test file that times out, with a teardown that never ends, leaves no process behind', async t => {
  const pidsFile = join(t.testdir({}), 'pids')
  // From a folder outside the repository: a tap run started in it would take the repository's .tap/ as its own and
  // empty .tap/coverage, losing the coverage this run's other files have written there.
  const cwd = mkdtempSync(join(tmpdir(), 'a2a-nested-tap-'))
  t.teardown(() => rmSync(cwd, { recursive: true, force: true }))
  symlinkSync(join(ROOT, 'node_modules'), join(cwd, 'node_modules'))
  // The project's tap settings, the loader named by its full path: a tap run with other plugins than the ones tap was
  // last built with builds itself again, in the node_modules this run shares.
  const { tap } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module', tap: { ...tap, 'node-arg': [`--import=${TS_IMPORT}`] } }))
  const run = await runChild(t, TAP, ['--disable-coverage', '--timeout=15', join(FIXTURES, 'timeout.ts')], {
    env: { ...ENV, PIDS_FILE: pidsFile }, cwd, timeoutMs: 100_000
  })
  t.not(run.status, 0)
  t.match(run.stdout, /not ok 1 - timeout!/, 'tap timed the file out')
  const pids = readFileSync(pidsFile, 'utf8').trim().split(' ').map(Number)
  t.equal(pids.length, 2, 'the test started its child and the child its process before it timed out')
  await until(() => !pids.some(alive))
  t.pass('the child and its own process are gone')
})

t.test('the test command fails, naming them, when processes it started outlive it; it kills them', async t => {
  const leak = 'const c = require("node:child_process").spawn("sleep", ["600"], { detached: true, stdio: "ignore" }); c.unref(); console.log(c.pid)'
  const run = await runChild(t, process.execPath, [WRAPPER, process.execPath, '-e', leak], {
    env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', A2A_TEST_REDIS_URL: TEST_REDIS.url }, timeoutMs: 60_000
  })
  const pid = Number(run.stdout.trim())
  t.equal(run.status, 1, 'the command exited 0, the run fails')
  t.equal(run.stderr, '1 process started by the tests outlived the run (now killed); a test must stop every process it starts ' +
    `(test/processes.ts):\n  ${pid} sleep 600\n`)
  await until(() => !alive(pid))

  const clean = await runChild(t, process.execPath, [WRAPPER, process.execPath, '-e', 'process.exit(4)'], {
    env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', A2A_TEST_REDIS_URL: TEST_REDIS.url }, timeoutMs: 60_000
  })
  t.same([clean.status, clean.stderr], [4, ''], 'nothing left: the command\'s own status')
})
