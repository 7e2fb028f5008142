import { join } from 'node:path'
import { Client, Metadata, credentials, loadPackageDefinition, type ServiceError } from '@grpc/grpc-js'
import { protoPath as healthProto } from 'grpc-health-check'
import { loadSync } from '@grpc/proto-loader'
import protobuf from 'protobufjs'
import type { Teardown } from '../helper.js'
import { LOAD_OPTIONS, PROTO_ROOT, V03_SERVICE, V1_SERVICE, a2aProtos, protoCodec } from '../../services/grpc/protos.js'

// A plain grpc-js client of the binding (its own stubs, from the vendored protos by proto-loader, as any grpc-js user
// makes them): calls with metadata, streams read to their end, raw bytes for bad input, and the status details read
// by protobufjs from google/rpc's protos.

type Stub = Client & Record<string, (...args: any[]) => any>

export interface GrpcClients {
  v1: Stub
  v03: Stub
  health: Stub
  /** The raw channel, for requests of bytes of one's own. */
  raw: Client
}

/** Stubs of both A2A services and of grpc.health.v1 at `target`, closed at teardown. */
export function grpcClients (t: Teardown, target: string): GrpcClients {
  const loaded = loadPackageDefinition(a2aProtos()) as any
  const at = (path: string) => path.split('.').reduce((o, k) => o[k], loaded)
  const creds = credentials.createInsecure()
  const v1 = new (at(V1_SERVICE))(target, creds) as Stub
  const v03 = new (at(V03_SERVICE))(target, creds) as Stub
  const healthDef = loadSync(healthProto, LOAD_OPTIONS)
  const Health = (loadPackageDefinition(healthDef) as any).grpc.health.v1.Health
  const health = new Health(target, creds) as Stub
  const raw = new Client(target, creds)
  t.teardown(() => { for (const c of [v1, v03, health, raw]) c.close() })
  return { v1, v03, health, raw }
}

export type Outcome<T = any> = { value: T, error?: undefined } | { value?: undefined, error: ServiceError }

/** A unary call's answer or error (never a rejection). */
export function unary<T = any> (stub: Stub, method: string, request: unknown, metadata: Record<string, string> = {}): Promise<Outcome<T>> {
  return new Promise(resolve => {
    stub[method](request, metadataOf(metadata), (error: ServiceError | null, value: T) => {
      resolve(error === null ? { value } : { error })
    })
  })
}

/** A server stream read to its end: every message, and the error it ended with, if any. */
export function streamAll (stub: Stub, method: string, request: unknown, metadata: Record<string, string> = {}): Promise<{ messages: any[], error?: ServiceError }> {
  return new Promise(resolve => {
    const messages: any[] = []
    const call = stub[method](request, metadataOf(metadata))
    call.on('data', (message: unknown) => messages.push(message))
    call.on('error', (error: ServiceError) => resolve({ messages, error }))
    call.on('end', () => resolve({ messages }))
  })
}

/** A unary call whose request is the given bytes, as they are (malformed protobuf, say). */
export function rawUnary (raw: Client, path: string, bytes: Buffer, metadata: Record<string, string> = {}): Promise<Outcome<Buffer>> {
  return new Promise(resolve => {
    raw.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, bytes, metadataOf(metadata), (error, value) => {
      resolve(error === null ? { value: value as Buffer } : { error })
    })
  })
}

export function metadataOf (values: Record<string, string>): Metadata {
  const metadata = new Metadata()
  for (const [key, value] of Object.entries(values)) metadata.set(key, value)
  return metadata
}

const rpcTypes = (() => {
  const root = new protobuf.Root()
  root.resolvePath = (_origin, target) => join(PROTO_ROOT, target)
  root.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto'])
  return {
    status: root.lookupType('google.rpc.Status'),
    details: {
      'type.googleapis.com/google.rpc.ErrorInfo': root.lookupType('google.rpc.ErrorInfo'),
      'type.googleapis.com/google.rpc.BadRequest': root.lookupType('google.rpc.BadRequest')
    } as Record<string, protobuf.Type>
  }
})()

/** The `google.rpc.Status` of `grpc-status-details-bin`, its details unpacked (`@type` plus their fields). */
export function statusDetails (error: ServiceError): { code: number, message: string, details: any[] } {
  const [bin] = error.metadata.get('grpc-status-details-bin')
  if (bin === undefined) throw new Error(`no grpc-status-details-bin on ${error.code} ${error.details}`)
  const status = rpcTypes.status.toObject(rpcTypes.status.decode(bin as Buffer), { defaults: true }) as any
  return {
    code: status.code,
    message: status.message,
    details: status.details.map((any: { type_url: string, value: Uint8Array }) => {
      const type = rpcTypes.details[any.type_url]
      return { '@type': any.type_url, ...type.toObject(type.decode(any.value), { defaults: true }) }
    })
  }
}

/** A gRPC request frame of a v1.0 RPC's request, as a raw HTTP/2 client sends it: the 5-byte prefix, then the message. */
export function grpcFrame (rpc: string, request: unknown): Buffer {
  const codec = protoCodec()
  const bytes = codec.write(codec.method(V1_SERVICE, rpc).request, request)
  const prefix = Buffer.alloc(5)
  prefix.writeUInt32BE(bytes.length, 1)
  return Buffer.concat([prefix, bytes])
}
