import type { ExtendOptions, Got } from 'got'

/**
 * A got instance, made from `options` when first asked for. got is loaded only then: a server that never posts a
 * webhook and never introspects a token does not load it (got and the modules it pulls in are some 3 MB of heap and
 * 7 to 15 MB of RSS at start). `configure` runs once on the new instance. The function returns the same promise
 * every time, so a caller that chains on it allocates nothing more once got is loaded.
 */
export function lazyGot (options: ExtendOptions, configure?: (client: Got) => void): () => Promise<Got> {
  let client: Promise<Got> | undefined
  return () => (client ??= import('got').then(({ default: got }) => {
    const made = got.extend(options)
    configure?.(made)
    return made
  }))
}
