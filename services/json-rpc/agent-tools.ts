import type { Logger } from '../kernel/logger.js'
import { missingScopes, type Principal } from '../auth/principal.js'
import { invalidParams } from '../kernel/errors.js'
import { resolveMethod } from './dispatch.js'
import type { MethodRegistry } from './registry.js'
import type { AgentTools } from '../agent/executor.js'

/** The JSON-RPC methods an agent may call as tools (CONTRACT.md §5 and §6). */
export const TOOL_METHODS = ['status', 'capabilities', 'list_directory'] as const

/**
 * Tools for an executor, bound to the task's principal. A call goes through the same registry entry as the
 * JSON-RPC method: the same scopes, the same params validation, the same handler. `extensions`: the ones the request
 * that sent the message activated (a tool call serves that request: the same required check, the same hooks).
 */
export function createAgentTools (registry: MethodRegistry, principal: Principal, log: Logger, extensions: readonly string[] = []): AgentTools {
  return {
    available () {
      return TOOL_METHODS.filter(name => {
        const method = registry.get(name)
        return method !== undefined && missingScopes(principal, method.scopes).length === 0
      })
    },
    async call (name, args) {
      if (!(TOOL_METHODS as readonly string[]).includes(name) || !registry.has(name)) {
        throw invalidParams(`tool "${name}" does not exist`)
      }
      const { method, params } = resolveMethod(registry, { id: null, method: name, params: args }, principal)
      return method.handler(params, { principal, log, id: null, extensions })
    }
  }
}
