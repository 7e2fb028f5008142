// A host Fastify app with routes of its own, and the A2A agent registered under /agent with a small custom executor.
// Everything the plugin adds stays under its prefix: the host's routes, hooks and error handler are untouched.
//
// Run it:  node --import ./scripts/ts-import.js examples/embedded-app.ts   (PORT=9000 to change the port)
// Then:    curl -s localhost:3000/                       (a host route)
//          curl -s localhost:3000/agent/.well-known/agent-card.json
//          curl -s localhost:3000/agent -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"message/send",
//            "params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}'
//
// In your own project, import from 'fastify-a2a' instead of '../index.js'.
import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import a2a, { type AgentExecutor } from '../index.js'

/** Greets the caller by principal, and shows the tools the agent may use on the caller's behalf. */
export const greeter: AgentExecutor = async function * ({ message, principal, tools }) {
  const text = message.parts.flatMap(part => (part.kind === 'text' ? [part.text] : [])).join(' ')
  yield `Hello ${principal.id}, you said: ${text}`
  // Tools run as the caller, with the same scope checks as the JSON-RPC methods.
  const status = await tools.call('status', {}) as { agent: string }
  yield { kind: 'artifact', name: 'status', parts: [{ kind: 'data', data: { agent: status.agent, tools: tools.available() } }] }
}

/** The host app: its own routes, hook and error handler, and the agent under /agent. */
export async function buildApp (opts: { logger?: boolean } = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: opts.logger ?? false })
  app.addHook('onSend', async (_request, reply) => { reply.header('x-host', 'embedded-app') })
  app.setErrorHandler(async (err: Error, _request, reply) => reply.code(500).send({ host: 'error', message: err.message }))
  app.get('/', async () => ({ app: 'host', agent: '/agent' }))
  app.get('/boom', async () => { throw new Error('host route failed') })

  await app.register(a2a, {
    prefix: '/agent',
    config: { agent: { name: 'Embedded Greeter' } },
    executor: greeter
  })
  return app
}

/** Where `main` listens: HOST and PORT from the environment, else 127.0.0.1:3000. */
export function listenAddress (env: Record<string, string | undefined>): { host: string, port: number } {
  return { host: env.HOST ?? '127.0.0.1', port: Number(env.PORT ?? 3000) }
}

/** Serves the app until SIGINT or SIGTERM. */
export async function main (): Promise<void> {
  const app = await buildApp({ logger: true })
  await app.listen(listenAddress(process.env))
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { app.close() })
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
