import { DEFAULT_AGENT_DESCRIPTION, type A2AConfig, type Skill } from '../../schemas/config.js'
import { cardExtensions, type AgentExtension } from './extensions.js'

/** A binding's name, as v1.0 `protocolBinding` and v0.3 `transport` write it. */
export type ProtocolBinding = 'JSONRPC' | 'HTTP+JSON' | 'GRPC'

/** A v1.0 `AgentInterface` (a2a.proto, ProtoJSON). */
export interface AgentInterface {
  url: string
  protocolBinding: ProtocolBinding
  tenant?: string
  protocolVersion: '1.0' | '0.3'
}

/** A v0.3 security requirement: scheme name → scopes. */
export type SecurityV03 = Record<string, string[]>

/** A v1.0 `SecurityRequirement` (a2a.proto, ProtoJSON): scheme name → `StringList` of scopes. */
export interface SecurityRequirement {
  schemes: Record<string, { list: string[] }>
}

/** A `securitySchemes` entry: the v0.3 OpenAPI form, the v1.0 oneof wrapper, or both in one object (§11.5). */
export type SecurityScheme = Record<string, unknown>

/**
 * The hybrid agent card of CONTRACT.md §11.5: the A2A v0.3.0 card (the fields this server fills) plus the v1.0
 * fields, one body that clients of either version read.
 */
export interface AgentCard {
  protocolVersion: '0.3.0'
  name: string
  description: string
  supportedInterfaces: AgentInterface[]
  url: string
  version: string
  preferredTransport: 'JSONRPC'
  additionalInterfaces: Array<{ url: string, transport: ProtocolBinding }>
  capabilities: { streaming: boolean, pushNotifications: boolean, extendedAgentCard: boolean, stateTransitionHistory: boolean, extensions?: AgentExtension[] }
  defaultInputModes: string[]
  defaultOutputModes: string[]
  skills: AgentSkill[]
  supportsAuthenticatedExtendedCard: boolean
  securitySchemes?: Record<string, SecurityScheme>
  security?: SecurityV03[]
  securityRequirements?: SecurityRequirement[]
}

export interface AgentSkill {
  id: string
  name: string
  description: string
  tags: string[]
  examples?: string[]
  inputModes?: string[]
  outputModes?: string[]
  security?: SecurityV03[]
  securityRequirements?: SecurityRequirement[]
}

/** The v1.0 `AgentSkill`: no v0.3 `security`. */
export type V1AgentSkill = Omit<AgentSkill, 'security'>

/** The pure v1.0 `AgentCard` (a2a.proto, ProtoJSON), as `GetExtendedAgentCard` answers it (CONTRACT.md §11.3). */
export interface V1AgentCard {
  name: string
  description: string
  supportedInterfaces: AgentInterface[]
  version: string
  capabilities: { streaming: boolean, pushNotifications: boolean, extendedAgentCard: boolean, extensions?: AgentExtension[] }
  securitySchemes?: Record<string, SecurityScheme>
  securityRequirements?: SecurityRequirement[]
  defaultInputModes: string[]
  defaultOutputModes: string[]
  skills: V1AgentSkill[]
}

/** The bindings served besides JSON-RPC (always on), and the interfaces' tenant. */
export interface CardBindings {
  /** HTTP+JSON (CONTRACT.md §12), served at the same base URL as JSON-RPC: the protocol versions it serves. */
  rest?: ReadonlyArray<'1.0' | '0.3'>
  /** gRPC (CONTRACT.md §13): its advertised URL when the binding is on. Listed in `supportedInterfaces` only. */
  grpcUrl?: string
  /** Written on every interface, only when tenants are configured. */
  tenant?: string
}

export interface CardOptions extends CardBindings {
  /** The plugin prefix, `/` when standalone. */
  prefix: string
}

/** The built-in agent's public skill: listed when `agent.skills` is empty, so `skills` is never empty. */
export const BUILTIN_SKILL: AgentSkill = {
  id: 'echo',
  name: 'Echo',
  description: 'Answers a text message with the same text, and runs the commands `status`, `capabilities` and ' +
    '`list_directory <path>`.',
  tags: ['echo', 'tools'],
  examples: ['hello', 'status', 'list_directory .']
}

