// `fastify-a2a init` writes every key of the schema: set to its default, or commented out where it has none.
import t from 'tap'
import { parse } from 'yaml'
import { ConfigSchema } from '../../../schemas/config.js'
import { initTemplate } from '../../../services/config/template.js'
import { configKeys } from '../../config-keys.js'

const TEMPLATE = initTemplate()
const written = parse(TEMPLATE)
// Keys shown in comments only, such as `# url: https://agent.example.com/` and the `# oauth2:` example.
const commented = new Set([...TEMPLATE.matchAll(/^ *# *(?:- )?(\w+):/gm)].map(match => match[1]))

function isWritten (path: string[]): boolean {
  let node: unknown = written
  for (const segment of path) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, segment)) return false
    node = (node as Record<string, unknown>)[segment]
  }
  return true
}

// A key is in the template when it is written, or shown in a comment under a parent that is (sections are written).
function inTemplate (path: string[]): boolean {
  if (isWritten(path)) return true
  const name = path[path.length - 1]
  return path.length > 1 && commented.has(name) && inTemplate(path.slice(0, -1))
}

t.test('the init template has every key of the schema', async t => {
  const keys = configKeys(ConfigSchema).map(key => key.path.replace(/\.<name>$/, ''))
  t.ok(keys.length > 60)
  t.same(keys.filter(key => !inTemplate(key.split('.'))), [], 'add the missing keys to services/config/template.ts')
})

t.test('a key only in a comment counts when its parent is in the template', async t => {
  t.ok(inTemplate(['agent', 'url']), 'agent.url is shown commented out')
  t.ok(inTemplate(['security', 'auth', 'oauth2', 'client_id']), 'so is the oauth2 section')
  t.notOk(inTemplate(['agent', 'no_such_key']))
  t.notOk(inTemplate(['no_such_section', 'url']), 'a commented name under an absent parent does not count')
  t.notOk(inTemplate(['url']), 'nor at the top level when the name is not a section')
})
