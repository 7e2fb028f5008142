// A custom agent: an AgentExecutor (an async generator) that reverses each word of the user's text. It says what it
// is doing with a progress status, streams one artifact chunk per word, asks for input when there is no text, and
// stops when the task is canceled.
//
// Run it:  node --import ./scripts/ts-import.js examples/custom-executor.ts   (PORT=9000 to change the port)
// Then:    curl -s localhost:8000/ -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"message/send",
//            "params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hello world"}]}}}'
//
// In your own project, import from 'fastify-a2a' instead of '../index.js'.
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import a2a, { type AgentExecutor } from '../index.js'

export interface WordReverserOptions {
  /** Milliseconds to wait before each word: makes the streaming visible. Default 0. */
  delayMs?: number
}

/** The artifact every answer goes to, one chunk per word. */
export const ARTIFACT_NAME = 'reversed'

/** An executor that streams the user's words back, each one reversed. */
export function createWordReverser ({ delayMs = 0 }: WordReverserOptions = {}): AgentExecutor {
  return async function * wordReverser ({ message, signal, log }) {
    const words = message.parts
      .flatMap(part => (part.kind === 'text' ? part.text.split(/\s+/) : []))
      .filter(word => word !== '')
    if (words.length === 0) {
      // The task waits; the client answers with a message that carries this task's id.
      yield { kind: 'status', state: 'input_required', message: 'Send me some words to reverse.' }
      return
    }
    yield { kind: 'status', state: 'in_progress', message: `Reversing ${words.length} word(s)…` }
    const artifactId = `reversed-${message.messageId}`
    for (const [i, word] of words.entries()) {
      // tasks/cancel aborts the signal: the sleep throws, and the task is already `canceled`.
      if (delayMs > 0) await sleep(delayMs, undefined, { signal })
      yield {
        kind: 'artifact',
        artifactId,
        name: ARTIFACT_NAME,
        parts: [{ kind: 'text', text: (i === 0 ? '' : ' ') + [...word].reverse().join('') }],
        append: i > 0,
        lastChunk: i === words.length - 1
      }
    }
    log.info({ words: words.length }, 'words reversed')
    // Returning without a state completes the task.
  }
}

/** The standalone app: the word reverser at `/`, with streaming in the A2A dialect. */
export async function buildApp (opts: WordReverserOptions & { logger?: boolean } = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: opts.logger ?? false })
  await app.register(a2a, {
    config: {
      agent: {
        name: 'Word Reverser',
        description: 'Reverses every word of a text, one streamed chunk per word',
        skills: [{ id: 'reverse', name: 'Reverse words', description: 'Reverses each word', tags: ['text'], examples: ['hello world'] }]
      },
      protocol: { dialect: 'a2a' }
    },
    executor: createWordReverser(opts)
  })
  return app
}

/** Where `main` listens: HOST and PORT from the environment, else 127.0.0.1:8000. */
export function listenAddress (env: Record<string, string | undefined>): { host: string, port: number } {
  return { host: env.HOST ?? '127.0.0.1', port: Number(env.PORT ?? 8000) }
}

/** Serves the app until SIGINT or SIGTERM. */
export async function main (): Promise<void> {
  const app = await buildApp({ logger: true, delayMs: 200 })
  await app.listen(listenAddress(process.env))
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { app.close() })
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