/**
 * The configuration with a neutral skill named after the agent, for an agent of the host's own (an executor passed
 * to the plugin, or a module in `agent.executor`) whose `agent.skills` is empty: the card must not advertise the
 * built-in agent's echo and commands for it. Any other configuration is returned as it is.
 */
export function withOwnAgentSkill (config: A2AConfig, ownExecutor: boolean): A2AConfig {
  const { agent } = config
  const custom = ownExecutor || (agent.executor !== 'builtin' && agent.executor !== 'openai')
  if (!custom || agent.skills.length > 0) return config
  const skill = { id: 'agent', name: agent.name, description: agent.description === DEFAULT_AGENT_DESCRIPTION ? `What ${agent.name} does.` : agent.description, tags: ['agent'] }
  return { ...config, agent: { ...agent, skills: [skill] } }
}

/** The skill listed for `agent.executor: openai` when `agent.skills` is empty. */
export const LLM_SKILL: AgentSkill = {
  id: 'chat',
  name: 'Chat',
  description: 'Answers in natural language with a language model, and may run the status, capabilities and ' +
    'list_directory tools the caller is allowed to use.',
  tags: ['chat', 'llm', 'tools'],
  examples: ['What is in the workspace?', 'Which methods may I call?']
}

/** CONTRACT.md §11.5: each binding once per version, every 1.0 entry first (clients take the first they support). */
const INTERFACE_VERSIONS = ['1.0', '0.3'] as const

/** The keys of a2a.proto's `SecurityScheme` oneof. */
const V1_SCHEME_KEYS = ['apiKeySecurityScheme', 'httpAuthSecurityScheme', 'oauth2SecurityScheme', 'openIdConnectSecurityScheme',
  'mtlsSecurityScheme']

/** The keys of a2a.proto's `OAuthFlows` oneof, in its order. */
const V1_FLOW_KEYS = ['authorizationCode', 'clientCredentials', 'implicit', 'password', 'deviceCode']

/** One skill per tool method, added to the extended card for callers allowed to use it. */
export function toolSkill (method: string): AgentSkill {
  return {
    id: `tool-${method}`,
    name: method,
    description: `Runs the ${method} tool: send the text \`${method}\` (or call the JSON-RPC method of that name).`,
    tags: ['tool']
  }
}

/** The card's `url`: `agent.url`, else `http://<host>:<port><prefix>/`. */
export function publicUrl (config: A2AConfig, prefix: string): string {
  if (config.agent.url !== undefined) return config.agent.url
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host
  const path = prefix.endsWith('/') ? prefix : prefix + '/'
  return `http://${host}:${config.server.port}${path.startsWith('/') ? path : '/' + path}`
}

/**
 * The card's interface fields for the JSON-RPC URL `url` (CONTRACT.md §11.5): v1.0 `supportedInterfaces`, and v0.3
 * `url` and `additionalInterfaces` (never gRPC there).
 */
export function cardInterfaces (url: string, bindings: CardBindings = {}): Pick<AgentCard, 'supportedInterfaces' | 'url' | 'additionalInterfaces'> {
  // Each binding with the protocol versions it serves.
  const served: Array<[ProtocolBinding, string, ReadonlyArray<'1.0' | '0.3'>]> = [['JSONRPC', url, INTERFACE_VERSIONS]]
  if (bindings.rest !== undefined && bindings.rest.length > 0) served.push(['HTTP+JSON', url, bindings.rest])
  if (bindings.grpcUrl !== undefined) served.push(['GRPC', bindings.grpcUrl, INTERFACE_VERSIONS])
  const tenant = bindings.tenant === undefined ? {} : { tenant: bindings.tenant }
  return {
    supportedInterfaces: INTERFACE_VERSIONS.flatMap(protocolVersion => served
      .filter(([, , versions]) => versions.includes(protocolVersion))
      .map(([protocolBinding, at]) => ({ url: at, protocolBinding, ...tenant, protocolVersion }))),
    url,
    additionalInterfaces: served.filter(([binding, , versions]) => binding !== 'GRPC' && versions.includes('0.3'))
      .map(([transport, at]) => ({ url: at, transport }))
  }
}

