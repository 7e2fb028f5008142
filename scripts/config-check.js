// The configuration's validator compiled ahead of time (scripts/build-assets.js says why): written by the build into
// dist/services/config/config-check.cjs, and by test:quick into its tree.

/**
 * The source of a CommonJS module whose export is the configuration's validator, compiled by Ajv with the options
 * validate.js would compile it with (standalone code: it needs only Ajv's small runtime helpers). Generated code,
 * kept out of the coverage report (the tests that use it check it against the schema compiled at run time).
 * `dir` is the folder holding the compiled project (dist/, or test:quick's tree).
 */
export async function configCheckSource (dir) {
  const { Ajv } = await import('ajv')
  const { default: standaloneCode } = await import('ajv/dist/standalone/index.js')
  const { ConfigSchema } = await import(new URL('schemas/config.js', dir).href)
  const { CONFIG_AJV_OPTIONS } = await import(new URL('services/config/validate.js', dir).href)
  const ajv = new Ajv({ ...CONFIG_AJV_OPTIONS, code: { source: true } })
  return `/* c8 ignore start */\n${standaloneCode(ajv, ajv.compile(ConfigSchema))}\n/* c8 ignore stop */\n`
}
