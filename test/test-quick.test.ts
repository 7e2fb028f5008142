// scripts/test-quick.js, the runner of `npm run test:quick`: each file is run as the tap script it is, through the loader;
// a failing file's output is printed, the run says how many passed and exits 1 when any failed.
import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { runChild } from './processes.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const RUNNER = 'scripts/test-quick.js'
const TREES = join(ROOT, 'node_modules/.cache/fastify-a2a-quick')

t.test('test-quick runs each file, prints a failing one whole, counts them, and exits 1 on a failure', async t => {
  const run = await runChild(t, process.execPath, [RUNNER, 'test/fixtures/quick/pass.ts', 'test/fixtures/quick/fail.ts'], { cwd: ROOT, timeoutMs: 120_000 })
  t.equal(run.status, 1, run.stderr)
  t.match(run.stdout, /^ok {5}test\/fixtures\/quick\/pass\.ts \(\d+\.\d s\)$/m)
  t.match(run.stdout, /^FAILED test\/fixtures\/quick\/fail\.ts \(\d+\.\d s\)$/m)
  t.match(run.stdout, /not ok 1 - meant to fail/, "the failing file's own output")
  t.notMatch(run.stdout, /ok 1 - fine/, "a passing file's output is not printed")
  t.match(run.stdout, /^1 of 2 files passed in \d+ s; failed: test\/fixtures\/quick\/fail\.ts$/m)
})

t.test('test-quick exits 0 when every file passes, and 2 on a flag it does not know', async t => {
  const ok = await runChild(t, process.execPath, [RUNNER, 'test/fixtures/quick/pass.ts'], { cwd: ROOT, timeoutMs: 120_000 })
  t.equal(ok.status, 0, ok.stdout)
  t.match(ok.stdout, /^1 of 1 files passed in \d+ s$/m)
  const bad = await runChild(t, process.execPath, [RUNNER, '--only=x'], { cwd: ROOT, timeoutMs: 60_000 })
  t.equal(bad.status, 2)
  t.match(bad.stderr, /^usage: node scripts\/test-quick\.js/)
})

t.test('without files named, test-quick runs the test files of test/ less those the --exclude globs name', async t => {
  const run = await runChild(t, process.execPath, [RUNNER, '--exclude=!test/test-sets.test.ts'], { cwd: ROOT, timeoutMs: 120_000 })
  t.equal(run.status, 0, run.stdout)
  t.match(run.stdout, /^ok {5}test\/test-sets\.test\.ts \(\d+\.\d s\)$/m)
  t.match(run.stdout, /^1 of 1 files passed in \d+ s$/m)
})

t.test('test-quick runs the files compiled, from a tree of its own that it removes, with those of killed runs', async t => {
  // The tree of a run that was killed: named by the pid of a process that has exited.
  const gone = await runChild(t, process.execPath, ['-e', 'console.log(process.pid)'], { cwd: ROOT, timeoutMs: 60_000 })
  const stale = join(TREES, gone.stdout.trim())
  mkdirSync(join(stale, 'test'), { recursive: true })
  const run = await runChild(t, process.execPath, [RUNNER, 'test/fixtures/quick/compiled.ts'], { cwd: ROOT, timeoutMs: 120_000 })
  t.equal(run.status, 0, run.stdout)
  t.notOk(existsSync(stale), 'the killed run\'s tree is gone')
  t.same(readdirSync(TREES), [], 'and so is the run\'s own')
})
