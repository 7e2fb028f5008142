import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { AnswerBudget } from '../services/answer-budget.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Bytes of answers in flight, bounded over every binding (`server.max_answer_bytes`, services/answer-budget.ts). */
    a2aAnswers: AnswerBudget
  }
}

export interface AnswersPluginOptions {
  config: A2AConfig
}

/** The one answer budget of this agent, which the HTTP routes, the SSE hub and the gRPC binding share. */
const answersPlugin: FastifyPluginAsync<AnswersPluginOptions> = async (fastify, opts) => {
  const { server } = opts.config
  fastify.decorate('a2aAnswers', new AnswerBudget({
    maxBytes: server.max_answer_bytes,
    maxBytesPerConnection: server.max_answer_bytes_per_connection
  }))
}

export default fp(answersPlugin, { name: 'a2a-answers', fastify: '5.x' })
