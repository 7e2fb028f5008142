#!/usr/bin/env node
// The `fastify-a2a` command (CONTRACT.md §1): argument handling only; the work is in services/config, server.ts
// and services/push/webhook-sink.ts.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { buildAgentCard } from './services/a2a/agent-card.js'
import { postgresService } from './services/config/postgres-service.js'
import { LOG_FORMATS, type LogFormat } from './services/kernel/logger.js'
import {
  isConfigError,
  loadConfig,
  type ConfigOverrides,
  type LoadedConfig
} from './services/config/load.js'

type Values = Record<string, string | boolean | undefined>

interface Command {
  usage: string
  options: NonNullable<ParseArgsConfig['options']>
  run: (values: Values) => Promise<number>
}

const HELP = { help: { type: 'boolean', short: 'h' } } as const
const CONFIG = { config: { type: 'string', short: 'c' } } as const

const CONFIG_HELP = `  -c, --config FILE   the config file; default: $A2A_CONFIG, else ./agent.yml if it exists, else the built-in defaults
  -h, --help          show this help`

const USAGE = `Usage: fastify-a2a <command> [options]

An A2A (Agent2Agent) agent server: A2A v1.0 and v0.3 over JSON-RPC, HTTP+JSON and gRPC.

Commands:
  serve          start the server
  validate       check a config file and print every problem with its path
  card           print the agent card as JSON, or check a card's signatures (--verify)
  init           write a commented agent.yml
  migrate        apply the PostgreSQL schema migrations to services.postgres
  webhook-sink   receive push notifications locally and print them

Options:
  -h, --help    show this help; \`fastify-a2a <command> --help\` shows a command's
  --version     print the version

The env variables HOST, PORT, LOG_LEVEL and REDIS_URL override the config file; flags override both.`

const SERVE_USAGE = `Usage: fastify-a2a serve [--config FILE] [--host H] [--port N] [--log-level L] [--log-format F]

Start the standalone server. SIGINT or SIGTERM drains it and exits.

Options:
${CONFIG_HELP}
  --host H            the address to listen on (overrides server.host and $HOST)
  -p, --port N        the port to listen on, 0 for any free one (overrides server.port and $PORT)
  --log-level L       fatal, error, warn, info, debug, trace or silent (overrides server.log_level and $LOG_LEVEL)
  --log-format F      json, pretty (readable lines, one per request) or auto: pretty when stdout is a terminal
                      outside CI, else json; default: $A2A_LOG_FORMAT, else auto`

const SINK_USAGE = `Usage: fastify-a2a webhook-sink [--host H] [--port N] [--secret S]

Receive push notifications locally, for trying push by hand. Every POST gets 204 and one printed line: the time,
the path, the task id and state, which credential headers were sent (never their values) and, with --secret,
whether the signature is valid. SIGINT or SIGTERM stops it.

Options:
  --host H            the address to listen on; default: 127.0.0.1
  -p, --port N        the port to listen on, 0 for any free one; default: 9000
  -s, --secret S      the server's push_notifications.config.signing_secret, to check signatures
  -h, --help          show this help`

