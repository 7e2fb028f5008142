import closeWithGrace from 'close-with-grace'
import Fastify, {
  LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions
} from 'fastify'
import { stdSerializers, type Logger as PinoLogger, type SerializedError } from 'pino'
import a2a from './index.js'
import { restFallbacks } from './routes/rest-fallback.js'
import { hostPort, listenFailure } from './services/serving/listen-failure.js'
import type { Telemetry } from './services/serving/telemetry.js'
import type { A2AConfig } from './schemas/config.js'
import type { AgentExecutor } from './services/agent/executor.js'
import { LazyChildLogger } from './services/kernel/lazy-logger.js'
import { logFormatOf, prettyStream, type LogFormat } from './services/kernel/logger.js'
import { traceLogFields } from './services/kernel/tracing.js'
import { isConnectionError } from './services/redis/outage.js'

export interface ServerOptions {
  /** The config file the configuration came from, for the start-up log line. */
  configPath?: string
  /** The agent, instead of `agent.executor`. */
  executor?: AgentExecutor
  /** Where logs go (tests). Default stdout. */
  logStream?: NodeJS.WritableStream
  /**
   * `json` (the default): pino's JSON lines, two per request. `pretty`: readable lines, one per request. `auto`:
   * `pretty` when stdout is a terminal outside CI and no `logStream` is given (the CLI's default), else `json`.
   */
  logFormat?: LogFormat
  /** The OpenTelemetry SDK `startServer` started (`telemetry.enabled`): its HTTP instrumentation is registered first. */
  telemetry?: Telemetry
}

/** Log paths that can carry secrets: censored even though we never log them on purpose (CONTRACT.md §9). */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  '*.token',
  '*.credentials',
  '*.client_secret',
  '*.api_key',
  '*.password'
]

/** Fastify's own bound on starting a plugin, and on each close hook. */
const DEFAULT_PLUGIN_TIMEOUT_MS = 10_000
/** Past `shutdown_timeout`, a close that still hangs is cut short this much later, with exit code 1. */
const FORCE_EXIT_MARGIN_MS = 5_000
/** Request headers must arrive within this, or `server.request_timeout` when that is shorter. */
const MAX_HEADERS_TIMEOUT_S = 10
const CONNECTIONS_CHECK_MS = 1_000
const IDLE_MARGIN_S = 5
/** Longer than the idle timeouts of the usual load balancers (60 s), so they close first. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000
/** How long the OpenTelemetry SDK may take to export its last spans once the app has closed; within FORCE_EXIT_MARGIN_MS. */
const TELEMETRY_FLUSH_TIMEOUT_MS = 3_000

/**
 * Pino's error serializer, less the stack of an error that only says Redis cannot be reached: ioredis' socket
 * callbacks, or the store call that gave up, tell nothing more, and the outage is reported on its own
 * (services/redis/outage.ts).
 */
function serializeError (err: Error): SerializedError {
  const serialized = stdSerializers.err(err)
  if (isConnectionError(err) || (err as { code?: unknown }).code === 'A2A_ERR_STORAGE_UNAVAILABLE') {
    delete (serialized as Partial<SerializedError>).stack
  }
  return serialized
}

/** One line per answered request (pretty format): Fastify's `request completed`, with the request's method and url. */
class OneLinePerRequest extends LogController {
  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { req: request, res: reply, responseTime: reply.elapsedTime }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}

/**
 * `server.trust_proxy`, or `server.proxy_hops`, as Fastify's `trustProxy`. A hop count trusts that many addresses
 * from the socket's end of X-Forwarded-For (1: the address the proxy in front added, never what the client wrote
 * before it); Fastify itself trusts nothing for a number, so it is given as a function.
 */
function trustProxy (server: A2AConfig['server']): boolean | string[] | ((address: string, hop: number) => boolean) {
  const hops = server.proxy_hops
  if (hops === 0) return server.trust_proxy
  return (_address, hop) => hop < hops
}

