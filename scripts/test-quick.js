#!/usr/bin/env node
// `npm run test:quick`: the test files less those its --exclude globs name (test/test-sets.test.ts keeps that list
// true), each run as the tap script it is, but without tap's runner: no coverage (`npm test` measures it) and no TAP
// parsing. Each file's output is printed when it fails; exit 1 if any failed.
// The files run compiled, from a tree of the project's own made for the run (compiledTree), not through the
// TypeScript loader that `npm test` starts them with: the loader's hooks run on a thread of their own, and every
// import of every module crosses to it and back. That was a quarter of the CPU the quick run took (670 s of samples
// in all, 170 s of them the hooks' and their messages'), and a quick run took 157 s; compiled, 126 to 133 s (the 2-core
// test machine, 2026-11-28).
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import picomatch from 'picomatch'
import { configCheckSource } from './config-check.js'
import { killGroup } from './run-processes.js'
import { ROOT, compiled } from './ts-compile.js'
/** tap's default for one file, which the files are written to fit (package.json "tap"."timeout"). */
const FILE_TIMEOUT_S = 120
// Five files at a time on two cores: the files wait on timers and sockets for much of their time (the quick run took
// 308 s two at a time, 207 s three at a time; later, with lazier imports, 133 s three and 116 s four at a time;
// compiled, 131 s four, 124 s five and 133 s six at a time, the 2-core test machine, 2026-11-28). Files are run in name
// order: longest first ran them together and slower.
const JOBS = Math.max(1, Math.min(5, availableParallelism() + 3))

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

/** Folders that are never copied into the compiled tree, at any depth: they are linked to whole. */
const LINKED = new Set(['node_modules', '.git', 'dist', '.tap', 'coverage', 'workspace', '.scratch'])

/** A TypeScript file to compile: a .ts file, not a declaration file. */
const isTs = name => name.endsWith('.ts') && !name.endsWith('.d.ts')

/** Whether a folder holds a TypeScript file to compile, at any depth. */
function holdsTs (dir) {
  return readdirSync(dir, { withFileTypes: true }).some(entry => entry.isDirectory()
    ? !LINKED.has(entry.name) && holdsTs(join(dir, entry.name))
    : isTs(entry.name))
}

/**
 * The project's tree as the files see it, in `to`: each folder that holds TypeScript is a folder there, every other
 * file and folder a link to the original, and each `x.ts` is there as its link and as `x.js`, compiled as the build
 * compiles it (scripts/ts-compile.js, whose cache makes this quick). A file finds everything at the path it finds it
 * in the project (fixtures, docs, dist/ and node_modules/ through the links), and its imports of `./x.js` find the
 * compiled `x.ts`. Node follows the links of what it imports, so a module of node_modules/ or dist/ is loaded once.
 */
function compiledTree (from, to) {
  mkdirSync(to, { recursive: true })
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name)
    const target = join(to, entry.name)
    if (entry.isDirectory() && !LINKED.has(entry.name) && holdsTs(source)) {
      compiledTree(source, target)
      continue
    }
    symlinkSync(source, target)
    if (entry.isFile() && isTs(entry.name) && !existsSync(`${source.slice(0, -3)}.js`)) {
      // 'wx': never written through a link to a file of the project's.
      writeFileSync(`${target.slice(0, -3)}.js`, compiled(source), { flag: 'wx' })
    }
  }
}

// In node_modules/.cache, one tree per run, removed at the end; trees of runs that were killed are removed first.
const TREES = join(ROOT, 'node_modules', '.cache', 'fastify-a2a-quick')
mkdirSync(TREES, { recursive: true })
for (const pid of readdirSync(TREES)) {
  if (!alive(Number(pid))) rmSync(join(TREES, pid), { recursive: true, force: true })
}
const TREE = join(TREES, String(process.pid))
compiledTree(ROOT, TREE)
// The configuration's validator compiled ahead of time, as the build compiles it for dist/.
writeFileSync(join(TREE, 'services/config/config-check.cjs'), await configCheckSource(pathToFileURL(`${TREE}/`)))
process.on('exit', () => rmSync(TREE, { recursive: true, force: true }))

function alive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

/** Runs one file, compiled; its status and output. */
function run (file) {
  return new Promise(resolve => {
    const started = Date.now()
    const script = join(TREE, file.replace(/\.ts$/, '.js'))
    const child = spawn(process.execPath, ['--enable-source-maps', script], {
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
