#!/usr/bin/env node
// `npm run test:quick`: the test files less those its --exclude globs name (test/test-sets.test.ts keeps that list
// true), each run as the tap script it is, by node with the project's TypeScript loader (scripts/ts-import.js), as
// tap runs them, but without tap's runner: no coverage (`npm test` measures it) and no TAP parsing. Each file's
// output is printed when it fails; exit 1 if any failed.
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import picomatch from 'picomatch'
import { killGroup } from './run-processes.js'

const TS_IMPORT = new URL('./ts-import.js', import.meta.url).href

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** tap's default for one file, which the files are written to fit (package.json "tap"."timeout"). */
const FILE_TIMEOUT_S = 120
// Four files at a time on two cores: the files wait on timers and sockets for much of their time (the quick run took
// 308 s two at a time, 207 s three at a time; later, with lazier imports, 133 s three and 116 s four at a time,
// the 2-core test machine, 2026-11-28). Files are run in name order: longest first ran them together and slower.
const JOBS = Math.max(1, Math.min(4, availableParallelism() + 2))

// `--exclude=GLOB`s, or the files to run (all of test/ less the excluded ones when none is named).
const args = process.argv.slice(2)
const excludes = args.flatMap(arg => arg.startsWith('--exclude=') ? [arg.slice('--exclude='.length)] : [])
const named = args.filter(arg => !arg.startsWith('--exclude='))
if (named.some(arg => arg.startsWith('-'))) {
  console.error('usage: node scripts/test-quick.js [--exclude=GLOB ...] [FILE ...]')
  process.exit(2)
}
const excluded = picomatch(excludes)
const files = named.length > 0
  ? named
  : readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .map(file => relative(ROOT, join(ROOT, 'test', file)).split('\\').join('/'))
    .filter(file => file.endsWith('.test.ts') && !excluded(file))
    .sort()

/** Runs one file; its status and output. */
function run (file) {
  return new Promise(resolve => {
    const started = Date.now()
    const child = spawn(process.execPath, ['--enable-source-maps', '--import', TS_IMPORT, file], {
      cwd: ROOT,
      env: { ...process.env, TAP_TIMEOUT: String(FILE_TIMEOUT_S) },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A group of its own, killed whole: a redis-server the file started goes with it.
      detached: true
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', chunk => { output += chunk })
    child.stderr.setEncoding('utf8').on('data', chunk => { output += chunk })
    // A file that hangs past its tap timeout (a teardown that never ends) is killed, as tap's runner would.
    const killer = setTimeout(() => killGroup(child.pid), (FILE_TIMEOUT_S + 10) * 1000)
    child.on('close', (code, signal) => {
      clearTimeout(killer)
      killGroup(child.pid)
      resolve({ file, ok: code === 0, code, signal, output, seconds: (Date.now() - started) / 1000 })
    })
  })
}

const startedAt = Date.now()
const queue = [...files]
const results = []
await Promise.all(Array.from({ length: JOBS }, async () => {
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    const result = await run(file)
    results.push(result)
    console.log(`${result.ok ? 'ok    ' : 'FAILED'} ${result.file} (${result.seconds.toFixed(1)} s)`)
    if (!result.ok) console.log(result.output.replace(/^/gm, '    '))
  }
}))
const failed = results.filter(r => !r.ok)
const seconds = ((Date.now() - startedAt) / 1000).toFixed(0)
console.log(`\n${results.length - failed.length} of ${results.length} files passed in ${seconds} s` +
  (failed.length > 0 ? `; failed: ${failed.map(r => r.file).join(', ')}` : ''))
process.exit(failed.length > 0 ? 1 : 0)
