import t from 'tap'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

// The shape of the code (docs/architecture.md): layers that import only downwards, no import circle, no source
// file over 400 lines, and a task layer that knows no wire. Read from the sources' import lines.

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const MAX_LINES = 400

/** Layers, top to bottom: a file imports only from its own layer or the ones below it. */
const LAYERS: ReadonlyArray<{ name: string, rank: number, paths: readonly string[] }> = [
  { name: 'bindings', rank: 4, paths: ['routes/', 'plugins/', 'services/grpc/', 'index.ts', 'server.ts', 'cli.ts'] },
  { name: 'protocol', rank: 3, paths: ['services/a2a/', 'services/json-rpc/', 'services/rest/', 'services/console/'] },
  {
    name: 'services',
    rank: 2,
    paths: ['services/tasks/', 'services/push/', 'services/auth/', 'services/agent/', 'services/config/', 'services/serving/']
  },
  { name: 'kernel', rank: 0, paths: ['services/kernel/', 'services/redis/', 'services/postgres/', 'schemas/'] }
]

/** Imports that go up a layer and stay, each with the reason. None today. */
const ALLOWED_UPWARD: ReadonlyMap<string, string> = new Map()

/** The store files of a service: they import stores and the kernel, never the service that uses them. */
const STORE = /^services\/(tasks|push)\/(store|memory-store|redis-store|postgres-store|redis-scripts|redis-chunks|outbox)\.ts$/
const SERVICE_CLASSES = /^services\/(tasks\/(task-service|writer|run-loop|housekeeping)|push\/(notifier|service|durable-queue|postgres-queue))\.ts$/

function sources (): string[] {
  const out: string[] = ['index.ts', 'server.ts', 'cli.ts']
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(root, dir))) {
      const path = `${dir}/${name}`
      if (statSync(join(root, path)).isDirectory()) {
        if (path !== 'schemas/proto') walk(path)
      } else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
        out.push(path)
      }
    }
  }
  for (const dir of ['routes', 'plugins', 'services', 'schemas']) walk(dir)
  return out.sort()
}

function layerOf (file: string): { name: string, rank: number } | undefined {
  return LAYERS.find(layer => layer.paths.some(p => p.endsWith('/') ? file.startsWith(p) : file === p))
}

const FROM = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g
/** `await import('./x.js')`: a module loaded when first needed is a dependency all the same. */
const DYNAMIC = /\bimport\('(\.{1,2}\/[^']+)'\)/g

function importsOf (file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  const out = new Set<string>()
  for (const m of [...text.matchAll(FROM), ...text.matchAll(DYNAMIC)]) {
    out.add(relative(root, resolve(root, dirname(file), m[1])).replace(/\.js$/, '.ts'))
  }
  return [...out]
}

const files = sources()
const graph = new Map(files.map(file => [file, importsOf(file)]))

t.test('every source file belongs to a layer', async t => {
  t.same(files.filter(file => layerOf(file) === undefined), [], 'files outside every layer')
})

t.test('no import goes from a lower layer to a higher one', async t => {
  const upward: string[] = []
  for (const [file, imports] of graph) {
    const from = layerOf(file)
    for (const target of imports) {
      const to = layerOf(target)
      if (from === undefined || to === undefined || to.rank <= from.rank) continue
      const edge = `${file} -> ${target}`
      if (!ALLOWED_UPWARD.has(edge)) upward.push(`${edge} (${from.name} -> ${to.name})`)
    }
  }
  t.same(upward, [], 'upward imports')
})

t.test('the task layer imports nothing from the protocol layer, the bindings, the routes or the plugins', async t => {
  const found: string[] = []
  for (const [file, imports] of graph) {
    if (!file.startsWith('services/tasks/')) continue
    for (const target of imports) {
      if ((layerOf(target)?.rank ?? 0) > 2) found.push(`${file} -> ${target}`)
    }
  }
  t.same(found, [])
})

t.test('a store imports no service that uses it', async t => {
  const found: string[] = []
  for (const [file, imports] of graph) {
    if (!STORE.test(file)) continue
    for (const target of imports) if (SERVICE_CLASSES.test(target)) found.push(`${file} -> ${target}`)
  }
  t.same(found, [])
})

t.test('no import circle', async t => {
  const cycles: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (file: string): void => {
    state.set(file, 'open')
    stack.push(file)
    for (const target of graph.get(file) ?? []) {
      if (state.get(target) === 'open') cycles.push(stack.slice(stack.indexOf(target)).concat(target).join(' -> '))
      else if (!state.has(target) && graph.has(target)) visit(target)
    }
    stack.pop()
    state.set(file, 'done')
  }
  for (const file of files) if (!state.has(file)) visit(file)
  t.same(cycles, [])
})

t.test(`no source file is over ${MAX_LINES} lines`, async t => {
  const long = files
    .map(file => ({ file, lines: readFileSync(join(root, file), 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > MAX_LINES)
    .map(({ file, lines }) => `${file}: ${lines}`)
  t.same(long, [])
})

t.test('the checks see the code: every layer has files, and imports were read', async t => {
  for (const layer of LAYERS) t.ok(files.some(file => layerOf(file) === layer), `${layer.name} has files`)
  t.ok([...graph.values()].reduce((sum, imports) => sum + imports.length, 0) > 300, 'the import lines are parsed')
  t.ok(graph.get('services/tasks/task-service.ts')?.includes('services/tasks/writer.ts'), 'a known import is found')
})