/** The bindings the configuration serves besides JSON-RPC, as the card lists them. */
export function cardBindingsOf (config: A2AConfig): CardBindings {
  const bindings: CardBindings = {}
  if (config.protocol.rest) bindings.rest = ['1.0', '0.3']
  if (config.protocol.grpc.enabled) bindings.grpcUrl = grpcUrlOf(config)
  if (config.protocol.tenant !== undefined) bindings.tenant = config.protocol.tenant
  return bindings
}

/**
 * The gRPC binding's URL in the card: `protocol.grpc.advertised_url`, else `<host>:<port>` (an IPv6 host in brackets),
 * a gRPC target as a2a.proto's `AgentInterface.url` asks for gRPC ("hostname:port"). The official clients hand the
 * URL to grpc-js (@a2a-js/sdk) or grpcio (the Python a2a-sdk) as it is, and neither dials `grpc://...`.
 */
export function grpcUrlOf (config: A2AConfig): string {
  const { advertised_url: advertised, port } = config.protocol.grpc
  if (advertised !== '') return advertised
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host
  return `${host}:${port}`
}

/** The v1.0 form of v0.3 security requirements: `{apiKey: []}` → `{schemes: {apiKey: {list: []}}}`. */
export function v1Requirements (security: SecurityV03[]): SecurityRequirement[] {
  return security.map(requirement => ({
    schemes: Object.fromEntries(Object.entries(requirement).map(([name, scopes]) => [name, { list: [...scopes] }]))
  }))
}

/**
 * The v1.0 form of a security scheme, a2a.proto's `SecurityScheme` oneof: the wrapper an entry already carries, else
 * the one made from its v0.3 (OpenAPI) form.
 */
export function v1SecurityScheme (scheme: SecurityScheme): SecurityScheme {
  const wrapper = V1_SCHEME_KEYS.find(key => key in scheme)
  if (wrapper !== undefined) return { [wrapper]: scheme[wrapper] }
  const v1 = (fields: Record<string, unknown>) => Object.fromEntries(Object.entries({ description: scheme.description, ...fields })
    .filter(([, value]) => value !== undefined))
  switch (scheme.type) {
    case 'apiKey': return { apiKeySecurityScheme: v1({ location: scheme.in, name: scheme.name }) }
    case 'http': return { httpAuthSecurityScheme: v1({ scheme: scheme.scheme, bearerFormat: scheme.bearerFormat }) }
    case 'oauth2': {
      // v0.3 lists any number of flows; the proto's `OAuthFlows` is a oneof, so the first one stands for them.
      const flows = (scheme.flows ?? {}) as Record<string, unknown>
      const flow = V1_FLOW_KEYS.find(key => flows[key] !== undefined)
      return {
        oauth2SecurityScheme: v1({ flows: flow === undefined ? {} : { [flow]: flows[flow] }, oauth2MetadataUrl: scheme.oauth2MetadataUrl })
      }
    }
    case 'openIdConnect': return { openIdConnectSecurityScheme: v1({ openIdConnectUrl: scheme.openIdConnectUrl }) }
    default: return { mtlsSecurityScheme: v1({}) }
  }
}

/** The security schemes the card announces, one per configured scheme (CONTRACT.md §3, §11.5). */
function securityOf (config: A2AConfig): Pick<AgentCard, 'securitySchemes' | 'security' | 'securityRequirements'> {
  const { auth } = config.security
  const schemes: Record<string, SecurityScheme> = {}
  if (auth.api_key.keys.length > 0) {
    schemes.apiKey = { type: 'apiKey', in: 'header', name: auth.api_key.header, description: 'An API key' }
  }
  if (auth.bearer.tokens.length > 0 || auth.api_key.keys.length > 0) {
    schemes.bearer = { type: 'http', scheme: 'bearer', description: 'A static bearer token or an API key' }
  }
  if (auth.oauth2 !== undefined) {
    // Introspection only: the config names no token endpoint to announce as OAuth2 flows, so clients are told what
    // this server checks, a bearer token.
    schemes.oauth2 = {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'opaque',
      description: 'An OAuth 2.0 access token from the identity provider, checked by introspection (RFC 7662)'
    }
  }
  // Each entry carries both forms (v0.3 `type`, v1.0 oneof wrapper), or with `v1` the wrapper alone (interop trap T1).
  const v1Only = config.protocol.card_security_schemes === 'v1'
  const security = Object.keys(schemes).map(name => ({ [name]: [] }))
  return {
    securitySchemes: Object.fromEntries(Object.entries(schemes).map(([name, scheme]) =>
      [name, v1Only ? v1SecurityScheme(scheme) : { ...scheme, ...v1SecurityScheme(scheme) }])),
    security,
    securityRequirements: v1Requirements(security)
  }
}

