// `npm run test:quick` (package.json) runs the suite less the slow files it excludes by name: those that start the
// built CLI or another program, a browser, npm, an image build, the bench or the profiler, or tap itself. Every test
// file is one or the other, and this keeps the split true: a file that starts a process must be in the slow list, and
// every file in it must still start one, or put a Redis it started through an outage (else it belongs to the inner
// loop). Starting a redis-server of its own (`privateRedis`) does not make a file slow.
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import picomatch from 'picomatch'
import t from 'tap'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))

/**
 * What makes a test file slow: a process started (helper's `serve`, test/crash-scenarios.ts's `crashInstance`,
 * test/processes.ts, node:child_process), a browser.
 */
const SLOW = /(?<![.\w])(?:serve|crashInstance|spawnChild|runChild|spawn|execFile|exec|fork)\(|playwright|dist\/cli\.js/

/**
 * What may make a test file slow though it starts no process: it puts a Redis it started through an outage (stops,
 * restarts or pauses it, or fills its memory) and waits the service through it, seconds at a time.
 */
const FAULT = /\bredis\.(?:stop|restart)\(\)|'PAUSE'|maxmemory/

/** The glob patterns test:quick passes tap as --exclude. */
function quickExcludes (script: string): string[] {
  return [...script.matchAll(/--exclude='([^']+)'/g)].map(m => m[1])
}

/** A pattern's alternatives, one per name of its `{a,b,…}` (one level, as the script writes them). */
function alternatives (pattern: string): string[] {
  const m = /^(.*)\{([^}]*)\}(.*)$/.exec(pattern)
  return m === null ? [pattern] : m[2].split(',').map(name => `${m[1]}${name}${m[3]}`)
}

const files = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
  .map(file => relative(ROOT, join(ROOT, 'test', file)).split('\\').join('/'))
  .filter(file => file.endsWith('.test.ts') && !file.startsWith('test/fixtures/'))
  .sort()

t.test('test:quick is scripts/test-quick.js on the suite, with a throwaway Redis and PostgreSQL, less the slow files', async t => {
  const script: string = PACKAGE.scripts['test:quick']
  t.match(script, /^node scripts\/tap-plugins\.js && node scripts\/with-services\.js node scripts\/test-quick\.js /)
  t.same(script.replace(/ --exclude='[^']+'/g, ''), 'node scripts/tap-plugins.js && node scripts/with-services.js node scripts/test-quick.js', 'nothing but excludes')
  t.ok(quickExcludes(script).includes('test/fixtures/**'), 'the fixtures stay out, as in the full run')
})

t.test('every test file is quick or slow: none that starts a process is quick, each slow one starts one or injects a Redis fault', async t => {
  const excludes = quickExcludes(PACKAGE.scripts['test:quick']).filter(p => p !== 'test/fixtures/**')
  const slow = picomatch(excludes)
  t.ok(files.length > 100, 'the suite was found')
  // This file names the markers it looks for.
  for (const file of files.filter(f => f !== 'test/test-sets.test.ts')) {
    const text = readFileSync(join(ROOT, file), 'utf8')
    const starts = SLOW.exec(text)
    if (slow(file)) {
      t.ok(starts !== null || FAULT.test(text), `${file}: slow, starts a process or puts a Redis through an outage`,
        { fix: 'it does neither: take it out of test:quick\'s slow list (package.json)' })
    } else {
      t.equal(starts?.[0], undefined, `${file}: quick, starts no process`, { fix: 'add it to test:quick\'s slow list (package.json)' })
    }
  }
  for (const pattern of excludes.flatMap(alternatives)) {
    const names = picomatch(pattern)
    t.ok(files.some(file => names(file)), `${pattern}, in test:quick's slow list, names a test file`)
  }
})

t.test('the classification check itself: the patterns as the script writes them', async t => {
  t.same(quickExcludes("tap --exclude='a/**' --exclude='test/{x,y}.test.ts'"), ['a/**', 'test/{x,y}.test.ts'])
  t.same(alternatives('test/{x,y}.test.ts'), ['test/x.test.ts', 'test/y.test.ts'])
  t.same(alternatives('test/a*.test.ts'), ['test/a*.test.ts'])
  for (const line of ["spawn('sh')", 'execFile(cmd)', "serve(t, ['--config'])", "runChild(t, 'npm')", "import { chromium } from 'playwright-core'"]) {
    t.match(line, SLOW, line)
  }
  for (const line of ['/x/.exec(line)', "execFileSync('mkfifo', [])", 'privateRedis(t)', 'spawnSync(x)', 'observe(t)']) {
    t.notMatch(line, SLOW, line)
  }
  for (const line of ['redis.stop()', 'await redis.restart()', "redis.call('CLIENT', 'PAUSE', '2500', 'WRITE')", "'CONFIG', 'SET', 'maxmemory', '1'"]) {
    t.match(line, FAULT, line)
  }
  for (const line of ['privateRedis(t)', 'redis.resume()', 'app.close()', 'stop()']) t.notMatch(line, FAULT, line)
})

t.test('each file runs with the project\'s TypeScript loader alone: tap is built with the configured plugins first', async t => {
  for (const name of ['test', 'test:only', 'test:quick']) {
    t.match(PACKAGE.scripts[name], /(?:^|&& )node scripts\/tap-plugins\.js && node scripts\/with-services\.js /, `${name} runs scripts/tap-plugins.js before the files`)
  }
  t.ok(PACKAGE.tap.plugin.includes('!@tapjs/typescript'), 'tap\'s ts-node plugin is off')
  // This file's own process: started by tap's runner, through the project's loader, or by test-quick, compiled
  // ahead (scripts/test-quick.js), after scripts/tap-plugins.js either way.
  const compiled = import.meta.url.endsWith('.js')
  t.equal(process.execArgv.some(arg => arg.endsWith('scripts/ts-import.js')), !compiled, compiled
    ? 'compiled by test-quick: the loader is not loaded'
    : 'the project\'s loader is loaded')
  t.notOk(process.execArgv.some(arg => arg.includes('@tapjs/typescript')), 'ts-node\'s is not')
})
