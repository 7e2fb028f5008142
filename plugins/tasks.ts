import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import type { AgentExecutor } from '../services/agent/executor.js'
import { createAgentTools } from '../services/agent/tools.js'
import { MemoryTaskEventBus } from '../services/tasks/event-bus.js'
import { MemoryTaskStore } from '../services/tasks/memory-store.js'
import { TaskService } from '../services/tasks/task-service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The task service: state machine, executor runs, cancellation, the per-task event bus. */
    a2aTasks: TaskService
  }
}

export interface TasksPluginOptions {
  config: A2AConfig
  executor: AgentExecutor
}

/**
 * Creates the task store and event bus of `tasks.backend` and the task service over them. On close, running tasks
 * get `server.shutdown_timeout` to finish before they are failed (CONTRACT.md §6, shutdown).
 */
const tasksPlugin: FastifyPluginAsync<TasksPluginOptions> = async (fastify, opts) => {
  const { config } = opts
  const store = new MemoryTaskStore({ maxTasks: config.tasks.max_tasks, ttlSeconds: config.tasks.ttl })
  const bus = new MemoryTaskEventBus()
  const log = fastify.log.child({ component: 'tasks' })
  const service = new TaskService({
    store,
    bus,
    executor: opts.executor,
    log,
    // The registry is decorated after this plugin; it is only read when a task runs.
    toolsFor: principal => createAgentTools(fastify.a2aMethods, principal, log)
  })

  fastify.decorate('a2aTasks', service)
  fastify.addHook('preClose', async () => {
    await service.drain(config.server.shutdown_timeout * 1000)
  })
  fastify.addHook('onClose', async () => {
    await bus.close()
    await store.close()
  })
}

export default fp(tasksPlugin, { name: 'a2a-tasks', fastify: '5.x' })
