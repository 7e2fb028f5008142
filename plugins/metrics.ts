import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import type { A2AMetrics } from '../services/serving/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Prometheus metrics of this agent (`GET /metrics`); null while `metrics.enabled` is false. */
    a2aMetrics: A2AMetrics | null
  }
}

export interface MetricsPluginOptions {
  config: A2AConfig
}

/**
 * The agent's metrics, in a prom-client registry of its own. Off (`metrics.enabled: false`), the decorator is null:
 * nothing is registered, and the services that report are handed no observer at all.
 */
const metricsPlugin: FastifyPluginAsync<MetricsPluginOptions> = async (fastify, opts) => {
  if (!opts.config.metrics.enabled) {
    fastify.decorate('a2aMetrics', null)
    return
  }
  // Loaded only when metrics are on, as ioredis and BullMQ are only with Redis: prom-client costs memory at start.
  const { A2AMetrics } = await import('../services/serving/metrics.js')
  const metrics = new A2AMetrics({
    // All are decorated after this plugin: they are read only when a request is answered or a scrape runs.
    knownMethod: name => fastify.a2aMethods.has(name),
    // SSE streams and gRPC server streams alike, each until its client has taken its last bytes.
    openStreams: () => fastify.a2aStreams.size + (fastify.a2aGrpc?.binding?.size ?? 0),
    answerBytes: () => fastify.a2aAnswers.bytes,
    requestBytes: () => fastify.a2aRequests.bytes
  })
  // Counted from the task service's own events, never by scanning the store.
  fastify.a2aTasks.onCreate(record => metrics.taskCreated(record.task.status.state))
  fastify.a2aTasks.onStatusChange((record, previous) => metrics.taskChanged(record.task.status.state, previous))
  fastify.a2aTasks.dedupe?.onDuplicate(() => metrics.sendDeduplicated())
  fastify.decorate('a2aMetrics', metrics)
}

export default fp(metricsPlugin, { name: 'a2a-metrics', fastify: '5.x', dependencies: ['a2a-tasks'] })
