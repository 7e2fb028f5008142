// The build's second step, after the compiler: what dist/ needs beside the compiled code (`npm run build`).
// - The gRPC binding's protos (schemas/proto/) go to dist/schemas/proto/, where services/grpc/protos.js loads them
//   from (and the packed tarball carries them).
// - The configuration's validator is compiled ahead of time into dist/services/config/config-check.cjs
//   (scripts/config-check.js), which services/config/validate.js loads instead of compiling the schema at the first
//   validation: that compile took 100 to 250 ms of CPU in every process that reads a configuration, the server's
//   start and each test file among them, against 10 ms to load the compiled module (the 2-core test machine,
//   2026-11-28).
import { cpSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { configCheckSource } from './config-check.js'

const dist = new URL('../dist/', import.meta.url)
const to = fileURLToPath(new URL('schemas/proto/', dist))
rmSync(to, { recursive: true, force: true })
cpSync(fileURLToPath(new URL('../schemas/proto/', import.meta.url)), to, { recursive: true })
writeFileSync(new URL('services/config/config-check.cjs', dist), await configCheckSource(dist))
