import {
  Metadata, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream, type ServiceDefinition,
  type UntypedServiceImplementation
} from '@grpc/grpc-js'
import type { ServerHttp2Stream } from 'node:http2'
import type protobuf from 'protobufjs'
import type { AgentCard } from '../a2a/agent-card.js'
import { closeSignal, type AnswerBudget, type Taken } from '../serving/answer-budget.js'
import type { RequestBudget } from '../serving/request-budget.js'
import type { AuditedCaller, Caller } from '../../plugins/auth.js'
import type { EventSource, StreamClaim, StreamHub } from '../../plugins/sse.js'
import type { Principal } from '../auth/principal.js'
import { majorMinor, versionRefusal } from '../a2a/version.js'
import { EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, activatedHeaders } from '../a2a/extensions.js'
import { JsonRpcError, RpcCode, invalidParams } from '../kernel/errors.js'
import { resolveMethod, toJsonRpcError } from '../json-rpc/dispatch.js'
import type { MethodContext, MethodRegistry } from '../json-rpc/registry.js'
import type { Logger } from '../kernel/logger.js'
import { Undecodable, type ProtoCodec } from './codec.js'
import { wireItems } from './wire-scan.js'
import { V03_SERVICE, V1_SERVICE, a2aProtos } from './protos.js'
import { statusOf } from './status.js'
import { ConnectionAdmission } from './admission.js'
import { streamOf, type SessionWatch } from './flow.js'
import { GrpcStreams } from './streams.js'
import { V03_RPCS } from './v03.js'
import { V1_RPCS, type RpcSpec } from './rpcs.js'

// The gRPC binding (docs/protocol.md, "The gRPC binding"): a thin frame around the registry's methods, as the
// REST routes are. Each RPC builds its method's params from the request (ProtoJSON, services/grpc/codec.ts), and the
// method checks scopes, validates, calls the operation and encodes, exactly as over the other bindings. The caller
// is authenticated from the call's metadata by the same authenticator (schemes, failure limits, request buckets,
// audit); streams take the same slots and follow the same TaskEventStream.

type Json = Record<string, unknown>

export interface GrpcBindingOptions {
  codec: ProtoCodec
  registry: MethodRegistry
  streams: StreamHub
  /** The authenticator of the HTTP bindings (plugins/auth.ts `a2aIdentify`). */
  identify: (caller: Caller) => Principal | Promise<Principal>
  /** The header that carries an API key (`security.auth.api_key.header`), lower-cased. */
  apiKeyHeader: string
  /** Writes the audit line of an authenticated call (with security on), or of a scope denial (CONTRACT.md §9). */
  audit: (caller: AuditedCaller, method: string, denied?: unknown) => void
  log: Logger
  /** The public card (v0.3 `GetAgentCard` without credentials). */
  publicCard: () => AgentCard
  /** Counts a call in the metrics, when they are on. */
  observe?: (method: string, code: number, seconds: number) => void
  /** The answer budget every binding shares (services/serving/answer-budget.ts): per connection, the call's HTTP/2 session. */
  budget: AnswerBudget
  /** Destroys connections whose untaken answers do not move for `server.write_timeout`. */
  watch: SessionWatch
  /**
   * The request budget the HTTP routes share (`server.max_request_bytes`, services/serving/request-budget.ts): a call's
   * message takes its size until its method has it; one that finds no room is refused RESOURCE_EXHAUSTED.
   */
  requests: RequestBudget
  /** `tasks.max_keys`: a request with far more keys and items than a message may carry is refused undecoded. */
  maxKeys: number
  /** `server.heartbeat_interval` in ms: how long a server stream goes without an event before it looks at its task. */
  idleCheckMs: number
}

const noop = (): void => {}

/**
 * Unary calls of one connection prepared at once (services/grpc/admission.ts): enough to keep a reading client's
 * pipeline full, few enough that one connection holds at most four answers' values beside the bytes it has in flight.
 */
const PREPARED_PER_CONNECTION = 4

/** What an empty message takes from the request budget. */
const NOTHING_TAKEN: Taken = { bytes: 0, release: noop }

/** A call that comes once the shutdown has begun: UNAVAILABLE (HTTP's 503), so that the client tries another instance. */
const SHUTTING_DOWN = new JsonRpcError(RpcCode.internalError, 'The server is shutting down', 'the server is shutting down', 503)

/** A call whose message finds no room in the request budget: RESOURCE_EXHAUSTED (HTTP 429's code), retry after 1 s. */
const REQUESTS_FULL = new JsonRpcError(RpcCode.internalError, 'Server busy',
  'too many request bytes in flight (server.max_request_bytes)', 429, { 'retry-after': '1' })