const COMMANDS = new Map<string, Command>([
  ['serve', {
    usage: SERVE_USAGE,
    options: {
      ...CONFIG,
      ...HELP,
      host: { type: 'string' },
      port: { type: 'string', short: 'p' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' }
    },
    run: serve
  }],
  ['validate', {
    usage: `Usage: fastify-a2a validate [--config FILE]

Check the configuration. Prints "ok: <file>" and exits 0, or prints every problem with its key's path and exits 1.

Options:
${CONFIG_HELP}`,
    options: { ...CONFIG, ...HELP },
    run: validate
  }],
  ['card', {
    usage: `Usage: fastify-a2a card [--config FILE]
       fastify-a2a card --verify URL|FILE [--jwks URL|FILE]

Print the agent card the server would publish at /.well-known/agent-card.json (signed when agent.card_signing is
set), or check the signatures of a published card: one line per signature, exit 0 when every one verifies (and there
is at least one), else 1.

Options:
${CONFIG_HELP}
  --verify URL|FILE   the card to check: its URL (such as http://host/.well-known/agent-card.json) or a file
  --jwks URL|FILE     the JWK set with the public keys; default: the one each signature's jku header names`,
    options: { ...CONFIG, ...HELP, verify: { type: 'string' }, jwks: { type: 'string' } },
    run: card
  }],
  ['init', {
    usage: `Usage: fastify-a2a init [--file FILE] [--force]

Write a commented configuration with every default: security off, memory backends.

Options:
  -f, --file FILE     where to write it; default: agent.yml
  --force             overwrite the file if it exists
  -h, --help          show this help`,
    options: { ...HELP, file: { type: 'string', short: 'f' }, force: { type: 'boolean' } },
    run: init
  }],
  ['migrate', {
    usage: `Usage: fastify-a2a migrate [--config FILE] [--dry-run]

Apply the PostgreSQL schema migrations this version ships to the database at services.postgres.url, and print each
one applied. Instances that migrate at the same time (services.postgres.migrate at start) take turns: each
migration is applied once. Exits 1, with one line, when the database cannot be reached or its schema is newer than
this version knows.

Options:
${CONFIG_HELP}
  --dry-run           print what would be applied, and apply nothing`,
    options: { ...CONFIG, ...HELP, 'dry-run': { type: 'boolean' } },
    run: migrateSchema
  }],
  ['webhook-sink', {
    usage: SINK_USAGE,
    options: { ...HELP, host: { type: 'string' }, port: { type: 'string', short: 'p' }, secret: { type: 'string', short: 's' } },
    run: webhookSink
  }]
])

async function main (argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === '--help' || name === '-h') return print(USAGE)
  if (name === '--version') return print(version())
  const command = COMMANDS.get(name)
  if (command === undefined) return usageError(name === undefined ? 'no command given' : `unknown command "${name}"`, USAGE)
  let values: Values
  try {
    // No option is `multiple`, so every value is a string or a boolean.
    values = parseArgs({ args: rest, options: command.options, strict: true, allowPositionals: false }).values as Values
  } catch (err) {
    return usageError((err as Error).message, command.usage)
  }
  return values.help === true ? print(command.usage) : command.run(values)
}

/** `--port` as a number; null (after printing the usage) when it is not a whole number. */
function portOf (values: Values, usage: string): number | undefined | null {
  const port = values.port as string | undefined
  if (port === undefined) return undefined
  if (/^\d+$/.test(port)) return Number(port)
  usageError(`--port must be a whole number, not "${port}"`, usage)
  return null
}

/**
 * The codes of a start that fails for a reason to print in one line: the port, the database, its schema, a package
 * `telemetry.enabled` needs.
 */
const START_FAILURES = new Set<unknown>(['A2A_ERR_LISTEN', 'A2A_ERR_POSTGRES', 'A2A_ERR_SCHEMA', 'A2A_ERR_TELEMETRY'])

async function serve (values: Values): Promise<number> {
  const port = portOf(values, SERVE_USAGE)
  if (port === null) return 2
  // An empty $A2A_LOG_FORMAT counts as unset, as an empty $A2A_CONFIG does.
  const logFormat = (values['log-format'] as string | undefined) ?? (process.env.A2A_LOG_FORMAT || 'auto')
  if (!(LOG_FORMATS as readonly string[]).includes(logFormat)) {
    return usageError(`--log-format (or $A2A_LOG_FORMAT) must be auto, json or pretty, not "${logFormat}"`, SERVE_USAGE)
  }
  const overrides = {
    host: values.host as string | undefined,
    port,
    logLevel: values['log-level'] as string | undefined
  }
  const loaded = await load(values, overrides)
  if (loaded === undefined) return 1
  // Imported here so that the other commands do not load the server.
  const { startServer } = await import('./server.js')
  try {
    await startServer(loaded.config, { configPath: loaded.path, logFormat: logFormat as LogFormat })
  } catch (err) {
    // A start that cannot listen, or cannot use its PostgreSQL: one line, no stack (the server has closed everything
    // it opened, and a failed PostgreSQL start opens nothing).
    /* c8 ignore next -- anything else is a bug and must surface with its stack */
    if (!START_FAILURES.has((err as { code?: unknown }).code)) throw err
    console.error(`fastify-a2a: ${(err as Error).message}`)
    return 1
  }
  return 0
}

async function validate (values: Values): Promise<number> {
  const loaded = await load(values)
  return loaded === undefined ? 1 : print(`ok: ${loaded.path ?? 'built-in defaults'}`)
}

