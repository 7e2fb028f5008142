// Module hooks that let node run the project's TypeScript as the tests and the examples need it: registered by
// scripts/ts-import.js (`node --import ./scripts/ts-import.js file.ts`).
// - resolve: `./x.js`, where there is no such file, names the project's `./x.ts` when that exists (the sources
//   import by the name the build gives the file);
// - load: a .ts file of the project is compiled by TypeScript's own transpileModule, as the build compiles it, with an
//   inline source map, and the result is kept on disk, keyed by the file, its text and the compiler's options and
//   version: a process compiles only what changed since any earlier one did.
// Why not ts-node or an esbuild/swc loader:
// - ts-node compiled every file again in every test process: 5.5 s of CPU (3.9 s of wall time) to import index.ts,
//   against 1.3 s (1.0 s) from this cache; the suite's tap run took 610 s instead of 779 s (the quiet 2-core test
//   machine, 2026-11-28);
// - esbuild and swc map a function's start a column away from where tsc's map puts it. The tests' processes and the
//   built CLI that some tests start (dist/, from tsc) must agree on every position for the coverage of the two to
//   merge: with swc, 6 functions and 2 branches that both ran showed as missed.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const ROOT_URL = pathToFileURL(ROOT).href
const CACHE = join(ROOT, 'node_modules', '.cache', 'fastify-a2a-ts')
const require = createRequire(join(ROOT, 'package.json'))

/** What changes the output besides a file's own text: the compiler, the project's tsconfig files and this file. */
const SALT = ['typescript/package.json', 'fastify-tsconfig/tsconfig.json']
  .map(name => readFileSync(require.resolve(name), 'utf8'))
  .concat(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'), readFileSync(fileURLToPath(import.meta.url), 'utf8'))
  .join('\0')

/** A .ts file of the project's own (not one in node_modules), whatever its query (tap's mocks add one). */
function isOwnTs (url) {
  const { protocol, pathname } = new URL(url)
  return protocol === 'file:' && url.startsWith(ROOT_URL) && pathname.endsWith('.ts') && !pathname.includes('/node_modules/')
}

// The hooks after these ones in the chain (tap's mocks) see the name as imported, `./x.js`, and may answer for it;
// only a name that resolves to no file is tried as `./x.ts`. (Mapping first would hide `./x.js` from the mocks.)
export async function resolve (specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context)
  } catch (err) {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || context.parentURL === undefined) throw err
    const url = new URL(specifier, context.parentURL)
    if (!url.pathname.endsWith('.js')) throw err
    url.pathname = url.pathname.slice(0, -3) + '.ts'
    if (!isOwnTs(url.href) || !existsSync(url)) throw err
    return { url: url.href, format: 'module', shortCircuit: true }
  }
}

export async function load (url, context, nextLoad) {
  if (!isOwnTs(url)) return nextLoad(url, context)
  const file = fileURLToPath(url)
  const text = readFileSync(file, 'utf8')
  const key = createHash('sha256').update(SALT).update('\0').update(file).update('\0').update(text).digest('hex')
  const cached = join(CACHE, key.slice(0, 2), `${key}.js`)
  let source
  try {
    source = readFileSync(cached, 'utf8')
  } catch {
    source = compile(file, text)
    mkdirSync(dirname(cached), { recursive: true })
    // Written aside, then renamed: a process reading it at the same moment sees the whole file or none.
    const aside = `${cached}.${process.pid}.tmp`
    writeFileSync(aside, source)
    renameSync(aside, cached)
  }
  return { format: 'module', source, shortCircuit: true }
}

let compilerOptions

/**
 * The file compiled as the build compiles it (tsconfig.json's options), as an ES module with an inline source map
 * that names the file by its URL (a map relative to the build's outDir would point beside it).
 */
function compile (file, text) {
  const ts = require('typescript')
  if (compilerOptions === undefined) {
    const configFile = join(ROOT, 'tsconfig.json')
    const { config } = ts.readConfigFile(configFile, ts.sys.readFile)
    const parsed = ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, configFile)
    compilerOptions = {
      ...parsed.options,
      // ES modules, as NodeNext makes of a .ts file under "type": "module" (transpileModule cannot read package.json).
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      sourceMap: true,
      inlineSourceMap: false,
      inlineSources: false,
      outDir: undefined,
      rootDir: undefined,
      sourceRoot: undefined,
      declaration: false,
      declarationMap: false,
      noEmit: false
    }
  }
  const { outputText, sourceMapText } = ts.transpileModule(text, { fileName: file, compilerOptions })
  const map = JSON.parse(sourceMapText)
  map.sources = [pathToFileURL(file).href]
  const code = outputText.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '')
  return `${code}\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`
}
