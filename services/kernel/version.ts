import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** This package's version, read from its package.json (the source tree and dist/ sit at different depths). */
function readVersion (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
      if (pkg.name === 'fastify-a2a') return pkg.version
    } catch {}
    const parent = dirname(dir)
    /* c8 ignore next -- only when the package.json is missing, which npm never allows */
    if (parent === dir) return '0.0.0'
    dir = parent
  }
}

export const VERSION = readVersion()
