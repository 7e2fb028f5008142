// scripts/tap-failures.js: the failures of a TAP log, as .ci/run prints them at the end of a failed run.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { formatFailure, tapFailures } from '../scripts/tap-failures.js'
import { runChild } from './processes.js'

const SCRIPT = fileURLToPath(new URL('../scripts/tap-failures.js', import.meta.url))

// The shape `npm test` prints without a terminal: files, subtests in them, a failure two levels down.
const LOG = `TAP version 14
1..2
# Subtest: test/a.test.ts
    # Subtest: sends a message
        ok 1 - should be equal
        not ok 2 - the task completes
          ---
          found: working
          wanted: completed
          at:
            fileName: test/a.test.ts
            lineNumber: 12
          ...
        1..2
    not ok 1 - sends a message # time=12.5ms
    # Subtest: a todo
        not ok 1 - later # TODO
        1..1
    ok 2 - a todo # time=1ms
    1..2
not ok 1 - test/a.test.ts # time=100ms
# Subtest: test/b.test.ts
    ok 1 - fine
    1..1
ok 2 - test/b.test.ts # time=5ms
# { total: 4, pass: 2, fail: 1, todo: 1 }
`

t.test('only the innermost failure is kept, under the names of the tests that hold it, with its diagnostics', async t => {
  const failures = tapFailures(LOG)
  t.same(failures, [{
    path: ['test/a.test.ts', 'sends a message'],
    name: 'the task completes',
    diagnostic: ['found: working', 'wanted: completed', 'at:', '  fileName: test/a.test.ts', '  lineNumber: 12']
  }])
  t.equal(formatFailure(failures[0]), [
    'not ok: test/a.test.ts > sends a message > the task completes',
    '    found: working',
    '    wanted: completed',
    '    at:',
    '      fileName: test/a.test.ts',
    '      lineNumber: 12'
  ].join('\n'))
})

t.test('a failure with no diagnostics, and one whose diagnostics run long, are cut to 40 lines', async t => {
  const long = ['not ok 1 - test/c.test.ts', '  ---', ...Array.from({ length: 50 }, (_, i) => `  line ${i}`), '  ...'].join('\n')
  const [failure] = tapFailures(long)
  t.same(failure.path, [])
  const printed = formatFailure(failure).split('\n')
  t.equal(printed.length, 1 + 40 + 1)
  t.equal(printed.at(-1), '    … 10 more lines')
  t.same(tapFailures('not ok 3 - test/d.test.ts # time=1ms'), [{ path: [], name: 'test/d.test.ts', diagnostic: [] }])
})

t.test('the script prints the failures of a log, nothing for a passing one, and 2 without a file', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'tap-failures-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const failing = join(dir, 'failing.tap')
  const passing = join(dir, 'passing.tap')
  writeFileSync(failing, LOG)
  writeFileSync(passing, 'TAP version 14\n1..1\nok 1 - test/b.test.ts # time=5ms\n')
  const failed = await runChild(t, process.execPath, [SCRIPT, failing])
  t.equal(failed.status, 0)
  t.match(failed.stdout, /^1 failing test:\n\nnot ok: test\/a\.test\.ts > sends a message > the task completes\n {4}found: working/m)
  const two = join(dir, 'two.tap')
  writeFileSync(two, 'not ok 1 - test/c.test.ts # time=1ms\nnot ok 2 - test/d.test.ts # time=1ms\n')
  const both = await runChild(t, process.execPath, [SCRIPT, two])
  t.equal(both.stdout, '\n2 failing tests:\n\nnot ok: test/c.test.ts\n\nnot ok: test/d.test.ts\n')
  // From a folder whose path has a space in it (a URL spells it %20), the script still knows it is the command.
  const spaced = join(dir, 'a clone')
  mkdirSync(spaced)
  copyFileSync(SCRIPT, join(spaced, 'tap-failures.js'))
  const fromSpaced = await runChild(t, process.execPath, [join(spaced, 'tap-failures.js'), two])
  t.equal(fromSpaced.stdout, both.stdout)
  const passed = await runChild(t, process.execPath, [SCRIPT, passing])
  t.equal(passed.stdout, '')
  const usage = await runChild(t, process.execPath, [SCRIPT])
  t.equal(usage.status, 2)
  t.match(usage.stderr, /^usage: node scripts\/tap-failures\.js FILE/)
})
