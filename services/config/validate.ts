import { createRequire } from 'node:module'
import { isIP } from 'node:net'
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { ConfigSchema, type A2AConfig } from '../../schemas/config.js'
import { problemLine, schemaProblems, type ConfigSources } from './explain.js'
import { postgresService } from './postgres-service.js'
import { isSealingKey } from '../push/sealing.js'
import { configError, isPlainObject, setOwn } from './problems.js'
import { signingKeyOf, type SigningKeyError } from './signing-key.js'

export type { ConfigSources } from './explain.js'

export interface ValidateConfigOptions {
  /** Where values other than the file's own came from (`$PORT`, `--port`, `${VAR}`), for the problem lines to name. */
  sources?: ConfigSources
}

/**
 * Ajv's options for the configuration's validator. `coerceTypes` turns substituted strings such as "8000" into
 * integers; `verbose` puts the value, the schema and its parent on each error, for "must be one of ... (got ...)" and
 * "did you mean ...?".
 */
export const CONFIG_AJV_OPTIONS = { allErrors: true, useDefaults: true, coerceTypes: true, verbose: true } as const

let check: ValidateFunction<A2AConfig> | undefined

/**
 * The one validator: the build's, compiled ahead of time beside this file (scripts/build-assets.js says why), or,
 * running from the sources, the schema compiled now.
 */
function configCheck (): ValidateFunction<A2AConfig> {
  if (check !== undefined) return check
  try {
    check = createRequire(import.meta.url)('./config-check.cjs') as ValidateFunction<A2AConfig>
  } catch {
    // Not built (the sources run as they are), or not loadable: the schema itself, compiled as the build compiles it.
    check = new Ajv(CONFIG_AJV_OPTIONS).compile<A2AConfig>(ConfigSchema)
  }
  return check
}

/**
 * Validates a configuration against the schema (filling in every default), then checks what the schema cannot say.
 * The input is never modified. Throws `A2A_ERR_INVALID_CONFIG` with `problems`, every one of them
 * `<full.dotted.path>: <message>`, followed by the value given and where it came from when they are known.
 */
export function validateConfig (input: unknown, options: ValidateConfigOptions = {}): A2AConfig {
  const sources = options.sources ?? new Map<string, string>()
  const data = clone(input ?? {})
  const valid = configCheck()
  // Ajv sets `errors` whenever validation fails.
  if (!valid(data)) throw configError(schemaProblems(valid.errors as ErrorObject[], sources))
  const problems = semanticProblems(data, sources)
  if (problems.length > 0) throw configError(problems)
  return data
}

function clone (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clone)
  if (!isPlainObject(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) setOwn(out, key, clone(item))
  return out
}

