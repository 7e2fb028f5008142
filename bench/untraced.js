// "A build without tracing", for the bench's tracing check: a copy of dist/ whose services/kernel/tracing.js (the one
// module that imports @opentelemetry/api) is replaced by one exporting the same names, each doing the least (`traced`
// calls its function, `traceCarrier` gives undefined, ...), and a plain copy of dist/ as the control. `tracingCost`
// sets the build beside each in one process (bench/tracing-cost.js): what the tracing calls cost when nothing
// records. The copies sit under node_modules/.cache/, from where a package import still finds the repository's
// node_modules (Node skips the `node_modules` folder itself on its way up), in a folder of their own per run: two runs
// at once never share one.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = path => fileURLToPath(new URL(path, import.meta.url))
const TRACING = 'services/kernel/tracing.js'

/**
 * The least each export of tracing.js can do, as its callers use it. An export missing here stops the bench (see
 * `noOpTracing`): a new one needs its line, or the build would drift from the real one.
 */
const NO_OPS = {
  traced: 'export function traced (_name, _attributes, fn) { return fn() }',
  tracedStream: 'export function tracedStream (_name, _attributes, stream) { return stream() }',
  activeSpanRecords: 'export function activeSpanRecords () { return false }',
  activeSpanAttributes: 'export function activeSpanAttributes () {}',
  // No span: the caller keeps undefined, as when nothing records.
  openSpan: 'export function openSpan () { return undefined }',
  spanEvent: 'export function spanEvent () {}',
  traceCarrier: 'export function traceCarrier () { return undefined }',
  injectTrace: 'export function injectTrace () {}',
  spanFailed: 'export function spanFailed () {}',
  // A new object each call, as the real one: pino writes the line's other fields into it.
  traceLogFields: 'export function traceLogFields () { return {} }'
}

/** The source of the no-op tracing.js for the exports of `dist`'s own (read by importing it). */
export async function noOpTracing (dist) {
  const names = Object.keys(await import(pathToFileURL(join(dist, TRACING)).href)).sort()
  const unknown = names.filter(name => !Object.hasOwn(NO_OPS, name))
  if (unknown.length > 0) {
    throw new Error(`bench/untraced.js: ${TRACING} exports ${unknown.join(', ')}, which has no no-op in NO_OPS: add one ` +
      'that does the least its callers allow')
  }
  return ['// Written by bench/untraced.js: every export of the real module, doing the least.', ...names.map(name => NO_OPS[name]), ''].join('\n')
}

/** The .js files under `dir`, relative to it. */
function jsFiles (dir, prefix = '') {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => entry.isDirectory()
    ? jsFiles(join(dir, entry.name), `${prefix}${entry.name}/`)
    : entry.name.endsWith('.js') ? [`${prefix}${entry.name}`] : [])
}

/**
 * Copies `dist` (default: the repository's) with the no-op tracing.js into a new folder under
 * node_modules/.cache/fastify-a2a-untraced/, and `dist` as it is beside it; `{ cli, index, controlIndex, remove }`: the
 * copy's cli.js and index.js, the plain copy's index.js, and what deletes both.
 */
export async function buildUntraced (dist = here('../dist')) {
  const cache = here('../node_modules/.cache/fastify-a2a-untraced')
  mkdirSync(cache, { recursive: true })
  const root = mkdtempSync(join(cache, 'run-'))
  const remove = () => rmSync(root, { recursive: true, force: true })
  try {
    const copy = join(root, 'dist')
    cpSync(dist, copy, { recursive: true })
    // The package.json beside it: `"type": "module"` for the copy's .js files (Node looks no further up than
    // node_modules for it), and the name and version the code reads.
    cpSync(here('../package.json'), join(root, 'package.json'))
    writeFileSync(join(copy, TRACING), await noOpTracing(dist))
    const stray = jsFiles(copy).filter(file => file !== TRACING && /['"]@opentelemetry\/api['"]/.test(readFileSync(join(copy, file), 'utf8')))
    if (stray.length > 0) throw new Error(`bench/untraced.js: ${stray.join(', ')} import @opentelemetry/api too: the build would still trace`)
    // And the build itself, copied the same way: the control of bench/tracing-cost.js (a module graph of its own).
    const control = join(root, 'control')
    cpSync(dist, control, { recursive: true })
    return { cli: join(copy, 'cli.js'), index: join(copy, 'index.js'), controlIndex: join(control, 'index.js'), remove }
  } catch (err) {
    remove()
    throw err
  }
}

/**
 * What the tracing calls cost message/send with no SDK (bench/tracing-cost.js, a process of its own): the build against
 * `untraced` (what `buildUntraced` made), then, as the control, against its plain copy. `{ rounds, batch, traced,
 * untraced, ratio, ratios, control }`.
 */
export function tracingCost (untraced, { rounds, batch }) {
  const run = other => {
    const child = spawnSync(process.execPath, ['--expose-gc', here('./tracing-cost.js'), here('../dist/index.js'), other, String(rounds), String(batch)], { encoding: 'utf8' })
    if (child.status !== 0) throw new Error(`bench/tracing-cost.js failed: ${child.stderr}`)
    return JSON.parse(child.stdout)
  }
  return { ...run(untraced.index), control: run(untraced.controlIndex).ratio }
}
