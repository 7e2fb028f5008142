// The build's second step, after the compiler: what dist/ needs beside the compiled code (`npm run build`).
// - The gRPC binding's protos (schemas/proto/) go to dist/schemas/proto/, where services/grpc/protos.js loads them
//   from (and the packed tarball carries them).
// - The configuration's validator is compiled ahead of time into dist/services/config/config-check.cjs
//   (configCheckSource), which services/config/validate.js loads instead of compiling the schema at the first
//   validation: that compile took 100 to 250 ms of CPU in every process that reads a configuration, the server's
//   start and each test file among them, against 10 ms to load the compiled module (the 2-core test machine,
//   2026-11-28).
import { cpSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The source of a CommonJS module whose export is the configuration's validator, compiled by Ajv with the options
 * validate.js would compile it with (standalone code: it needs only Ajv's small runtime helpers).
 * `dir` is the folder holding the compiled project (dist/, or test:quick's tree).
 */
export async function configCheckSource (dir) {
  const { Ajv } = await import('ajv')
  const { default: standaloneCode } = await import('ajv/dist/standalone/index.js')
  const { ConfigSchema } = await import(new URL('schemas/config.js', dir).href)
  const { CONFIG_AJV_OPTIONS } = await import(new URL('services/config/validate.js', dir).href)
  const ajv = new Ajv({ ...CONFIG_AJV_OPTIONS, code: { source: true } })
  return standaloneCode(ajv, ajv.compile(ConfigSchema))
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dist = new URL('../dist/', import.meta.url)
  const to = fileURLToPath(new URL('schemas/proto/', dist))
  rmSync(to, { recursive: true, force: true })
  cpSync(fileURLToPath(new URL('../schemas/proto/', import.meta.url)), to, { recursive: true })
  writeFileSync(new URL('services/config/config-check.cjs', dist), await configCheckSource(dist))
}
