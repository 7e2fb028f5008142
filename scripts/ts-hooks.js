// Module hooks that let node run the project's TypeScript as the tests and the examples need it: registered by
// scripts/ts-import.js (`node --import ./scripts/ts-import.js file.ts`).
// - resolve: `./x.js`, where there is no such file, names the project's `./x.ts` when that exists (the sources
//   import by the name the build gives the file);
// - load: a .ts file of the project is compiled as the build compiles it, through the cache of scripts/ts-compile.js.
// Why not ts-node or an esbuild/swc loader:
// - ts-node compiled every file again in every test process: 5.5 s of CPU (3.9 s of wall time) to import index.ts,
//   against 1.3 s (1.0 s) from this cache; the suite's tap run took 610 s instead of 779 s (the quiet 2-core test
//   machine, 2026-11-28);
// - esbuild and swc map a function's start a column away from where tsc's map puts it. The tests' processes and the
//   built CLI that some tests start (dist/, from tsc) must agree on every position for the coverage of the two to
//   merge: with swc, 6 functions and 2 branches that both ran showed as missed.
import { existsSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ROOT, compiled } from './ts-compile.js'

const ROOT_URL = pathToFileURL(ROOT).href

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
  return { format: 'module', source: compiled(fileURLToPath(url)), shortCircuit: true }
}
