import type { A2AConfig, Extension } from '../../schemas/config.js'
import { extensionUriProblem } from '../config/validate.js'
import type { Principal } from '../auth/principal.js'
import { InvalidPluginOptions, JsonRpcError, RpcCode } from '../kernel/errors.js'
import { isThenable } from '../kernel/maybe-promise.js'
import type { Logger } from '../kernel/logger.js'
import { isV10Method } from './version.js'

// A2A extensions (v1.0 §4.6, docs/protocol.md "Extensions"): the card declares them, a client activates them per
// request with the `A2A-Extensions` header (v0.3 also `X-A2A-Extensions`; gRPC: the `a2a-extensions` metadata), and a
// request that does not activate every extension the card marks `required` is refused before its method runs.

/** Our own extension: a send repeated with the same `messageId` gets the first send's task (`tasks.dedupe_window`). */
export const IDEMPOTENT_SEND_EXTENSION = 'urn:fastify-a2a:extension:idempotent-send:v1'

export { RESERVED_EXTENSION_PREFIX } from '../config/validate.js'

/**
 * What an activation header is read of, at most: its first 64 comma-separated items, within its first 8 KiB (both
 * headers together, for v0.3). A client cannot make the server allocate more, however long the header it sends.
 */
export const MAX_ACTIVATION_ITEMS = 64
export const MAX_ACTIVATION_CHARS = 8192

/** The request's activation header, and the answer's listing what was activated (gRPC: metadata of that name). */
export const EXTENSIONS_HEADER = 'a2a-extensions'
/** v0.3's spelling of it, which v0.3 clients send and read. */
export const LEGACY_EXTENSIONS_HEADER = 'x-a2a-extensions'

/** An `AgentExtension` as the card writes it (a2a.proto, both versions: `capabilities.extensions`). */
export interface AgentExtension {
  uri: string
  description: string
  required: boolean
  params?: Record<string, unknown>
}

/** What an extension's hooks get: the call, and the extensions the request activated. */
export interface ExtensionCall {
  /** The method's name (`SendMessage`, `message/send`, `tasks/get`, ...). */
  readonly method: string
  /** Its params, validated (and decoded to the method's form). */
  readonly params: unknown
  readonly principal: Principal
  /** Every extension the request activated, this one among them. */
  readonly extensions: readonly string[]
  readonly log: Logger
}

/** Code an embedding app runs around a method when its extension is activated (docs/embedding.md, "Extensions of your own"). */
export interface ExtensionHooks {
  /** Before the method. Throwing refuses the call: a JsonRpcError as it is, anything else as an internal error. */
  onRequest?: (call: ExtensionCall) => void | Promise<void>
  /**
   * After the method answered, with its result in the wire form of the method's version (a streaming method's
   * result is its stream, before its first event). Throwing turns the answer into that error.
   */
  onResponse?: (call: ExtensionCall, result: unknown) => void | Promise<void>
}

/** An extension an embedding app registers with the plugin's `extensions` option: declared on the card, with hooks. */
export interface ExtensionDefinition {
  uri: string
  description?: string
  /** Clients must activate it; a request that does not is refused. Default false. */
  required?: boolean
  params?: Record<string, unknown>
  hooks?: ExtensionHooks
}

/** What the guard reads of a method's context (services/json-rpc/registry.ts, MethodContext). */
interface CallContext { readonly principal: Principal, readonly log: Logger, readonly extensions?: readonly string[] }

const NONE: readonly string[] = Object.freeze([])

/**
 * The extensions the card declares: `agent.extensions` (the plugin's `extensions` option merged in at start, see
 * `withPluginExtensions`), then ours, `IDEMPOTENT_SEND_EXTENSION`, while `tasks.dedupe_window` is on.
 */
export function cardExtensions (config: A2AConfig): AgentExtension[] {
  const out: AgentExtension[] = config.agent.extensions.map(({ uri, description, required, params }) =>
    params === undefined ? { uri, description, required } : { uri, description, required, params })
  const window = config.tasks.dedupe_window
  if (window > 0) {
    out.push({
      uri: IDEMPOTENT_SEND_EXTENSION,
      description: `A message sent again with the same messageId by the same caller within ${window} seconds gets the ` +
        'task its first send made, and the agent does not run again; the same messageId with another message is refused.',
      required: false,
      // A string, google.protobuf.Duration's JSON form: the Python SDK's verifier rewrites numbers in `params` as
      // floats, so a number here would keep every default card from verifying there.
      params: { window: `${window}s` }
    })
  }
  return out
}

/**
 * The configuration with the plugin's extensions declared after `agent.extensions`. Throws InvalidPluginOptions, one
 * line, for a URI declared twice or under our reserved prefix.
 */
export function withPluginExtensions (config: A2AConfig, defined: readonly ExtensionDefinition[] | undefined): A2AConfig {
  if (defined === undefined || defined.length === 0) return config
  const seen = new Set(config.agent.extensions.map(extension => extension.uri))
  const added: Extension[] = defined.map((extension, i) => {
    const { uri } = extension
    const problem = typeof uri === 'string' ? extensionUriProblem(uri, seen) : 'must be a URI, without spaces or commas'
    if (problem !== undefined) throw new InvalidPluginOptions(`extensions.${i}.uri: ${problem}`)
    const out: Extension = { uri, description: extension.description ?? '', required: extension.required === true }
    if (extension.params !== undefined) out.params = extension.params
    return out
  })
  return { ...config, agent: { ...config.agent, extensions: [...config.agent.extensions, ...added] } }
}

