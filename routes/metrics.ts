import type { FastifyPluginAsync } from 'fastify'
import type { A2AMetrics } from '../services/serving/metrics.js'

export interface MetricsRoutesOptions {
  metrics: A2AMetrics
}

/** `GET /metrics`: Prometheus text, never authenticated; registered only while `metrics.enabled` (CONTRACT.md §3). */
const metricsRoutes: FastifyPluginAsync<MetricsRoutesOptions> = async (fastify, opts) => {
  const { metrics } = opts
  fastify.get('/metrics', async function (_request, reply) {
    const text = await metrics.render()
    return reply.type(metrics.contentType).send(text)
  })
}

export default metricsRoutes
