// The project's TypeScript compiled one file at a time, as the build compiles it, for the tests and the examples:
// used by the module hooks (scripts/ts-hooks.js) and by `npm run test:quick`'s compiled tree (scripts/test-quick.js).
// A file is compiled by TypeScript's own transpileModule with an inline source map, and the result is kept on disk,
// keyed by the file, its text and the compiler's options and version: a process compiles only what changed since any
// earlier one did.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CACHE = join(ROOT, 'node_modules', '.cache', 'fastify-a2a-ts')
const require = createRequire(join(ROOT, 'package.json'))

/** What changes the output besides a file's own text: the compiler, the project's tsconfig files and this file. */
const SALT = ['typescript/package.json', 'fastify-tsconfig/tsconfig.json']
  .map(name => readFileSync(require.resolve(name), 'utf8'))
  .concat(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'), readFileSync(fileURLToPath(import.meta.url), 'utf8'))
  .join('\0')

/** The JavaScript of a .ts file of the project's, from the cache when it holds the file's text as it is now. */
export function compiled (file) {
  const text = readFileSync(file, 'utf8')
  const key = createHash('sha256').update(SALT).update('\0').update(file).update('\0').update(text).digest('hex')
  const cached = join(CACHE, key.slice(0, 2), `${key}.js`)
  try {
    return readFileSync(cached, 'utf8')
  } catch {
    const source = compile(file, text)
    mkdirSync(dirname(cached), { recursive: true })
    // Written aside, then renamed: a process reading it at the same moment sees the whole file or none.
    const aside = `${cached}.${process.pid}.tmp`
    writeFileSync(aside, source)
    renameSync(aside, cached)
    return source
  }
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