/**
 * What a server does with extensions: reads a request's activation, refuses a request that lacks a required one, and
 * runs the hooks of the activated ones around the method. One per method registry.
 */
export class ExtensionSupport {
  /** Every URI the card declares. */
  readonly #declared: ReadonlySet<string>
  /** The URIs the card marks `required`, in its order. */
  readonly required: readonly string[]
  readonly #hooks: ReadonlyMap<string, ExtensionHooks>

  constructor (declared: readonly AgentExtension[] = [], hooks: readonly ExtensionDefinition[] = []) {
    this.#declared = new Set(declared.map(extension => extension.uri))
    this.required = declared.filter(extension => extension.required).map(extension => extension.uri)
    this.#hooks = new Map(hooks.flatMap(({ uri, hooks }) => hooks === undefined ? [] : [[uri, hooks]]))
  }

  /**
   * The extensions a request activates: the URIs its activation header lists that the card declares, each once, in
   * the order given; unknown ones are ignored (v1.0 §4.6.3). `headers` are lower-cased (Node's, or gRPC metadata);
   * a v0.3 method reads `X-A2A-Extensions` too (both: their union). Only the first MAX_ACTIVATION_ITEMS items of the
   * first MAX_ACTIVATION_CHARS characters are read.
   */
  activate (headers: Readonly<Record<string, unknown>> | undefined, method: string): readonly string[] {
    if (this.#declared.size === 0 || headers === undefined) return NONE
    const found: string[] = []
    const left = { items: MAX_ACTIVATION_ITEMS, chars: MAX_ACTIVATION_CHARS }
    this.#scan(headers[EXTENSIONS_HEADER], found, left)
    if (!isV10Method(method)) this.#scan(headers[LEGACY_EXTENSIONS_HEADER], found, left)
    return found.length === 0 ? NONE : found
  }

  #scan (value: unknown, found: string[], left: { items: number, chars: number }): void {
    if (typeof value !== 'string' || left.chars <= 0) return
    const text = value.length > left.chars ? value.slice(0, left.chars) : value
    left.chars -= text.length
    let start = 0
    while (start <= text.length && left.items > 0) {
      const comma = text.indexOf(',', start)
      const end = comma < 0 ? text.length : comma
      left.items--
      const uri = text.slice(start, end).trim()
      if (this.#declared.has(uri) && !found.includes(uri)) found.push(uri)
      start = end + 1
    }
  }

  /**
   * The handler of method `name`, checked first for the required extensions (unless `exempt`: the card methods,
   * which tell a client what it must activate) and run between the activated extensions' hooks. The handler as it
   * is when there is nothing to check or run.
   */
  guard<C extends CallContext> (name: string, handler: (params: unknown, ctx: C) => unknown, exempt: boolean): (params: unknown, ctx: C) => unknown {
    const required = exempt ? NONE : this.required
    if (required.length === 0 && this.#hooks.size === 0) return handler
    const hooks = this.#hooks
    return (params, ctx) => {
      const activated = ctx.extensions ?? NONE
      const missing = required.filter(uri => !activated.includes(uri))
      if (missing.length > 0) throw extensionRequired(name, missing)
      const around = activated.flatMap(uri => hooks.get(uri) ?? [])
      if (around.length === 0) return handler(params, ctx)
      return hooked(around, { method: name, params, principal: ctx.principal, extensions: activated, log: ctx.log }, () => handler(params, ctx))
    }
  }
}

/**
 * The answer's headers (gRPC: its initial metadata) saying which extensions were activated: `A2A-Extensions`, and for a
 * v0.3 method `X-A2A-Extensions` too, which v0.3 clients read. None when nothing was activated.
 */
export function activatedHeaders (extensions: readonly string[], method: string): Record<string, string> {
  if (extensions.length === 0) return {}
  const value = extensions.join(',')
  return isV10Method(method) ? { [EXTENSIONS_HEADER]: value } : { [EXTENSIONS_HEADER]: value, [LEGACY_EXTENSIONS_HEADER]: value }
}

/** The method between the hooks: every `onRequest` in turn, the method, then every `onResponse` in turn. */
async function hooked (hooks: readonly ExtensionHooks[], call: ExtensionCall, run: () => unknown): Promise<unknown> {
  for (const hook of hooks) if (hook.onRequest !== undefined) await hook.onRequest(call)
  let result = run()
  if (isThenable(result)) result = await result
  try {
    for (const hook of hooks) if (hook.onResponse !== undefined) await hook.onResponse(call, result)
  } catch (err) {
    // A streaming method's result is its open stream (plugins/sse.ts EventSource): refused, it is closed, not left
    // subscribed to its task.
    const stream = result as { close?: unknown } | null
    if (typeof stream?.close === 'function') (stream as { close: () => void }).close()
    throw err
  }
  return result
}

/**
 * The refusal of a request that did not activate the required extensions `missing` (v1.0 §3.3.4): v1.0
 * ExtensionSupportRequiredError (-32008); a v0.3 method, which has no such error, -32602 with
 * `data.reason: "EXTENSION_SUPPORT_REQUIRED"` and the URIs in `data.extensions`.
 */
export function extensionRequired (method: string, missing: readonly string[]): JsonRpcError {
  const detail = `the request must activate the extension${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (the A2A-Extensions header)`
  if (isV10Method(method)) return new JsonRpcError(RpcCode.extensionSupportRequired, 'Extension support required', detail)
  return new JsonRpcError(RpcCode.invalidParams, 'Extension support required', { reason: 'EXTENSION_SUPPORT_REQUIRED', extensions: [...missing], message: detail })
}
