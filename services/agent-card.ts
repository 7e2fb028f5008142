import type { A2AConfig, Skill } from '../schemas/config.js'

/** The A2A v0.3.0 agent card (the fields this server fills). */
export interface AgentCard {
  protocolVersion: '0.3.0'
  name: string
  description: string
  url: string
  version: string
  preferredTransport: 'JSONRPC'
  additionalInterfaces: Array<{ url: string, transport: string }>
  capabilities: { streaming: boolean, pushNotifications: boolean, stateTransitionHistory: boolean }
  defaultInputModes: string[]
  defaultOutputModes: string[]
  skills: AgentSkill[]
  supportsAuthenticatedExtendedCard: boolean
  securitySchemes?: Record<string, Record<string, unknown>>
  security?: Array<Record<string, string[]>>
}

export interface AgentSkill {
  id: string
  name: string
  description: string
  tags: string[]
  examples?: string[]
  inputModes?: string[]
  outputModes?: string[]
}

export interface CardOptions {
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

/** The skill listed for `agent.executor: openai` when `agent.skills` is empty. */
export const LLM_SKILL: AgentSkill = {
  id: 'chat',
  name: 'Chat',
  description: 'Answers in natural language with a language model, and may run the status, capabilities and ' +
    'list_directory tools the caller is allowed to use.',
  tags: ['chat', 'llm', 'tools'],
  examples: ['What is in the workspace?', 'Which methods may I call?']
}

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

/** The security schemes the card announces, one per configured scheme (CONTRACT.md §3). */
function securityOf (config: A2AConfig): Pick<AgentCard, 'securitySchemes' | 'security'> {
  const { auth } = config.security
  const schemes: Record<string, Record<string, unknown>> = {}
  if (auth.api_key.keys.length > 0) {
    schemes.apiKey = { type: 'apiKey', in: 'header', name: auth.api_key.header, description: 'An API key' }
  }
  if (auth.bearer.tokens.length > 0 || auth.api_key.keys.length > 0) {
    schemes.bearer = { type: 'http', scheme: 'bearer', description: 'A static bearer token or an API key' }
  }
  if (auth.oauth2 !== undefined) {
    schemes.oauth2 = {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'opaque',
      description: 'An OAuth 2.0 access token from the identity provider, checked by introspection (RFC 7662)'
    }
  }
  return { securitySchemes: schemes, security: Object.keys(schemes).map(name => ({ [name]: [] })) }
}

export function buildAgentCard (config: A2AConfig, opts: CardOptions): AgentCard {
  const url = publicUrl(config, opts.prefix)
  const skills: AgentSkill[] = config.agent.skills.length > 0
    ? config.agent.skills.map(toSkill)
    : [config.agent.executor === 'openai' ? LLM_SKILL : BUILTIN_SKILL]
  const card: AgentCard = {
    protocolVersion: '0.3.0',
    name: config.agent.name,
    description: config.agent.description,
    url,
    version: config.agent.version,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    capabilities: {
      streaming: true,
      pushNotifications: config.push_notifications.enabled,
      stateTransitionHistory: true
    },
    defaultInputModes: config.agent.input_modes,
    defaultOutputModes: config.agent.output_modes,
    skills,
    supportsAuthenticatedExtendedCard: config.security.enabled
  }
  if (config.security.enabled) Object.assign(card, securityOf(config))
  return card
}

function toSkill (skill: Skill): AgentSkill {
  const out: AgentSkill = { id: skill.id, name: skill.name, description: skill.description, tags: skill.tags }
  if (skill.examples !== undefined) out.examples = skill.examples
  if (skill.inputModes !== undefined) out.inputModes = skill.inputModes
  if (skill.outputModes !== undefined) out.outputModes = skill.outputModes
  return out
}