/** What the schema cannot express: cross-field rules, URLs and CIDRs. */
function semanticProblems (config: A2AConfig, sources: ConfigSources): string[] {
  const problems: string[] = []
  const { security, services } = config
  const { api_key: apiKey, bearer, oauth2 } = security.auth

  if (security.enabled && security.auth_type === 'oauth2' && oauth2 === undefined) {
    problems.push('security.auth.oauth2: required when security.auth_type is oauth2')
  }
  if (security.enabled && apiKey.keys.length === 0 && bearer.tokens.length === 0 && oauth2 === undefined) {
    problems.push('security.auth: security is enabled but no api_key.keys, bearer.tokens or oauth2 is configured')
  }

  const hasCache = Object.values(services).some(s => s.type === 'cache')
  for (const section of ['push_notifications', 'tasks'] as const) {
    if (config[section].backend === 'kvcache' && !hasCache) {
      problems.push(`${section}.backend: kvcache needs a services entry with type: cache`)
    }
  }
  if (config.tasks.backend === 'postgres' && postgresService(config) === undefined) {
    problems.push('tasks.backend: postgres needs services.postgres (with its url)')
  }
  if (config.server.proxy_hops > 0 && config.server.trust_proxy !== false) {
    problems.push('server.proxy_hops: set either proxy_hops or trust_proxy, not both')
  }
  const grpc = config.protocol.grpc
  if (grpc.enabled && grpc.port !== 0 && grpc.port === config.server.port) {
    problems.push('protocol.grpc.port: must differ from server.port (the gRPC server has a port of its own)')
  }
  if (grpc.enabled && grpc.port === 0 && grpc.advertised_url === '') {
    problems.push('protocol.grpc.advertised_url: needed with protocol.grpc.port 0 (the card cannot name a port chosen at start)')
  }
  // Any instance may deliver a task's webhooks (CONTRACT.md §10), so every instance must see its push configs.
  if (config.tasks.backend === 'kvcache' && config.push_notifications.enabled && config.push_notifications.backend !== 'kvcache') {
    problems.push('push_notifications.backend: must be kvcache when tasks.backend is kvcache (instances share webhook delivery)')
  }
  // Push configs kept in this process would outlive the tasks PostgreSQL forgets (nothing tells them), and be lost
  // with the process while their tasks stay.
  const push = config.push_notifications
  if (config.tasks.backend === 'postgres' && push.enabled && push.backend !== 'postgres') {
    problems.push('push_notifications.backend: must be postgres when tasks.backend is postgres (push configs live with their tasks)')
  }
  if (push.backend === 'postgres' && postgresService(config) === undefined) {
    problems.push('push_notifications.backend: postgres needs services.postgres (with its url)')
  }
  // Keys are secrets: the lines never echo them.
  if (push.encryption_key !== '' && !isSealingKey(push.encryption_key)) {
    problems.push('push_notifications.encryption_key: must be 32 bytes in base64 (make one with: openssl rand -base64 32)')
  }
  push.previous_encryption_keys.forEach((key, i) => {
    if (!isSealingKey(key)) problems.push(`push_notifications.previous_encryption_keys.${i}: must be 32 bytes in base64`)
  })
  if (push.previous_encryption_keys.length > 0 && push.encryption_key === '') {
    problems.push('push_notifications.previous_encryption_keys: needs push_notifications.encryption_key (the key configs are sealed with now)')
  }

  // The key is read here, once (signers reuse it), and never echoed: the line says what is wrong with it.
  if (config.agent.card_signing !== undefined) {
    try {
      signingKeyOf(config.agent.card_signing)
    } catch (err) {
      problems.push(`agent.card_signing.key: ${(err as SigningKeyError).message}`)
    }
  }

  // Extensions (docs/protocol.md, "Extensions"): a URI once each, and none of ours (services/a2a/extensions.ts).
  const extensionUris = new Set<string>()
  config.agent.extensions.forEach(({ uri }, i) => {
    const problem = extensionUriProblem(uri, extensionUris)
    if (problem !== undefined) problems.push(`agent.extensions.${i}.uri: ${problem}`)
  })

  // These values may come from the environment (REDIS_URL, ${VAR}): their lines say so. A URL is never echoed.
  const checkUrl = (path: string[], value: string, protocols: string[]) => {
    const schemes = protocols.map(p => p.replace(':', '://')).join(' or ')
    const url = URL.canParse(value) ? new URL(value) : undefined
    if (url === undefined || url.hostname === '' || !protocols.includes(url.protocol)) {
      problems.push(problemLine(path, `must be a ${schemes} URL`, sources))
    }
  }
  const http = ['http:', 'https:']
  if (config.agent.url !== undefined) checkUrl(['agent', 'url'], config.agent.url, http)
  checkUrl(['agent', 'llm', 'base_url'], config.agent.llm.base_url, http)
  if (oauth2 !== undefined) {
    checkUrl(['security', 'auth', 'oauth2', 'introspection_endpoint'], oauth2.introspection_endpoint, http)
  }
  for (const [name, service] of Object.entries(services)) {
    checkUrl(['services', name, 'url'], service.url, service.type === 'postgres' ? ['postgres:', 'postgresql:'] : ['redis:', 'rediss:'])
  }

  config.push_notifications.config.allowed_networks.forEach((network, i) => {
    if (!isCidr(network)) {
      const path = ['push_notifications', 'config', 'allowed_networks', String(i)]
      problems.push(problemLine(path, `"${network}" is not a CIDR such as 10.0.0.0/8`, sources))
    }
  })
  return problems
}

function isCidr (value: string): boolean {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(value)
  if (match === null) return false
  const family = isIP(match[1])
  return family !== 0 && Number(match[2]) <= (family === 4 ? 32 : 128)
}

/** URIs under this prefix are this server's own extensions: neither the config nor the plugin option may declare one. */
export const RESERVED_EXTENSION_PREFIX = 'urn:fastify-a2a:'

/**
 * What is wrong with an extension URI declared after the ones in `seen`, or undefined when nothing is (it then joins
 * `seen`): `agent.extensions` and the plugin's `extensions` option are checked alike.
 */
export function extensionUriProblem (uri: string, seen: Set<string>): string | undefined {
  if (uri === '' || uri !== uri.trim() || uri.includes(',')) return 'must be a URI, without spaces or commas'
  if (uri.startsWith(RESERVED_EXTENSION_PREFIX)) return `${uri} is reserved by fastify-a2a`
  if (seen.has(uri)) return `${uri} is declared twice`
  seen.add(uri)
  return undefined
}
