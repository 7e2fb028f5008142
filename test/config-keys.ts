// The keys of the configuration schema, for the tests that check the docs and the init template list them all.
import { Kind, type TSchema } from '@sinclair/typebox'

/** One documented key: a leaf of the schema, or a list or map of objects whose item keys are named in its row. */
export interface ConfigKey {
  path: string
  schema: TSchema
  /** For a list or map of objects: the keys of one item. */
  itemKeys?: string[]
}

/** Every key of the schema, depth first. A map's variable key is written `<name>` (`services.<name>`). */
export function configKeys (schema: TSchema, prefix = ''): ConfigKey[] {
  const keys: ConfigKey[] = []
  for (const [name, child] of Object.entries<TSchema>(schema.properties)) {
    const path = prefix === '' ? name : `${prefix}.${name}`
    const mapped = child[Kind] === 'Record' ? Object.values<TSchema>(child.patternProperties)[0] : undefined
    const open = typeof child.additionalProperties === 'object' && child.additionalProperties.type === 'object' ? child.additionalProperties : undefined
    // A map with named entries of their own (`services`: any name a Redis entry, `postgres` the PostgreSQL one).
    if (open !== undefined) {
      keys.push({ path: `${path}.<name>`, schema: child, itemKeys: Object.keys(open.properties) })
      for (const [entry, item] of Object.entries<TSchema>(child.properties)) {
        keys.push({ path: `${path}.${entry}`, schema: item, itemKeys: Object.keys(item.properties) })
      }
    } else if (child[Kind] === 'Object') keys.push(...configKeys(child, path))
    else if (mapped?.[Kind] === 'Object') keys.push({ path: `${path}.<name>`, schema: child, itemKeys: Object.keys(mapped.properties) })
    else if (child[Kind] === 'Array' && child.items[Kind] === 'Object') keys.push({ path, schema: child, itemKeys: Object.keys(child.items.properties) })
    else keys.push({ path, schema: child })
  }
  return keys
}
