import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import type { Static, TSchema } from '@sinclair/typebox'
import type { Logger } from '../kernel/logger.js'
import type { Principal } from '../auth/principal.js'
import { RpcCode, invalidParams } from '../kernel/errors.js'
import { activeSpanRecords, traced } from '../kernel/tracing.js'
import { isV10Method } from '../a2a/version.js'
import { ExtensionSupport } from '../a2a/extensions.js'

export type JsonRpcId = string | number | null

/** What a method handler gets besides its params. */
export interface MethodContext {
  readonly principal: Principal
  readonly log: Logger
  /** The JSON-RPC request id, echoed by streaming methods in every event. */
  readonly id: JsonRpcId
  /**
   * `rest03`: the call comes from a v0.3 REST route (CONTRACT.md §12), and a v0.3 method answers tasks and stream
   * events in the v0.3 proto form. Absent: the method's own form.
   */
  readonly wire?: 'rest03'
  /** The request's `Last-Event-ID` header: where a stream that resumes starts (docs/architecture.md, "Resumable streams"). */
  readonly lastEventId?: string
  /** The binding the call came over, when not JSON-RPC: its operation's span says so. */
  readonly binding?: 'http+json' | 'grpc'
  /** The request's headers (gRPC: its metadata): a `traceparent` among them is the parent of the operation's span. */
  readonly headers?: object
  /**
   * The extensions the request activated (`ExtensionSupport.activate`: the declared ones its `A2A-Extensions` header
   * lists). Absent: none. The registry refuses the call before its handler when a required one is missing.
   */
  readonly extensions?: readonly string[]
}

export interface MethodDefinition<S extends TSchema = TSchema> {
  /** The JSON-RPC method name, e.g. `tasks/get`. */
  readonly name: string
  readonly summary: string
  /** TypeBox schema of `params`; absent when the method takes none (params, if sent, are then ignored). */
  readonly params?: S
  /** Applied to the params before they are validated (v1.0: snake_case keys renamed, CONTRACT.md §11.2). */
  readonly prepare?: (params: unknown) => unknown
  /** TypeBox schema of the result, for documentation (OpenRPC) and serialization. */
  readonly result?: TSchema
  /**
   * The v0.3 method this one is the v1.0 twin of: without an override of its own, it needs the scopes
   * `security.method_scopes` gives its twin (CONTRACT.md §11.3).
   */
  readonly twin?: string
  /** Scopes a caller needs; `security.method_scopes` overrides them per method. Empty: authentication only. */
  readonly scopes?: readonly string[]
  /** Streaming methods answer with Server-Sent Events. */
  readonly streaming?: boolean
  /** Error codes the method can answer with, besides the generic ones (for documentation). */
  readonly errors?: readonly number[]
  /**
   * Served without the extensions the card marks required: the card methods, which tell a client what it must
   * activate (docs/protocol.md, "Extensions"). Their hooks still run when activated.
   */
  readonly discovery?: boolean
  readonly handler: (params: Static<S>, ctx: MethodContext) => unknown
}

/** A registered method, with its params validator compiled once and its effective scopes. */
export interface RegisteredMethod extends MethodDefinition {
  readonly scopes: readonly string[]
  readonly validate: ((params: unknown) => unknown) | undefined
}

/** One compiler for every registry: Ajv keeps no state a call leaves behind but the function's `errors`. */
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, strict: false, discriminator: true })

/**
 * Validators by schema object, shared by every registry in the process. The methods' params schemas are module
 * constants, so a second app (an embedder's second agent, every test's fresh app) compiles none again: building an
 * app took 90 ms, 31 ms of it compiling the same schemas (20 builds, CPU profile, 2026-11-28). A WeakMap, and Ajv's
 * own cache emptied after each compile, so a schema made per app goes with the app.
 */
const compiled = new WeakMap<TSchema, ValidateFunction>()

function validatorOf (schema: TSchema): ValidateFunction {
  let check = compiled.get(schema)
  if (check === undefined) {
    check = ajv.compile(schema)
    ajv.removeSchema(schema)
    compiled.set(schema, check)
  }
  return check
}

/**
 * The methods this server answers: each one an entry with a params schema, a handler and its scopes. Later
 * features add entries; dispatch never grows a switch.
 */
export class MethodRegistry {
  readonly #methods = new Map<string, RegisteredMethod>()
  readonly #scopeOverrides: Readonly<Record<string, readonly string[]>>
  /** The extensions the card declares: what a request activates, which are required, and their hooks. */
  readonly extensions: ExtensionSupport

  constructor (scopeOverrides: Readonly<Record<string, readonly string[]>> = {}, extensions = new ExtensionSupport()) {
    this.#scopeOverrides = scopeOverrides
    this.extensions = extensions
  }