/** The standalone server: logger with redaction, timeouts and body limit from the config, the agent at `/`. */
export async function createServer (config: A2AConfig, opts: ServerOptions = {}): Promise<FastifyInstance> {
  // What Fastify answers before any route runs gets the HTTP+JSON binding's error body on its paths (CONTRACT.md §12).
  const fallbacks = config.protocol.rest ? restFallbacks() : undefined
  const format = logFormatOf(opts.logFormat ?? 'json', { isTTY: opts.logStream === undefined && process.stdout.isTTY, env: process.env })
  const stream = format === 'pretty' ? await prettyStream(opts.logStream) : opts.logStream
  const logger: FastifyServerOptions['logger'] = {
    level: config.server.log_level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError },
    // Lines logged inside a traced operation name its trace and span (docs/operations.md, "Traces").
    mixin: traceLogFields
  }
  const app = Fastify({
    logger: stream === undefined ? logger : { ...logger, stream },
    logController: format === 'pretty' ? new OneLinePerRequest() : undefined,
    bodyLimit: config.server.max_request_size,
    // The time to receive a whole request; a response (an SSE stream included) is not cut by it.
    requestTimeout: config.server.request_timeout * 1000,
    http: {
      // Slowloris: a client that trickles its headers is cut off once they take longer than this.
      headersTimeout: Math.min(MAX_HEADERS_TIMEOUT_S, config.server.request_timeout) * 1000,
      // How often Node looks for requests past those two timeouts (its default, 30 s, lets them linger).
      connectionsCheckingInterval: CONNECTIONS_CHECK_MS
    },
    // An idle socket is closed: longer than a blocking send may wait, and than the gap between SSE keep-alives.
    connectionTimeout: (Math.max(config.server.request_timeout, config.server.heartbeat_interval) + IDLE_MARGIN_S) * 1000,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    trustProxy: trustProxy(config.server),
    // A path parameter of the HTTP+JSON routes (a task or push config id) may be as long as an id may (256),
    // percent-encoded; Fastify's default (100) would answer longer ones 414.
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: fallbacks?.frameworkErrors,
    return503OnClosing: true,
    // Each close hook may take the whole drain (server.shutdown_timeout), and a start as long as Fastify's default.
    pluginTimeout: Math.max(DEFAULT_PLUGIN_TIMEOUT_MS, config.server.shutdown_timeout * 1000 + FORCE_EXIT_MARGIN_MS),
    forceCloseConnections: 'idle',
    // The request logger is made when a request first logs at an enabled level; a route's own level or serializers
    // need a real child at once.
    childLoggerFactory (logger, bindings, options) {
      if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options)
      return new LazyChildLogger(logger as unknown as PinoLogger, bindings) as unknown as FastifyBaseLogger
    }
  })

  // Before any route: @fastify/otel wraps the routes as they are added (docs/operations.md, "Traces").
  if (opts.telemetry !== undefined) await app.register(opts.telemetry.plugin)

  // Host-level handler of the standalone server: client errors pass through, server errors are masked.
  app.setErrorHandler(async function (err: FastifyError, request, reply) {
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 ? err.statusCode : 500
    if (status >= 500) {
      request.log.error({ err }, 'request failed')
      return reply.code(status).send({ statusCode: status, error: 'Internal Server Error', message: 'Internal Server Error' })
    }
    return reply.code(status).send({ statusCode: status, code: err.code, error: err.name, message: err.message })
  })

  if (fallbacks !== undefined) app.setNotFoundHandler(fallbacks.notFound)
  await app.register(a2a, { prefix: '/', config, executor: opts.executor })
  if (!config.security.enabled) {
    app.log.warn('security is off: every caller is anonymous and may call every method')
  }
  return app
}

/**
 * Creates the server, listens, and handles SIGINT/SIGTERM: drain, close the stores, exit 0 (CONTRACT.md §6). A
 * start that cannot listen (the HTTP port or the gRPC port taken, say) throws a ListenFailure, whose message is the
 * one line to print, and closes everything it opened (Redis clients, the queue worker, the reaper, the outbox relay,
 * the gRPC server); a close still running `shutdown_timeout` + 5 s later ends the process with exit code 1.
 */
export async function startServer (config: A2AConfig, opts: ServerOptions = {}): Promise<FastifyInstance> {
  // The SDK starts before the app is made, so that the app's requests are traced from the first; its packages are
  // loaded only then.
  const telemetry = config.telemetry.enabled
    ? await (await import('./services/serving/telemetry.js')).startTelemetry(config.telemetry)
    : undefined
  const app = await createServer(config, { ...opts, telemetry })
  // After the app: the spans of the last requests are exported before the process ends.
  const flushTelemetry = async (): Promise<void> => {
    if (telemetry === undefined) return
    try {
      if (!await telemetry.shutdown(TELEMETRY_FLUSH_TIMEOUT_MS)) {
        app.log.warn({ timeoutMs: TELEMETRY_FLUSH_TIMEOUT_MS }, 'telemetry: the last spans were not exported in time')
      }
    } catch (err) {
      app.log.warn({ err }, 'telemetry: the last spans could not be exported')
    }
  }
  const closeBudgetMs = config.server.shutdown_timeout * 1000 + FORCE_EXIT_MARGIN_MS
  const grace = closeWithGrace({ delay: closeBudgetMs }, async ({ signal, err }) => {
    /* c8 ignore next -- an uncaught exception: the process shuts down, which a test cannot survive to check */
    if (err !== undefined) app.log.error({ err }, 'shutting down after an error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
    await flushTelemetry()
  })
  let address: string
  try {
    address = await app.listen({ host: config.server.host, port: config.server.port })
  } catch (err) {
    // close-with-grace would exit 0 once the loop empties (its `beforeExit`): the caller chooses the exit code.
    grace.uninstall()
    // The failure is thrown at once, to be printed, while everything closes; the process then ends as the loop
    // empties. A close that hangs (Redis not answering, say) is cut short as a shutdown's is: exit code 1.
    const force = setTimeout(() => {
      app.log.error({ timeoutMs: closeBudgetMs }, 'close after a failed start did not finish: exiting')
      process.exit(1)
    }, closeBudgetMs).unref()
    app.close().then(flushTelemetry).then(() => clearTimeout(force),
      /* c8 ignore next -- our close hooks log their failures and go on: Fastify's close does not reject */
      (closeErr: unknown) => app.log.error({ err: closeErr }, 'close after a failed start failed'))
    throw listenFailure(err, { address: hostPort(config.server.host, config.server.port), portHint: 'set server.port or PORT' })
  }
  app.log.info({ address, agent: config.agent.name, config: opts.configPath ?? 'built-in defaults' }, 'agent serving')
  return app
}
