// "The SDK and a no-op exporter", for the bench's `send-otel` load: loaded into our server with `node --import`, it
// registers OpenTelemetry's Node SDK before the server starts, so that every span services/kernel/tracing.js makes
// records. The processor is the one a user runs (and `telemetry.enabled` starts): BatchSpanProcessor, with its defaults
// and the `OTEL_BSP_*` variables; the exporter answers success at once, so what is measured is making, recording and
// batching the spans, not sending them. No HTTP instrumentation: the spans are ours only.
// `A2A_BENCH_SPANS` names a file where the process writes, when it exits, how many spans ended: the bench checks that
// the spans were made, so that a registration that silently failed cannot pass for tracing that costs nothing.
import { writeFileSync } from 'node:fs'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'

/** `ExportResultCode.SUCCESS` of @opentelemetry/core. */
const SUCCESS = 0

let ended = 0

class CountingBatchSpanProcessor extends BatchSpanProcessor {
  onEnd (span) {
    ended++
    super.onEnd(span)
  }
}

const exporter = {
  export (spans, resultCallback) { resultCallback({ code: SUCCESS }) },
  shutdown: async () => {},
  forceFlush: async () => {}
}

// register(): the global tracer provider, the AsyncLocalStorage context manager and the W3C propagators.
new NodeTracerProvider({ spanProcessors: [new CountingBatchSpanProcessor(exporter)] }).register()

const spansFile = process.env.A2A_BENCH_SPANS
if (spansFile !== undefined && spansFile !== '') process.on('exit', () => writeFileSync(spansFile, `${ended}\n`))
