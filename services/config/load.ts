import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { A2AConfig } from '../../schemas/config.js'
import { configError, dotted, isPlainObject } from './problems.js'
import { substituteEnv, type Env } from './substitute.js'
import { validateConfig } from './validate.js'

export { configError, isConfigError, type ConfigProblemsError } from './problems.js'
export { substituteEnv, type Env } from './substitute.js'
export { validateConfig, type ConfigSources, type ValidateConfigOptions } from './validate.js'

/** Command-line flags: the highest precedence (CONTRACT.md §1). */
export interface ConfigOverrides {
  host?: string
  port?: number
  logLevel?: string
}

export interface LoadConfigOptions {
  /** An explicit config file (`--config`), relative to `cwd`. */
  file?: string
  /** Defaults to `process.env`. */
  env?: Env
  /** Defaults to `process.cwd()`. */
  cwd?: string
  overrides?: ConfigOverrides
}

export interface LoadedConfig {
  config: A2AConfig
  /** The absolute path of the file read, or undefined when running on the built-in defaults. */
  path: string | undefined
}

const LOCAL_CONFIG = 'agent.yml'

/** CONTRACT.md §1 lookup order: `--config`, then `A2A_CONFIG` (empty counts as unset), then `./agent.yml` if it exists. */
export function resolveConfigPath ({ file, env, cwd }: { file?: string, env: Env, cwd: string }): string | undefined {
  if (file) return resolve(cwd, file)
  if (env.A2A_CONFIG) return resolve(cwd, env.A2A_CONFIG)
  const local = join(cwd, LOCAL_CONFIG)
  return existsSync(local) ? local : undefined
}

/**
 * Reads, substitutes and validates the configuration. Precedence, highest first: `overrides` (CLI flags), the env
 * (`HOST`, `PORT`, `LOG_LEVEL`, `REDIS_URL`), the file, the schema defaults.
 * Throws `A2A_ERR_INVALID_CONFIG` with every problem; a problem with a value from the environment or a flag names it
 * (`$PORT`, `--port`, or `$VAR at <file>:<line>:<column>` for a `${VAR}` in the file).
 */
export async function loadConfig (options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env
  const cwd = options.cwd ?? process.cwd()
  const path = resolveConfigPath({ file: options.file, env, cwd })
  const sources = new Map<string, string>()
  let input: Record<string, unknown> = {}
  if (path !== undefined) {
    const { data, locate } = await readYaml(path)
    input = substituteEnv(data, env, (at, names) => {
      sources.set(dotted(at), `${[...new Set(names)].map(name => `$${name}`).join(', ')} at ${locate(at)}`)
    }) as Record<string, unknown>
  }
  applyEnv(input, env, sources)
  const { host, port, logLevel } = options.overrides ?? {}
  setServerKey(input, 'host', host, '--host', sources)
  setServerKey(input, 'port', port, '--port', sources)
  setServerKey(input, 'log_level', logLevel, '--log-level', sources)
  return { config: validateConfig(input, { sources }), path }
}

interface ParsedYaml {
  data: Record<string, unknown>
  /** `<file>:<line>:<column>` of the value at a path, or the file alone when the path has no node of its own. */
  locate: (path: string[]) => string
}

async function readYaml (path: string): Promise<ParsedYaml> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw configError([`${path}: cannot read the config file (${(err as NodeJS.ErrnoException).code})`])
  }
  // The YAML parser loads with the first file read: an embedder passes an object (docs/architecture.md, "What loads when").
  const { LineCounter, isMap, parseDocument } = await import('yaml')
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { lineCounter, prettyErrors: false })
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset)
    return `${path}:${line}:${col}`
  }
  if (doc.errors.length > 0) {
    throw configError(doc.errors.map(e => `${at(e.pos[0])}: ${e.message.split('\n')[0]}`))
  }
  // A value only an alias or a non-string key leads to has no node at its path: the file is all there is to name.
  const locate = (segments: string[]) => {
    const node = doc.getIn(segments, true) as { range?: [number] } | undefined
    return node?.range === undefined ? path : at(node.range[0])
  }
  if (doc.contents === null) return { data: {}, locate } // an empty file, or only comments
  if (!isMap(doc.contents)) {
    throw configError([`${at(doc.contents.range[0])}: the top level must be a mapping of keys (agent:, server:, ...)`])
  }
  try {
    return { data: doc.toJS({ maxAliasCount: 100 }), locate }
  } catch (err) {
    // Too many aliases (a "billion laughs" document).
    throw configError([`${path}: ${(err as Error).message}`])
  }
}

function applyEnv (input: Record<string, unknown>, env: Env, sources: Map<string, string>): void {
  setServerKey(input, 'host', env.HOST, '$HOST', sources)
  setServerKey(input, 'port', env.PORT, '$PORT', sources)
  setServerKey(input, 'log_level', env.LOG_LEVEL, '$LOG_LEVEL', sources)
  if (env.REDIS_URL) setRedisUrl(input, env.REDIS_URL, sources)
}

// An empty or absent value changes nothing; a `server` that is not a mapping is left for the schema to report.
function setServerKey (input: Record<string, unknown>, key: string, value: string | number | undefined,
  source: string, sources: Map<string, string>): void {
  if (value === undefined || value === '') return
  input.server ??= {}
  if (!isPlainObject(input.server)) return
  input.server[key] = value
  sources.set(`server.${key}`, source)
}

// CONTRACT.md §1: REDIS_URL replaces the url of the first `type: cache` service (creating `services.cache` when
// there is none), and its path `/N` picks the db.
function setRedisUrl (input: Record<string, unknown>, url: string, sources: Map<string, string>): void {
  input.services ??= {}
  const services = input.services
  if (!isPlainObject(services)) return
  let name = Object.keys(services).find(key => isPlainObject(services[key]) && services[key].type === 'cache')
  if (name === undefined) {
    if (Object.hasOwn(services, 'cache')) return // not a cache entry: the schema reports it
    name = 'cache'
    services.cache = { type: 'cache' }
  }
  const entry = services[name] as Record<string, unknown>
  entry.url = url
  sources.set(dotted(['services', name, 'url']), '$REDIS_URL')
  const db = /^\/(\d+)$/.exec(URL.canParse(url) ? new URL(url).pathname : '')
  if (db === null) return
  entry.db = Number(db[1])
  sources.set(dotted(['services', name, 'db']), '$REDIS_URL')
}