/** The version each service speaks (the service decides, CONTRACT.md §13). */
const SERVICE_VERSIONS = { [V1_SERVICE]: '1.0', [V03_SERVICE]: '0.3' } as const

export class GrpcBinding {
  readonly #opts: GrpcBindingOptions
  readonly #streams: GrpcStreams
  readonly #admission = new ConnectionAdmission(PREPARED_PER_CONNECTION)
  /** Set by `refuse` (the shutdown has begun): new calls are answered UNAVAILABLE, as HTTP answers 503. */
  #refusing = false
  /** The size of each request message grpc-js has read, until its handler takes it from the request budget. */
  readonly #sizes = new WeakMap<object, number>()

  constructor (opts: GrpcBindingOptions) {
    this.#opts = opts
    this.#streams = new GrpcStreams({ codec: opts.codec, budget: opts.budget, watch: opts.watch, idleCheckMs: opts.idleCheckMs })
  }

  /** Open streams, and ended ones whose client has not taken their last bytes yet. */
  get size (): number {
    return this.#streams.size
  }

  /** Both A2A services, each with its definition (ProtoJSON in and out) and its handlers. */
  services (): Array<[ServiceDefinition, UntypedServiceImplementation]> {
    return [this.#service(V1_SERVICE, V1_RPCS), this.#service(V03_SERVICE, V03_RPCS)]
  }

  /**
   * From now on every new call is refused with UNAVAILABLE (the shutdown has begun: HTTP answers 503 from the same
   * moment); calls already accepted go on.
   */
  refuse (): void {
    this.#refusing = true
  }

  /** Sends every open stream its task's current snapshot and ends it (shutdown); streams opened later end at once. */
  endAll (): void {
    this.#streams.endAll()
  }

  #service (name: keyof typeof SERVICE_VERSIONS, rpcs: Readonly<Record<string, RpcSpec>>): [ServiceDefinition, UntypedServiceImplementation] {
    const { codec, maxKeys } = this.#opts
    // Within twice the real count (services/grpc/wire-scan.ts), plus what the HTTP bindings allow an envelope (routes/body.ts).
    const maxItems = 2 * maxKeys + 1024
    const tooMany = new Undecodable(`the request carries more object keys and array items than a message may (tasks.max_keys: ${maxKeys})`)
    const loaded = a2aProtos()[name] as unknown as ServiceDefinition
    const definition: Record<string, unknown> = {}
    const handlers: UntypedServiceImplementation = {}
    const version = SERVICE_VERSIONS[name]
    for (const [rpc, method] of Object.entries(loaded)) {
      const { request, response } = codec.method(name, rpc)
      // The server reads requests and writes answers; the other two are proto-loader's, for clients.
      definition[rpc] = {
        ...method,
        requestDeserialize: (bytes: Buffer) => {
          // Each item counted is at least a byte on the wire: a message of no more bytes than the limit needs no count.
          if (bytes.length > maxItems && wireItems(request, bytes, maxItems) > maxItems) return tooMany
          const message = codec.read(request, bytes)
          this.#sizes.set(message, bytes.length)
          return message
        },
        // Answers are serialized before they are written, to take their size from the answer budget.
        responseSerialize: (bytes: Buffer) => bytes
      }
      const spec = rpcs[rpc]
      const label = `${name}/${rpc}`
      handlers[rpc] = method.responseStream
        ? (call: ServerWritableStream<Json, unknown>) => { this.#stream(call, spec, version, label, response) }
        : (call: ServerUnaryCall<Json, unknown>, callback: sendUnaryData<unknown>) => { this.#unary(call, callback, spec, version, label, response) }
    }
    return [definition as ServiceDefinition, handlers]
  }

  #unary (call: ServerUnaryCall<Json, unknown>, callback: sendUnaryData<unknown>, spec: RpcSpec, version: string, label: string, type: protobuf.Type): void {
    const started = performance.now()
    const stream = streamOf(call)
    if (this.#refusing) {
      this.#observe(spec, SHUTTING_DOWN.code, started)
      callback(statusOf(SHUTTING_DOWN, this.#opts.codec))
      return
    }
    const taken = this.#admit(call, stream)
    if (taken === null) {
      this.#observe(spec, REQUESTS_FULL.code, started)
      callback(statusOf(REQUESTS_FULL, this.#opts.codec))
      return
    }
    const run = (leave: () => void): void => {
      this.#run(call, spec, version, label).finally(taken.release).then(result => {
        this.#observe(spec, 0, started)
        this.#answer(stream, callback, type, spec.encode === undefined ? result : spec.encode(result), leave)
      }, err => {
        leave()
        const error = toJsonRpcError(err, this.#opts.log, spec.method)
        this.#observe(spec, error.code, started)
        callback(statusOf(error, this.#opts.codec))
      })
    }
    /* c8 ignore next -- a stream has no session only once its client is gone, between grpc-js reading it and here */
    const connection = stream.session ?? stream
    // Most calls find room at once, and need no signal (one per call cost CPU on every GetTask and SendMessage).
    const now = this.#admission.tryEnter(connection)
    if (now !== null) {
      run(now)
      return
    }
    const gone = closeSignal(stream, stream.destroyed)
    // A call past the connection's bound waits here, before it runs, holding only its request (admission.ts).
    this.#admission.enter(connection, gone.signal).then(leave => {
      gone.stop()
      // The client left while the call waited: there is nobody to answer.
      if (leave === null) {
        taken.release()
        return
      }
      run(leave)
    }, noop)
  }

  /**
   * Sends a unary answer within the answer budget: its bytes are its connection's until the client has taken them
   * (the HTTP/2 stream closes, the trailers sent after them). An answer that finds no room waits, holding its value,
   * not its bytes, until room comes or the client goes.
   */
  #answer (stream: ServerHttp2Stream, callback: sendUnaryData<unknown>, type: protobuf.Type, value: unknown, leave: () => void): void {
    const { budget, codec } = this.#opts
    const connection = stream.session ?? stream
    const bytes = codec.write(type, value)
    const taken = budget.tryTake(connection, bytes.length)
    if (taken !== null) {
      leave()
      this.#send(stream, callback, taken, bytes)
      return
    }
    const gone = closeSignal(stream, stream.destroyed)
    budget.take(connection, bytes.length, gone.signal).then(taken => {
      gone.stop()
      leave()
      this.#send(stream, callback, taken, codec.write(type, value))
    }, leave)
  }

  #send (stream: ServerHttp2Stream, callback: sendUnaryData<unknown>, taken: Taken, bytes: Buffer): void {
    // The client left while its answer was prepared: nothing is sent.
    if (stream.destroyed) {
      taken.release()
      return
    }
    stream.once('close', taken.release)
    callback(null, bytes)
    this.#opts.watch.watch(stream)
  }

  /** Authenticates the caller, builds the method's params, and runs it with the caller's scopes checked. */
  async #run (call: ServerUnaryCall<Json, unknown> | ServerWritableStream<Json, unknown>, spec: RpcSpec, version: string, label: string, claim?: StreamClaim): Promise<unknown> {
    const request = call.request as Json | Undecodable
    if (request instanceof Undecodable) throw invalidParams(request.reason)
    const refusal = versionError(call.metadata, version)
    if (refusal !== undefined) throw refusal
    const headers = headersOf(call.metadata)
    const caller: { headers: Record<string, string>, ip: string, a2aPrincipal: Principal | null } = { headers, ip: peerAddress(call.getPeer()), a2aPrincipal: null }
    if (spec.public === true && headers.authorization === undefined && headers[this.#opts.apiKeyHeader] === undefined) {
      return this.#opts.publicCard()
    }
    const principal = await this.#opts.identify(caller)
    caller.a2aPrincipal = principal
    const params = spec.params === undefined ? request : spec.params(request)
    let resolved
    try {
      resolved = resolveMethod(this.#opts.registry, { id: null, method: spec.method, params }, principal)
    } catch (err) {
      if (err instanceof JsonRpcError && err.code === RpcCode.insufficientScope) this.#opts.audit(caller, label, err.data)
      throw err
    }
    if (claim !== undefined) await claim.own(principal.id)
    this.#opts.audit(caller, label)
    // The extensions the call activates (docs/protocol.md, "Extensions"), said back in the response's metadata.
    const extensions = this.#opts.registry.extensions.activate(extensionMetadata(call.metadata), spec.method)
    if (extensions.length > 0) {
      const metadata = new Metadata()
      for (const [name, value] of Object.entries(activatedHeaders(extensions, spec.method))) metadata.set(name, value)
      call.sendMetadata(metadata)
    }
    return await resolved.method.handler(resolved.params, contextOf(principal, this.#opts.log, headers, extensions, spec.wire))
  }

  #stream (call: ServerWritableStream<Json, unknown>, spec: RpcSpec, version: string, label: string, type: protobuf.Type): void {
    const started = performance.now()
    const stream = streamOf(call)
    if (this.#refusing) {
      this.#fail(call, spec, SHUTTING_DOWN, started)
      return
    }
    const taken = this.#admit(call, stream)
    if (taken === null) {
      this.#fail(call, spec, REQUESTS_FULL, started)
      return
    }
    let claim: StreamClaim
    try {
      claim = this.#opts.streams.claim()
    } catch (err) {
      taken.release()
      this.#fail(call, spec, toJsonRpcError(err, this.#opts.log, spec.method), started)
      return
    }
    this.#run(call, spec, version, label, claim).finally(taken.release).then(source => {
      this.#observe(spec, 0, started)
      this.#streams.attach(call, stream, type, source as EventSource, claim.release)
    }, err => {
      claim.release()
      this.#fail(call, spec, toJsonRpcError(err, this.#opts.log, spec.method), started)
    })
  }

  /**
   * Takes the size of the call's message from the request budget, until its method has it (or the call ends): grpc-js
   * has read it already, so a call that finds no room is refused at once (null), rather than held.
   */
  #admit (call: ServerUnaryCall<Json, unknown> | ServerWritableStream<Json, unknown>, stream: ServerHttp2Stream): Taken | null {
    // An empty message, or one refused undecoded (too many items), holds nothing worth counting.
    const bytes = this.#sizes.get(call.request as object) ?? 0
    if (bytes === 0) return NOTHING_TAKEN
    const taken = this.#opts.requests.tryTake(stream.session as object, bytes)
    // A stream closed already (its client reset the call as grpc-js read it) has emitted its `close`: a listener
    // added now would never run, and the bytes would be held for good. The call then runs unanswered.
    /* c8 ignore next -- that race */
    if (taken !== null && stream.destroyed) taken.release()
    else if (taken !== null) stream.once('close', taken.release)
    return taken
  }

  #fail (call: ServerWritableStream<Json, unknown>, spec: RpcSpec, error: JsonRpcError, started: number): void {
    this.#observe(spec, error.code, started)
    call.emit('error', statusOf(error, this.#opts.codec))
  }

  #observe (spec: RpcSpec, code: number, started: number): void {
    this.#opts.observe?.(spec.method, code, (performance.now() - started) / 1000)
  }
}

/** The call's metadata as the headers authentication reads: text values only, the first of each key. */
function headersOf (metadata: Metadata): Record<string, string> {
  const headers: Record<string, string> = {}
  const map = metadata.getMap()
  for (const key of Object.keys(map)) {
    const value = map[key]
    if (typeof value === 'string') headers[key] = value
  }
  return headers
}

/** The client's address from grpc-js's peer (`127.0.0.1:5000`, `[::1]:5000`, `ipv4:...`). */
export function peerAddress (peer: string): string {
  const bare = peer.replace(/^ipv[46]:/, '')
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(bare)
  if (bracketed !== null) return bracketed[1]
  const colon = bare.lastIndexOf(':')
  return colon > 0 && bare.indexOf(':') === colon ? bare.slice(0, colon) : bare
}

/**
 * CONTRACT.md §11.1 for gRPC: an `a2a-version` this server does not speak is refused (-32009), and so is one the
 * service does not (the v1.0 service for `0.3`, the v0.3 service for `1.0`): the service decides the version.
 */
function versionError (metadata: Metadata, version: string): JsonRpcError | undefined {
  const values = metadata.get('a2a-version')
  if (values.length === 0) return undefined
  const header = String(values[0])
  const refusal = versionRefusal(header, undefined)
  if (refusal !== undefined) return refusal
  const named = majorMinor(header)
  if (named === undefined || named === version) return undefined
  const other = version === '1.0' ? V03_SERVICE : V1_SERVICE
  return new JsonRpcError(RpcCode.versionNotSupported, 'Version not supported',
    `this service serves A2A ${version}; A2A ${named} is served by ${other}`)
}

/**
 * The method's context for a call. (A StreamResponse has no field for an event id, so gRPC streams are not resumed
 * after an event: a client that lost one follows its task again with SubscribeToTask, the snapshot first.)
 */
function contextOf (principal: Principal, log: Logger, headers: Record<string, string>, extensions: readonly string[], wire?: 'rest03'): MethodContext {
  return wire === undefined
    ? { principal, log, id: null, binding: 'grpc', headers, extensions }
    : { principal, log, id: null, binding: 'grpc', headers, extensions, wire }
}

/**
 * The call's activation metadata, `a2a-extensions` (and v0.3's `x-a2a-extensions`), each as one comma-separated
 * value: a client may send a key more than once.
 */
function extensionMetadata (metadata: Metadata): Record<string, string> {
  const out: Record<string, string> = {}
  for (const key of [EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER]) {
    const values = metadata.get(key)
    if (values.length > 0) out[key] = values.map(String).join(',')
  }
  return out
}
