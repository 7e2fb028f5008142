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
import { createDiscoverMethod, openRpcRenderer, type RenderedOpenRpc } from '../services/json-rpc/openrpc.js'
import { buildAgentCard, publicUrl } from '../services/a2a/agent-card.js'
import { ExtensionSupport, cardExtensions, type ExtensionDefinition } from '../services/a2a/extensions.js'
import { buildOpenApiDocument, openApiRenderer, type RenderedOpenApi } from '../services/rest/openapi.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Every JSON-RPC method this agent answers; later features add entries here. */
    a2aMethods: MethodRegistry
    /** The OpenRPC document of every registered method (`GET /openrpc.json`, `rpc.discover`), built on first use. */
    a2aOpenRpc: () => RenderedOpenRpc
    /** The OpenAPI 3.1 document of the HTTP+JSON routes (`GET /openapi.json`), built on first use. */
    a2aOpenApi: () => RenderedOpenApi
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
  const openrpc = openRpcRenderer(() => registry.list(), {
    title: agent.name, version: agent.version, description: agent.description, url: publicUrl(config, opts.prefix)
  })
  registry.add(createDiscoverMethod(openrpc))
  fastify.decorate('a2aMethods', registry)
  fastify.decorate('a2aOpenRpc', openrpc)
  const card = buildAgentCard(config, { prefix: opts.prefix })
  fastify.decorate('a2aOpenApi', openApiRenderer(() => buildOpenApiDocument(registry, {
    title: agent.name, version: agent.version, description: agent.description, url: publicUrl(config, opts.prefix)
  }, card.securitySchemes)))
}

export default fp(methodsPlugin, { name: 'a2a-methods', fastify: '5.x', dependencies: ['a2a-tasks'] })
