import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { runChild } from './processes.js'

// A smoke run of `npm run profile` at its smallest, pinned: the server runs under load with --cpu-prof, the profile
// is written, and its top functions are printed. What they are is never asserted: that depends on the machine.
const PROFILE = fileURLToPath(new URL('../scripts/profile.js', import.meta.url))

t.test('a one-second pinned profile writes a .cpuprofile and prints the top functions by self time', async t => {
  const dir = t.testdir({})
  // The profiled server records no coverage of its own (the in-process tests cover it).
  const env = { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' }
  const { status: code, stdout } = await runChild(t, process.execPath, [PROFILE, '--seconds', '1', '--connections', '4', '--top', '5', '--pin', '--dir', dir],
    { env, timeoutMs: 60_000 })
  t.equal(code, 0, stdout)
  t.match(stdout, /^message\/send: \d+ req\/s under the profiler, p99 \d+ ms$/m)
  // One profile per thread (the test runner's loader hooks run on a thread of their own); the largest is named.
  const files = readdirSync(dir).filter(f => f.endsWith('.cpuprofile'))
  const largest = files.sort((a, b) => statSync(join(dir, b)).size - statSync(join(dir, a)).size)[0]
  t.ok(largest !== undefined, 'a profile was written')
  t.match(stdout, new RegExp(`profile: .*${largest}`))
  const rows = stdout.split('\n').filter(line => /^\s*\d+\.\d%\s+\d+ ms {2}\S/.test(line))
  t.equal(rows.length, 5, 'the five functions with the most self time')
})
