import { SpanKind, SpanStatusCode, context, propagation, trace, type Attributes, type Span } from '@opentelemetry/api'
import { isThenable } from './maybe-promise.js'
import { VERSION } from './version.js'

// Traces through the OpenTelemetry API (docs/architecture.md, "Tracing: the design"). The spans go to the SDK the
// process registered: the standalone server's own when `telemetry.enabled`, a host app's when embedded. With none
// registered, the API hands out spans that record nothing, and `isRecording()` keeps the attributes from being made.
// Nothing else in the package imports `@opentelemetry/api`.

export type { Attributes, Span } from '@opentelemetry/api'

const tracer = trace.getTracer('fastify-a2a', VERSION)

/**
 * The W3C trace context (`traceparent`, and `tracestate` when there is one) of a span, as kept with work done later
 * or elsewhere: a queued webhook delivery, a cancel's abort request to another instance.
 */
export type TraceCarrier = Record<string, string>

/** What a failure leaves on its span: the A2A error code when it has one (a JsonRpcError's `code`). */
interface Failure {
  readonly code?: unknown
  readonly message?: unknown
}

/**
 * Runs `fn` inside a new span named `name`, active for what `fn` calls (its own spans and an executor's outbound calls
 * become its children), and ends the span when `fn`'s result settles: OK, or ERROR with `a2a.error.code`. `attributes`
 * is called only when the span records; `done` adds what the result says (task ids) before the span ends. `carrier`:
 * the request's headers or gRPC metadata, whose trace context (W3C `traceparent`, through the propagator the process
 * registered) is the span's parent, else the active span is.
 */
export function traced<T> (name: string, attributes: () => Attributes, fn: () => T, done?: (span: Span, result: Awaited<T>) => void, carrier?: object): T {
  const parent = carrier === undefined ? context.active() : propagation.extract(context.active(), carrier)
  const span = tracer.startSpan(name, undefined, parent)
  if (!span.isRecording()) return fn()
  span.setAttributes(attributes())
  let result: T
  try {
    result = context.with(trace.setSpan(parent, span), fn)
  } catch (err) {
    fail(span, err)
    throw err
  }
  if (!isThenable(result)) {
    succeed(span, result as Awaited<T>, done)
    return result
  }
  return (result as unknown as Promise<Awaited<T>>).then(value => {
    succeed(span, value, done)
    return value
  }, (err: unknown) => {
    fail(span, err)
    throw err
  }) as T
}

/**
 * A CLIENT span named `name` around an outbound request read as a stream: it starts with the first read, each read
 * runs with it active (the request's own spans, an HTTP instrumentation's, are its children), and it ends when the
 * stream returns (`done` adds what the result says), throws (ERROR, as `traced`), or is left by its reader at a
 * `yield` (`return()`, `throw()`: the stream is returned too). `attributes` is called only when the span records;
 * with nothing recording, the stream is `stream()` itself.
 */
export async function * tracedStream<Y, R> (name: string, attributes: () => Attributes, stream: () => AsyncGenerator<Y, R>,
  done?: (span: Span, result: R) => void): AsyncGenerator<Y, R> {
  const parent = context.active()
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT }, parent)
  if (!span.isRecording()) return yield * stream()
  span.setAttributes(attributes())
  const active = trace.setSpan(parent, span)
  const inner = context.with(active, stream)
  let settled = false
  const read = (): Promise<IteratorResult<Y, R>> => context.with(active, () => inner.next()).catch((err: unknown) => {
    settled = true
    fail(span, err)
    throw err
  })
  try {
    let next = await read()
    while (next.done !== true) {
      yield next.value
      next = await read()
    }
    settled = true
    succeed(span, next.value, done)
    return next.value
  } finally {
    // Left at a `yield` by its reader: the stream it wraps is returned (its request ended), then the span ends.
    if (!settled) await context.with(active, () => inner.return(undefined as never)).finally(() => span.end())
  }
}

/** The span active here, when it records (with no SDK registered, none does). */
function recordingSpan (): Span | undefined {
  const span = trace.getActiveSpan()
  return span?.isRecording() === true ? span : undefined
}

/** True when the span active here records: what only a trace needs (a longer request, a count) is worth asking then. */
export function activeSpanRecords (): boolean {
  return recordingSpan() !== undefined
}

/** Sets attributes on the span active here, when one records; `attributes` is called only then. */
export function activeSpanAttributes (attributes: () => Attributes): void {
  recordingSpan()?.setAttributes(attributes())
}

/**
 * A span for what outlasts the call that starts it (a task's stream): a child of the span active here, not made
 * active, ended by its owner. Undefined when it would not record: the owner then keeps nothing.
 */
export function openSpan (name: string, attributes: () => Attributes): Span | undefined {
  const span = tracer.startSpan(name)
  if (!span.isRecording()) return undefined
  span.setAttributes(attributes())
  return span
}

/**
 * Adds event `name` to the span active here, when one records (a task's change of state); `attributes` is called only
 * then.
 */
export function spanEvent (name: string, attributes: () => Attributes): void {
  recordingSpan()?.addEvent(name, attributes())
}

/**
 * The trace context active here, to be kept with work that runs later or in another instance (which makes its span
 * with it as `traced`'s `carrier`); undefined when no span records, so that nothing is kept for nothing.
 */
export function traceCarrier (): TraceCarrier | undefined {
  if (recordingSpan() === undefined) return undefined
  const carrier: TraceCarrier = {}
  propagation.inject(context.active(), carrier)
  return carrier
}

/** Writes the active trace context into outgoing `headers` (a webhook request's), when a span records. */
export function injectTrace (headers: Record<string, string>): void {
  if (recordingSpan() !== undefined) propagation.inject(context.active(), headers)
}

/** Marks `span` failed where nothing was thrown (a webhook that answered 500): status ERROR, and `error.type`. */
export function spanFailed (span: Span, type: string, message: string): void {
  span.setAttribute('error.type', type)
  span.setStatus({ code: SpanStatusCode.ERROR, message })
}

/**
 * The ids of the span active where a line is logged, `trace_id` and `span_id`, as pino's `mixin` takes them: the
 * standalone server's logger has it, and an embedding app can give it to its own (`Fastify({ logger: { mixin:
 * traceLogFields } })`). Nothing outside a span that records. A new object each time: pino writes the line's other
 * fields into it.
 */
export function traceLogFields (): Record<string, string> {
  const span = recordingSpan()
  if (span === undefined) return {}
  const { traceId, spanId } = span.spanContext()
  return { trace_id: traceId, span_id: spanId }
}

function succeed<T> (span: Span, result: T, done?: (span: Span, result: T) => void): void {
  done?.(span, result)
  span.end()
}

function fail (span: Span, err: unknown): void {
  // (Object(): whatever was thrown, undefined included, reads as an object.)
  const { code, message } = Object(err) as Failure
  if (typeof code === 'number' || typeof code === 'string') span.setAttribute('a2a.error.code', code)
  span.setStatus({ code: SpanStatusCode.ERROR, message: typeof message === 'string' ? message : undefined })
  span.end()
}
