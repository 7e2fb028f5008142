// `npm start` and `npm pack` build first when dist/ is missing or older than any TypeScript source (CONTRACT.md §1),
// as `npm run build` does, compiler and assets: a tarball packed on a fresh clone ships a whole dist/.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const SOURCE_DIRS = ['plugins', 'routes', 'schemas', 'services']
const target = join(root, 'dist', 'cli.js')

function newestSource () {
  let newest = 0
  const visit = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) visit(path)
      else if (entry.name.endsWith('.ts') || entry.name.endsWith('.proto')) newest = Math.max(newest, statSync(path).mtimeMs)
    }
  }
  for (const name of readdirSync(root)) {
    if (name.endsWith('.ts') || name === 'tsconfig.json' || name === 'tsconfig.build.json') {
      newest = Math.max(newest, statSync(join(root, name)).mtimeMs)
    }
  }
  for (const dir of SOURCE_DIRS) if (existsSync(join(root, dir))) visit(join(root, dir))
  return newest
}

if (!existsSync(target) || statSync(target).mtimeMs < newestSource()) {
  process.stderr.write('building fastify-a2a...\n')
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], {
    stdio: 'inherit'
  })
  // The build's second step (`npm run build`): the protos and the ahead-of-time config validator that dist/ needs.
  execFileSync(process.execPath, [join(root, 'scripts', 'build-assets.js')], { stdio: 'inherit' })
}