async function card (values: Values): Promise<number> {
  const source = values.verify as string | undefined
  if (source !== undefined) {
    // Imported here so that the other commands do not load jose.
    const { verifyCardSource } = await import('./services/a2a/card-verify.js')
    const { ok, lines } = await verifyCardSource(source, values.jwks as string | undefined)
    for (const line of lines) (ok ? console.log : console.error)(line)
    return ok ? 0 : 1
  }
  if (values.jwks !== undefined) return usageError('--jwks goes with --verify', COMMANDS.get('card')?.usage as string)
  const loaded = await load(values)
  if (loaded === undefined) return 1
  const { cardSignerOf, signedCard } = await import('./services/a2a/card-signing.js')
  const built = buildAgentCard(loaded.config, { prefix: '/' })
  return print(JSON.stringify(await signedCard(cardSignerOf(loaded.config), built), null, 2))
}

async function init (values: Values): Promise<number> {
  const file = resolve((values.file as string | undefined) ?? 'agent.yml')
  // The template (18 KB of text) loads for `init` alone.
  const { writeTemplate } = await import('./services/config/template.js')
  if (!await writeTemplate(file, { force: values.force === true })) {
    console.error(`fastify-a2a: ${file} exists; use --force to overwrite it`)
    return 1
  }
  return print(`wrote ${file}`)
}

async function migrateSchema (values: Values): Promise<number> {
  const loaded = await load(values)
  if (loaded === undefined) return 1
  const service = postgresService(loaded.config)
  if (service === undefined) {
    console.error(`fastify-a2a: migrate needs services.postgres.url in ${loaded.path ?? 'the configuration'}`)
    return 1
  }
  // Imported here so that the other commands do not load the PostgreSQL driver.
  const { connectOnce } = await import('./services/postgres/connect.js')
  const { migrate } = await import('./services/postgres/migrate.js')
  const dryRun = values['dry-run'] === true
  let client: Awaited<ReturnType<typeof connectOnce>> | undefined
  try {
    client = await connectOnce(service.url)
    const { from, to, applied } = await migrate(client, { dryRun })
    await client.end()
    for (const m of applied) console.log(`${dryRun ? 'would apply' : 'applied'} ${m.version} ${m.name}`)
    console.log(applied.length === 0 ? `schema at version ${from}: up to date` : `schema at version ${to}${dryRun ? ` (${applied.length} to apply)` : ''}`)
    return 0
  } catch (err) {
    await client?.end()
    // The database unreachable or gone, its schema newer than this code, a migration that failed: one line each. A
    // mistake in the code is not one of those, and surfaces with its stack.
    /* c8 ignore next */
    if (err instanceof TypeError || err instanceof ReferenceError || err instanceof RangeError) throw err
    console.error(`fastify-a2a: ${(err as Error).message}`)
    return 1
  }
}

async function webhookSink (values: Values): Promise<number> {
  const port = portOf(values, SINK_USAGE)
  if (port === null) return 2
  // Imported here so that the other commands do not load it.
  const { runWebhookSink } = await import('./services/push/webhook-sink.js')
  await runWebhookSink({
    host: values.host as string | undefined,
    port,
    secret: values.secret as string | undefined,
    out: process.stdout
  })
  return 0
}

// Loads the configuration, or prints every problem (one per line) and gives undefined.
async function load (values: Values, overrides?: ConfigOverrides): Promise<LoadedConfig | undefined> {
  try {
    return await loadConfig({ file: values.config as string | undefined, overrides })
  } catch (err) {
    /* c8 ignore next -- loadConfig reports every problem as a config error: anything else is a bug and must surface */
    if (!isConfigError(err)) throw err
    for (const problem of err.problems) console.error(problem)
    return undefined
  }
}

function print (text: string): number {
  console.log(text)
  return 0
}

function usageError (message: string, usage: string): number {
  console.error(`fastify-a2a: ${message}\n\n${usage}`)
  return 2
}

// dist/cli.js sits one level below package.json, in the repository and once installed.
function version (): string {
  return JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version
}

// Exit codes go through process.exitCode, so that nothing written to stdout or stderr is cut off.
main(process.argv.slice(2)).then(code => {
  process.exitCode = code
}, err => {
  console.error('fastify-a2a:', err)
  process.exitCode = 1
})