  add<S extends TSchema> (def: MethodDefinition<S>): this {
    if (this.#methods.has(def.name)) throw new TypeError(`method ${def.name} is already registered`)
    const validate = def.params === undefined ? undefined : this.#compile(def.params, def.prepare)
    const overrides = this.#scopeOverrides
    const scopes = Object.hasOwn(overrides, def.name)
      ? overrides[def.name]
      : def.twin !== undefined && Object.hasOwn(overrides, def.twin) ? overrides[def.twin] : (def.scopes ?? [])
    const discovery = def.discovery === true
    const handler = tracedHandler(def.name, this.extensions.guard(def.name, def.handler as MethodDefinition['handler'], discovery))
    // A method refused without the required extensions says so in its documented errors (OpenRPC).
    const refusal = discovery || this.extensions.required.length === 0
      ? undefined
      : isV10Method(def.name) ? RpcCode.extensionSupportRequired : RpcCode.invalidParams
    const errors = refusal === undefined || def.errors?.includes(refusal) === true ? def.errors : [...(def.errors ?? []), refusal]
    this.#methods.set(def.name, { ...(def as unknown as MethodDefinition), handler, scopes, validate, errors })
    return this
  }

  get (name: string): RegisteredMethod | undefined {
    return this.#methods.get(name)
  }

  has (name: string): boolean {
    return this.#methods.has(name)
  }

  list (): RegisteredMethod[] {
    return [...this.#methods.values()]
  }

  // Compiled at the method's first call, not at registration: a process that serves a few of the ~40 methods compiles
  // only theirs. Compiling them all took 12.9 s of the 414 s of CPU samples of a quick test run, where each of 121
  // processes builds apps (the 2-core test machine, 2026-11-28).
  #compile (schema: TSchema, prepare?: (params: unknown) => unknown): (params: unknown) => unknown {
    let check: ValidateFunction | undefined
    return (given: unknown) => {
      if (given === undefined) throw invalidParams('params: required')
      const params = prepare === undefined ? given : prepare(given)
      check ??= validatorOf(schema)
      if (!check(params)) throw invalidParams(formatParamsError((check.errors as ErrorObject[])[0]))
      return params
    }
  }
}

/**
 * The handler of method `name` inside a span of its own, `a2a <name>`: every binding calls handlers through the
 * registry, so each A2A operation gets one span whichever binding and version carried it (docs/architecture.md,
 * "Tracing: the design"). The principal is named by its id, never by a credential.
 */
function tracedHandler (name: string, handler: MethodDefinition['handler']): MethodDefinition['handler'] {
  const span = `a2a ${name}`
  const version = isV10Method(name) ? '1.0' : '0.3'
  return (params, ctx) => traced(span, () => ({
    'rpc.system': 'a2a',
    'rpc.method': name,
    'a2a.version': version,
    'a2a.binding': ctx.binding ?? 'jsonrpc',
    'enduser.id': ctx.principal.id,
    ...idsOf(params)
    // A span that records here is the HTTP server's (an instrumentation the app registered, `@fastify/otel` when the
    // standalone server traces): it read the caller's trace context already, and is the parent.
  }), () => handler(params, ctx), (span, result) => { span.setAttributes(idsOf(result)) }, activeSpanRecords() ? undefined : ctx.headers)
}

/** The task and context ids a method's params or result name (a task, a message, a push config), as span attributes. */
function idsOf (value: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (typeof value !== 'object' || value === null) return out
  const found = value as { id?: unknown, taskId?: unknown, contextId?: unknown, task?: { id?: unknown, contextId?: unknown }, message?: { taskId?: unknown, contextId?: unknown } }
  const taskId = found.taskId ?? found.id ?? found.task?.id ?? found.message?.taskId
  const contextId = found.contextId ?? found.task?.contextId ?? found.message?.contextId
  if (typeof taskId === 'string') out['a2a.task.id'] = taskId
  if (typeof contextId === 'string') out['a2a.context.id'] = contextId
  return out
}

/** One AJV error as `params.<path>: <reason>`, e.g. `params.message.parts: required` (CONTRACT.md §4). */
export function formatParamsError (error: ErrorObject): string {
  const path = 'params' + error.instancePath.replace(/\//g, '.')
  switch (error.keyword) {
    case 'required':
      return `${path}.${(error.params as { missingProperty: string }).missingProperty}: required`
    case 'discriminator':
      return `${path}.${(error.params as { tag: string }).tag}: must be one of the known kinds`
    case 'const':
      return `${path}: must be ${JSON.stringify((error.params as { allowedValue: unknown }).allowedValue)}`
    case 'anyOf':
      return `${path}: is not a valid value`
    default:
      return `${path}: ${error.message ?? 'is invalid'}`
  }
}
