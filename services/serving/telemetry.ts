// OpenTelemetry's Node SDK, started by the standalone server when `telemetry.enabled` (CONTRACT.md §14, docs/operations.md,
// "Traces"). The packages are optional dependencies, loaded here only then: a default server never loads them, and an
// app that embeds the plugin starts its own SDK, which receives the spans services/kernel/tracing.ts makes. (The
// OpenTelemetry API itself is not imported here: tracing.ts stays its only importer.)
import type { FastifyOtelInstrumentation } from '@fastify/otel'
import type { NodeSDK } from '@opentelemetry/sdk-node'
import type { A2AConfig } from '../../schemas/config.js'
import { VERSION } from '../kernel/version.js'
import { within } from '../kernel/within.js'

/** The running SDK, as the server uses it. */
export interface Telemetry {
  /**
   * `@fastify/otel`'s plugin, registered on the app before any route: each request gets a span (`request`, kind
   * SERVER), the parent of the operation's `a2a <method>` span.
   */
  readonly plugin: ReturnType<FastifyOtelInstrumentation['plugin']>
  /**
   * Exports the spans still buffered and stops the SDK: false when that takes longer than `ms` (it is left running);
   * rejects when the exporter failed (the collector refused the spans).
   */
  shutdown (ms: number): Promise<boolean>
}

/** The `telemetry` section. */
export type TelemetrySettings = A2AConfig['telemetry']

type Env = Record<string, string | undefined>

/** Telemetry is on and a package it needs is not installed. Code `A2A_ERR_TELEMETRY`; the message is the line to print. */
export class TelemetryUnavailable extends Error {
  readonly code = 'A2A_ERR_TELEMETRY'

  constructor (message: string, cause: unknown) {
    super(message, { cause })
    this.name = 'TelemetryUnavailable'
  }
}

/** `service.name` when neither `telemetry.service_name` nor the env `OTEL_SERVICE_NAME` names one. */
export const DEFAULT_SERVICE_NAME = 'fastify-a2a'

/** The packages `telemetry.enabled` needs: optional dependencies of this package. */
const TELEMETRY_PACKAGES = ['@opentelemetry/sdk-node', '@fastify/otel'] as const

/** Imports optional package `name`; a TelemetryUnavailable that says how to install it when it is not there. */
export async function importOptional<T> (name: string): Promise<T> {
  try {
    return await import(name) as T
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw err
    throw new TelemetryUnavailable(`telemetry.enabled needs ${name}, which is not installed (npm install ${TELEMETRY_PACKAGES.join(' ')})`, err)
  }
}

/** Whether the env variable is set to something: OpenTelemetry reads an empty one as unset. */
function isSet (env: Env, name: string): boolean {
  return (env[name] ?? '').trim() !== ''
}

/**
 * The service name that outranks the SDK's resource detectors: `telemetry.service_name`, else `OTEL_SERVICE_NAME`;
 * undefined leaves the name to `OTEL_RESOURCE_ATTRIBUTES`, else DEFAULT_SERVICE_NAME.
 */
export function serviceNameOf (settings: TelemetrySettings, env: Env): string | undefined {
  return settings.service_name ?? (isSet(env, 'OTEL_SERVICE_NAME') ? env.OTEL_SERVICE_NAME : undefined)
}

/**
 * What NodeSDK would export besides spans, turned off unless the env names exporters for it (`OTEL_METRICS_EXPORTER`,
 * `OTEL_LOGS_EXPORTER`): its default sends metrics and logs by OTLP, and the server has `/metrics` and its log already.
 */
export function otherSignals (env: Env): { metricReaders?: [], logRecordProcessors?: [] } {
  return {
    ...(isSet(env, 'OTEL_METRICS_EXPORTER') ? {} : { metricReaders: [] }),
    ...(isSet(env, 'OTEL_LOGS_EXPORTER') ? {} : { logRecordProcessors: [] })
  }
}

/**
 * Starts the Node SDK: the trace exporter, sampler and propagator as the `OTEL_*` variables choose them (NodeSDK reads
 * them when given no exporter: OTLP over http/protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT` by default), and `@fastify/otel`
 * for the HTTP requests; metrics and logs only when asked (`otherSignals`).
 */
export async function startTelemetry (settings: TelemetrySettings): Promise<Telemetry> {
  const sdkNode = await importOptional<typeof import('@opentelemetry/sdk-node')>(TELEMETRY_PACKAGES[0])
  const fastifyOtel = await importOptional<typeof import('@fastify/otel')>(TELEMETRY_PACKAGES[1])
  const { resources } = sdkNode
  // One span per request; the spans of each hook and of the handler would only repeat the operation's span.
  const instrumentation = new fastifyOtel.FastifyOtelInstrumentation({ instrumentHooks: false, instrumentHandler: false })
  const sdk: NodeSDK = new sdkNode.NodeSDK({
    // The detectors (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES among them) are merged over this, then serviceName.
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({
      'service.name': DEFAULT_SERVICE_NAME,
      'service.version': VERSION
    })),
    serviceName: serviceNameOf(settings, process.env),
    instrumentations: [instrumentation],
    ...otherSignals(process.env)
  })
  sdk.start()
  return {
    plugin: instrumentation.plugin(),
    shutdown: ms => within(sdk.shutdown(), ms)
  }
}
