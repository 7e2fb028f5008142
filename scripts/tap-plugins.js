// Before a tap run: makes tap's built Test class carry the plugins package.json "tap"."plugin" asks for.
// `npm ci` installs it built with tap's default set, ts-node's plugin among them. tap's runner notices and rebuilds
// it, but only for the next run: the run that noticed still starts every file with the old set's loaders, so each
// file also loads ts-node (about 0.35 s of CPU per file, measured on index.ts, across ~150 files). `tap build`
// takes about 4 s, so it runs only when the two sets differ.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { TapConfig } from '@tapjs/config'
import { signature } from '@tapjs/test'

const config = await TapConfig.load()
if (config.pluginSignature !== signature) {
  const manifest = createRequire(import.meta.url).resolve('tap/package.json')
  const bin = join(dirname(manifest), 'dist/esm/run.mjs')
  const built = spawnSync(process.execPath, [bin, 'build'], { stdio: 'inherit' })
  process.exitCode = built.status ?? 1
}
