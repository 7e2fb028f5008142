// The configuration's validator compiled ahead of time (scripts/config-check.js, written into dist/ by scripts/build-assets.js)
// behaves as the schema compiled at run time: the same defaults, coercions and errors.
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import t from 'tap'
import { ConfigSchema } from '../../../schemas/config.js'
import { schemaProblems } from '../../../services/config/explain.js'
import { CONFIG_AJV_OPTIONS } from '../../../services/config/validate.js'
import { configCheckSource } from '../../../scripts/config-check.js'

const INPUTS: unknown[] = [
  {},
  { server: { port: '8001' }, tasks: { backend: 'redis' }, services: { cache: { type: 'cache', url: 'redis://127.0.0.1:6379' } } },
  { protocol: { version: '9.9' }, server: { prot: 1 } },
  { agent: { skills: [{ id: 's', name: 'S', description: 'd', tags: 'x' }] }, security: { enabled: 'yes' } },
  { push_notifications: { retry: { attempts: -1 } }, tasks: { ttl: 'soon' } }
]

t.test('the compiled module gives what the schema compiled now gives, for valid and invalid configurations', async t => {
  const dir = t.testdir()
  const file = join(dir, 'config-check.cjs')
  writeFileSync(file, await configCheckSource(new URL('../../../', import.meta.url)))
  const ahead = createRequire(import.meta.url)(file) as ValidateFunction
  const now = new Ajv(CONFIG_AJV_OPTIONS).compile(ConfigSchema)
  for (const input of INPUTS) {
    const a = structuredClone(input)
    const b = structuredClone(input)
    t.equal(ahead(a), now(b), JSON.stringify(input))
    t.same(a, b, 'the same defaults and coercions')
    // The same errors, but for TypeBox's symbol-keyed marks on the schemas they quote, which the module's JSON copy of
    // the schema does not carry (and the explanations do not read).
    t.same(JSON.parse(JSON.stringify(ahead.errors)), JSON.parse(JSON.stringify(now.errors)), 'the same errors')
    if (now.errors) t.same(schemaProblems(ahead.errors ?? [], new Map()), schemaProblems(now.errors, new Map()), 'explained alike')
  }
  t.ok((now.errors?.length ?? 0) > 0, 'the invalid ones do fail')
})
