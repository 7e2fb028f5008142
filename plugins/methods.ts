import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { MethodRegistry } from '../services/json-rpc/registry.js'
import { createPushMethods } from '../services/json-rpc/methods/push.js'
import { createTaskMethods } from '../services/json-rpc/methods/tasks.js'
import { createV10Methods } from '../services/json-rpc/methods/v10.js'
import { A2AOperations } from '../services/a2a/operations.js'
import type { PushService } from '../services/push/service.js'
import { createToolMethods } from '../services/json-rpc/methods/tools.js'
import { ensureDefaultRoot } from '../services/agent/list-directory.js'
import { checkErrorCodes, createDiscoverMethod, renderOnce, type Rendered } from '../services/json-rpc/discover.js'
import type { OpenRpcDocument } from '../services/json-rpc/openrpc.js'
import { buildAgentCard, publicUrl } from '../services/a2a/agent-card.js'
import { ExtensionSupport, cardExtensions, type ExtensionDefinition } from '../services/a2a/extensions.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Every JSON-RPC method this agent answers; later features add entries here. */
    a2aMethods: MethodRegistry
    /**
     * The OpenRPC document of every registered method (`GET /openrpc.json`, `rpc.discover`): its generator loaded and
     * the document built on first use.
     */
    a2aOpenRpc: () => Promise<Rendered<OpenRpcDocument>>
    /** The OpenAPI 3.1 document of the HTTP+JSON routes (`GET /openapi.json`), loaded and built on first use. */
    a2aOpenApi: () => Promise<Rendered<Record<string, unknown>>>
  }
}

export interface MethodsPluginOptions {
  config: A2AConfig
  /** The plugin prefix, for the card's url. */
  prefix: string
  /** Process start, for `status.uptime_seconds`. */
  startedAt: number
  /** The push config rules, when push notifications are on: the push methods are registered then only. */
  push?: PushService
  /** The embedding app's extensions (the plugin's `extensions` option): their hooks run around the methods. */
  extensions?: readonly ExtensionDefinition[]
}

/** The method registry, filled with the core methods of CONTRACT.md §5. */
const methodsPlugin: FastifyPluginAsync<MethodsPluginOptions> = async (fastify, opts) => {
  const { config } = opts
  await ensureDefaultRoot(config.tools.list_directory.root, fastify.log)
  const registry = new MethodRegistry(config.security.method_scopes, new ExtensionSupport(cardExtensions(config), opts.extensions))
  const ops = new A2AOperations({ config, tasks: fastify.a2aTasks, push: opts.push })
  for (const method of createTaskMethods({ config, ops })) registry.add(method)
  for (const method of createV10Methods({ ops, tenant: config.protocol.tenant })) registry.add(method)
  if (opts.push !== undefined) {
    for (const method of createPushMethods({ tasks: fastify.a2aTasks, push: opts.push })) registry.add(method)
  }
  for (const method of createToolMethods({ config, registry, prefix: opts.prefix, startedAt: opts.startedAt })) {
    registry.add(method)
  }
  const agent = config.agent
  const info = { title: agent.name, version: agent.version, description: agent.description, url: publicUrl(config, opts.prefix) }
  // The documents' generators load with the first request for one (docs/architecture.md, "What loads when").
  const openrpc = renderOnce(async () => {
    const { buildOpenRpcDocument } = await import('../services/json-rpc/openrpc.js')
    return buildOpenRpcDocument(registry.list(), info)
  })
  registry.add(createDiscoverMethod(openrpc))
  fastify.decorate('a2aMethods', registry)
  fastify.decorate('a2aOpenRpc', openrpc)
  const card = buildAgentCard(config, { prefix: opts.prefix })
  fastify.decorate('a2aOpenApi', renderOnce(async () => {
    const { buildOpenApiDocument } = await import('../services/rest/openapi.js')
    return buildOpenApiDocument(registry, info, card.securitySchemes)
  }))
  // A method whose error codes the document could not describe is refused at start, every plugin's method added.
  fastify.addHook('onReady', async () => {
    checkErrorCodes(registry.list())
  })
}

export default fp(methodsPlugin, { name: 'a2a-methods', fastify: '5.x', dependencies: ['a2a-tasks'] })
