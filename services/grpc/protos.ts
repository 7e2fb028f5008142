// The gRPC binding's protos (docs/protocol.md, "The gRPC binding"): both A2A services and google.rpc's Status and ErrorInfo,
// loaded once from schemas/proto/, which sits beside this module in the sources and in dist/ (the build copies it).
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader'
import protobuf from 'protobufjs'
import { ProtoCodec } from './codec.js'

/** Where the vendored protos are, for this module's own layout. */
export const PROTO_ROOT = fileURLToPath(new URL('../../schemas/proto/', import.meta.url))

/** The A2A v1.0 service, and v0.3's (the version comes from the service, CONTRACT.md §13). */
export const V1_SERVICE = 'lf.a2a.v1.A2AService'
export const V03_SERVICE = 'a2a.v1.A2AService'

/** Fields in camelCase as in ProtoJSON, enums by name, 64-bit integers as strings, the case of each oneof named. */
export const LOAD_OPTIONS: Options = { keepCase: false, longs: String, enums: String, defaults: false, oneofs: true, includeDirs: [PROTO_ROOT] }

const FILES = ['a2a/v1.0.1/a2a.proto', 'a2a/v0.3.0/a2a.proto', 'google/rpc/status.proto', 'google/rpc/error_details.proto']

let loaded: PackageDefinition | undefined
let codec: ProtoCodec | undefined

/** Both A2A protos and the error details, loaded at the first call: the services grpc-js serves. */
export function a2aProtos (): PackageDefinition {
  loaded ??= loadSync(FILES, LOAD_OPTIONS)
  return loaded
}

/**
 * The same files as protobufjs types, for the ProtoJSON codec (proto-loader's objects are not ProtoJSON, and it
 * keeps no `json_name`). `google/protobuf/*` are protobufjs's own copies, as for proto-loader.
 */
export function protoCodec (): ProtoCodec {
  if (codec === undefined) {
    const root = new protobuf.Root()
    root.resolvePath = (_origin, target) => join(PROTO_ROOT, target)
    root.loadSync(FILES, { keepCase: false })
    root.resolveAll()
    codec = new ProtoCodec(root)
  }
  return codec
}
