import { createRequire } from 'node:module'
import { isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { LlmConfig } from '../../schemas/config.js'
import { validateConfig } from '../config/validate.js'
import { InvalidPluginOptions } from '../kernel/errors.js'
import { createBuiltinAgent } from './builtin.js'
import type { AgentExecutor } from './executor.js'

export interface LoadExecutorOptions {
  /** Where a module path or package specifier is resolved from: the server's working directory. */
  cwd: string
  /** `agent.delay_ms`, for the built-in agents. */
  delayMs: number
  /** `agent.llm`, for `openai`; default: the schema's defaults. */
  llm?: LlmConfig
}

/**
 * The executor named by `agent.executor` (CONTRACT.md §2): `builtin`, `echo`, `openai` (docs/llm-executor.md), or a
 * module whose default export, or named export `executor`, is an AgentExecutor. A path (starting with `.` or `/`) is resolved against `cwd`; a
 * package specifier is looked up from `cwd` first, then from this package, as a dependency of the host app is.
 */
export async function loadExecutor (spec: string, opts: LoadExecutorOptions): Promise<AgentExecutor> {
  if (spec === 'builtin') return createBuiltinAgent({ delayMs: opts.delayMs })
  if (spec === 'echo') return createBuiltinAgent({ delayMs: opts.delayMs, tools: false })
  if (spec === 'openai') {
    // Its client, stream parser and message mapping (five modules) load only for this executor.
    const { createOpenAIExecutor } = await import('./openai.js')
    return createOpenAIExecutor({ llm: opts.llm ?? validateConfig({}).agent.llm })
  }
  let mod: Record<string, unknown>
  try {
    mod = await import(moduleUrl(spec, opts.cwd))
  } catch (err) {
    throw new InvalidPluginOptions(`agent.executor: cannot load ${spec}: ${(err as Error).message}`, { cause: err })
  }
  const executor = typeof mod.default === 'function' ? mod.default : mod.executor
  if (typeof executor !== 'function') {
    throw new InvalidPluginOptions(`agent.executor: ${spec} does not export an AgentExecutor function`)
  }
  return executor as AgentExecutor
}

function moduleUrl (spec: string, cwd: string): string {
  if (spec.startsWith('.') || isAbsolute(spec)) return pathToFileURL(resolve(cwd, spec)).href
  try {
    // CommonJS resolution, from a file in cwd: it walks cwd's node_modules, which `import()` from here cannot do.
    return pathToFileURL(createRequire(join(resolve(cwd), 'noop.js')).resolve(spec)).href
  } catch {
    // Not found from cwd (or only exported under the `import` condition): let Node resolve it from this package.
    return spec
  }
}
