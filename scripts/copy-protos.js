// The build's second step: the gRPC binding's protos (schemas/proto/) go beside the built code, in
// dist/schemas/proto/, where services/grpc/protos.js loads them from (and the packed tarball carries them).
import { cpSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const from = fileURLToPath(new URL('../schemas/proto/', import.meta.url))
const to = fileURLToPath(new URL('../dist/schemas/proto/', import.meta.url))
rmSync(to, { recursive: true, force: true })
cpSync(from, to, { recursive: true })