/** The hybrid card of CONTRACT.md §11.5, for the configured address (the well-known route rewrites it per Host). */
export function buildAgentCard (config: A2AConfig, opts: CardOptions): AgentCard {
  const { url, supportedInterfaces, additionalInterfaces } = cardInterfaces(publicUrl(config, opts.prefix), { ...cardBindingsOf(config), ...opts })
  const secured = config.security.enabled
  const security = secured ? securityOf(config) : undefined
  const skills: AgentSkill[] = (config.agent.skills.length > 0
    ? config.agent.skills.map(toSkill)
    : [config.agent.executor === 'openai' ? LLM_SKILL : BUILTIN_SKILL])
    // A skill needs what the card needs: written at skill level too, in both versions' forms.
    .map(skill => security === undefined ? skill : { ...skill, security: security.security, securityRequirements: security.securityRequirements })
  const card: AgentCard = {
    protocolVersion: '0.3.0',
    name: config.agent.name,
    description: config.agent.description,
    supportedInterfaces,
    url,
    version: config.agent.version,
    preferredTransport: 'JSONRPC',
    additionalInterfaces,
    capabilities: {
      streaming: true,
      pushNotifications: config.push_notifications.enabled,
      extendedAgentCard: secured,
      stateTransitionHistory: true
    },
    defaultInputModes: config.agent.input_modes,
    defaultOutputModes: config.agent.output_modes,
    skills,
    supportsAuthenticatedExtendedCard: secured
  }
  if (security !== undefined) Object.assign(card, security)
  // The same `AgentExtension` list in both versions (docs/protocol.md, "Extensions"); none: no field.
  const extensions = cardExtensions(config)
  if (extensions.length > 0) card.capabilities.extensions = extensions
  return card
}

/**
 * The pure v1.0 form of a card (CONTRACT.md §11.3, `GetExtendedAgentCard`): only a2a.proto `AgentCard` fields, no v0.3
 * field, security schemes as their oneof wrapper alone. Strict v1.0 parsers (a2a-python 1.x) reject anything else.
 */
export function v1Card (card: AgentCard): V1AgentCard {
  const out: V1AgentCard = {
    name: card.name,
    description: card.description,
    supportedInterfaces: card.supportedInterfaces.map(entry => ({ ...entry })),
    version: card.version,
    capabilities: {
      streaming: card.capabilities.streaming,
      pushNotifications: card.capabilities.pushNotifications,
      extendedAgentCard: card.capabilities.extendedAgentCard
    },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map(v1Skill)
  }
  if (card.capabilities.extensions !== undefined) out.capabilities.extensions = card.capabilities.extensions
  if (card.securitySchemes !== undefined) {
    out.securitySchemes = Object.fromEntries(Object.entries(card.securitySchemes).map(([name, s]) => [name, v1SecurityScheme(s)]))
  }
  const requirements = card.securityRequirements ?? (card.security === undefined ? undefined : v1Requirements(card.security))
  if (requirements !== undefined) out.securityRequirements = requirements
  return out
}

function v1Skill (skill: AgentSkill): V1AgentSkill {
  const out: V1AgentSkill = toSkill(skill)
  const requirements = skill.securityRequirements ?? (skill.security === undefined ? undefined : v1Requirements(skill.security))
  if (requirements !== undefined) out.securityRequirements = requirements
  return out
}

/** A skill's own fields (a configured one, or a card's without its security). */
function toSkill (skill: Skill | AgentSkill): AgentSkill {
  const out: AgentSkill = { id: skill.id, name: skill.name, description: skill.description, tags: skill.tags }
  if (skill.examples !== undefined) out.examples = skill.examples
  if (skill.inputModes !== undefined) out.inputModes = skill.inputModes
  if (skill.outputModes !== undefined) out.outputModes = skill.outputModes
  return out
}
