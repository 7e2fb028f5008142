import { Type } from '@sinclair/typebox'
import type { A2AConfig } from '../../../schemas/config.js'
import {
  CapabilitiesResultSchema, ListDirectoryParamsSchema, ListDirectoryResultSchema, StatusResultSchema
} from '../../../schemas/methods.js'
import { missingScopes } from '../../auth/principal.js'
import { buildAgentCard, toolSkill, v1Card, type AgentCard } from '../../a2a/agent-card.js'
import { cardSignerOf, signedCard } from '../../a2a/card-signing.js'
import { listDirectory } from '../../agent/list-directory.js'
import { TOOL_METHODS } from '../agent-tools.js'
import { JsonRpcError, RpcCode, unauthenticated } from '../../kernel/errors.js'
import type { MethodDefinition, MethodRegistry } from '../registry.js'

export interface ToolMethodDeps {
  config: A2AConfig
  registry: MethodRegistry
  /** The plugin prefix, for the card's url. */
  prefix: string
  /** Process start, ms since the epoch, for `uptime_seconds`. */
  startedAt: number
}

/** `status`, `capabilities`, `list_directory` and `agent/getAuthenticatedExtendedCard` (CONTRACT.md §5). */
export function createToolMethods ({ config, registry, prefix, startedAt }: ToolMethodDeps): MethodDefinition[] {
  const card: AgentCard = buildAgentCard(config, { prefix })
  // Extended cards are signed too; the signer keeps each form signed once (it differs by the caller's scopes).
  const signer = cardSignerOf(config)
  const root = config.tools.list_directory.root

  const status: MethodDefinition = {
    name: 'status',
    summary: 'Says the agent is up: its name, version and uptime. An authenticated probe.',
    result: StatusResultSchema,
    handler () {
      const now = Date.now()
      return {
        status: 'ok',
        agent: config.agent.name,
        version: config.agent.version,
        uptime_seconds: Math.floor((now - startedAt) / 1000),
        timestamp: new Date(now).toISOString()
      }
    }
  }

  const capabilities: MethodDefinition = {
    name: 'capabilities',
    summary: 'Lists the agent\'s capabilities, skills and methods, with the scopes each needs and whether the caller has them.',
    result: CapabilitiesResultSchema,
    discovery: true,
    scopes: ['agent:read'],
    errors: [RpcCode.insufficientScope],
    handler (_params, ctx) {
      return {
        agent: config.agent.name,
        protocolVersion: card.protocolVersion,
        capabilities: card.capabilities,
        methods: registry.list().map(m => ({
          name: m.name,
          scopes: [...m.scopes],
          allowed: missingScopes(ctx.principal, m.scopes).length === 0
        })),
        skills: card.skills
      }
    }
  }

  const listDir: MethodDefinition<typeof ListDirectoryParamsSchema> = {
    name: 'list_directory',
    summary: 'Lists a directory under tools.list_directory.root: name, type, size and modification time, by name.',
    params: ListDirectoryParamsSchema,
    result: ListDirectoryResultSchema,
    scopes: ['files:read'],
    errors: [RpcCode.insufficientScope],
    handler ({ path }) {
      return listDirectory(root, path)
    }
  }

  const extendedCard: MethodDefinition = {
    name: 'agent/getAuthenticatedExtendedCard',
    summary: 'The agent card with every skill the authenticated caller may use.',
    result: Type.Object({ name: Type.String() }, { additionalProperties: true }),
    errors: [RpcCode.unauthenticated],
    discovery: true,
    handler (_params, ctx) {
      if (ctx.principal.scheme === 'anonymous') throw unauthenticated('the extended card needs an authenticated caller', false)
      return signedCard(signer, extended(ctx.principal))
    }
  }

  /** The card with a skill for each tool method the caller may use. */
  function extended (principal: Parameters<typeof missingScopes>[0]): AgentCard {
    const tools = TOOL_METHODS.filter(name => {
      const method = registry.get(name)
      return method !== undefined && missingScopes(principal, method.scopes).length === 0
    })
    return { ...card, skills: [...card.skills, ...tools.map(toolSkill)] }
  }

  const extendedCardV10: MethodDefinition = {
    name: 'GetExtendedAgentCard',
    twin: 'agent/getAuthenticatedExtendedCard',
    summary: 'A2A v1.0: the extended agent card in its pure v1.0 form, with every skill the caller may use. -32004 with security off.',
    result: Type.Object({ name: Type.String() }, { additionalProperties: true }),
    errors: [RpcCode.unsupportedOperation],
    discovery: true,
    handler (_params, ctx) {
      // With security off the card says extendedAgentCard: false (CONTRACT.md §11.3).
      if (!card.capabilities.extendedAgentCard || ctx.principal.scheme === 'anonymous') {
        throw new JsonRpcError(RpcCode.unsupportedOperation, 'Unsupported operation', 'this agent has no extended card: security is off')
      }
      return signedCard(signer, v1Card(extended(ctx.principal)))
    }
  }

  return [status, capabilities, listDir as unknown as MethodDefinition, extendedCard, extendedCardV10]
}
