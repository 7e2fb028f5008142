// The spans in what an OpenTelemetry exporter posted to a receiver (test/helper.ts's `receiver`) at `/v1/traces`, with
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json: OTLP's JSON encoding, ids in hex.
import type { Received } from './helper.js'

/** One exported span, with what its resource and instrumentation scope say. */
export interface ExportedSpan {
  /** The resource's `service.name` and `service.version`. */
  service?: string
  serviceVersion?: string
  /** The instrumentation scope: `fastify-a2a` for ours, `@fastify/otel` for the request's. */
  scope: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  traceId: string
  spanId: string
  /** Empty or absent for a root span. */
  parentSpanId?: string
  /** The span's attributes of type string or integer. */
  attributes: Record<string, string | number | undefined>
}

interface KeyValue { key: string, value: { stringValue?: string, intValue?: number | string } }
interface TracesBody {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] }
    scopeSpans?: Array<{ scope?: { name?: string }, spans?: Array<Omit<ExportedSpan, 'service' | 'serviceVersion' | 'scope' | 'attributes'> & { attributes?: KeyValue[] }> }>
  }>
}

/** Every span posted to `/v1/traces` so far, in the order received. */
export function spansOf (received: readonly Received[]): ExportedSpan[] {
  const out: ExportedSpan[] = []
  for (const { path, body } of received) {
    if (path !== '/v1/traces') continue
    for (const { resource, scopeSpans = [] } of (body as TracesBody).resourceSpans ?? []) {
      const attribute = (key: string) => resource?.attributes?.find(a => a.key === key)?.value.stringValue
      for (const { scope, spans = [] } of scopeSpans) {
        for (const span of spans) {
          out.push({
            service: attribute('service.name'),
            serviceVersion: attribute('service.version'),
            scope: scope?.name ?? '',
            name: span.name,
            kind: span.kind,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId,
            attributes: Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, value.stringValue ?? value.intValue]))
          })
        }
      }
    }
  }
  return out
}

/** The OTLP/HTTP answer of a collector that took everything: 200 with an empty JSON object. */
export const ACCEPTED = async () => ({ status: 200, body: '{}', headers: { 'content-type': 'application/json' } })
