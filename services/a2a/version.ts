import { JsonRpcError, RpcCode } from '../kernel/errors.js'

/** The A2A protocol versions this server speaks (CONTRACT.md §11.1), as Major.Minor. */
export const SUPPORTED_VERSIONS: readonly string[] = ['0.3', '1.0']

/** The query parameter a client may send instead of the header (A2A v1.0 §3.6.1). */
export const VERSION_PARAM = 'A2A-Version'

const VERSION = /^(\d{1,9})(?:\.(\d{1,9}))?(?:\.\d{1,9})?$/

/**
 * An `A2A-Version` value reduced to Major.Minor (`1` → `1.0`, `1.0.1` → `1.0`, `0.3.0` → `0.3`); undefined when it
 * is absent or empty (the method name then decides), null when it does not parse.
 */
export function majorMinor (value: unknown): string | null | undefined {
  if (value === undefined || value === '') return undefined
  if (typeof value !== 'string') return null
  const m = VERSION.exec(value.trim())
  if (m === null) return null
  return `${Number(m[1])}.${Number(m[2] ?? 0)}`
}

/**
 * The VersionNotSupportedError (-32009, HTTP 200) for a request whose `A2A-Version` (header, else query parameter)
 * names no version this server speaks; undefined when it names one, or none. A supported version other than the
 * method's is served by the method name (CONTRACT.md §11.1). `data` is the v0.3 form: a string.
 */
export function versionRefusal (header: unknown, query: unknown): JsonRpcError | undefined {
  const raw = header === undefined || header === '' ? (query as Record<string, unknown> | undefined)?.[VERSION_PARAM] : header
  const version = majorMinor(raw)
  if (version === undefined || (version !== null && SUPPORTED_VERSIONS.includes(version))) return undefined
  const shown = typeof raw === 'string' ? JSON.stringify(raw.slice(0, 64)) : 'that was sent'
  return new JsonRpcError(RpcCode.versionNotSupported, 'Version not supported',
    `A2A-Version ${shown} is not supported; supported: ${SUPPORTED_VERSIONS.join(', ')}`)
}

/** The v1.0 JSON-RPC method names (CONTRACT.md §11.1): every other name is v0.3. */
export const V10_METHODS: ReadonlySet<string> = new Set([
  'SendMessage', 'SendStreamingMessage', 'GetTask', 'ListTasks', 'CancelTask', 'SubscribeToTask',
  'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig', 'GetExtendedAgentCard'
])

export function isV10Method (name: string): boolean {
  return V10_METHODS.has(name)
}
