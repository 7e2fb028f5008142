import { Type, type Static, type TSchema } from '@sinclair/typebox'

// The whole agent.yml (CONTRACT.md §2). Every object is closed (`additionalProperties: false`) so an unknown
// key is an error, and every key has its default here, so the validated config is complete.

const obj = <T extends Record<string, TSchema>>(props: T, def: unknown = {}) =>
  Type.Object(props, { additionalProperties: false, default: def })

const Str = (def: string, opts: object = {}) => Type.String({ default: def, ...opts })
const Int = (def: number, opts: object = {}) => Type.Integer({ default: def, ...opts })
const Bool = (def: boolean) => Type.Boolean({ default: def })
const StrList = (def: string[] = []) => Type.Array(Type.String({ minLength: 1 }), { default: def })

export const LogLevelSchema = Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map(l => Type.Literal(l)))

export const SkillSchema = Type.Object({
  id: Type.String({ minLength: 1 }),
  name: Type.String({ minLength: 1 }),
  description: Type.String({ default: '' }),
  tags: StrList(),
  examples: Type.Optional(Type.Array(Type.String())),
  inputModes: Type.Optional(Type.Array(Type.String())),
  outputModes: Type.Optional(Type.Array(Type.String()))
}, { additionalProperties: false })
export type Skill = Static<typeof SkillSchema>

/** One entry of `agent.extensions`: an A2A extension the card declares (A2A v1.0 §4.6, `AgentExtension`). */
export const ExtensionSchema = Type.Object({
  uri: Type.String({ minLength: 1 }),
  description: Str(''),
  /** Clients must activate it (the `A2A-Extensions` header); a request that does not is refused. */
  required: Bool(false),
  params: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
}, { additionalProperties: false })
export type Extension = Static<typeof ExtensionSchema>

/** The JWS algorithms a card may be signed with (docs/configuration.md, `agent.card_signing`). */
export const CARD_SIGNING_ALGS = ['ES256', 'RS256', 'EdDSA'] as const

/** `agent.card_signing`: the key the agent card is signed with (A2A v1.0 §8.4). Absent: the card is not signed. */
export const CardSigningSchema = Type.Object({
  /** A PEM or JWK private key, as text or the path of a file holding it; `${ENV}` allowed. Never logged. */
  key: Type.String({ minLength: 1 }),
  /** The key id in the signature's header; absent: the key's RFC 7638 thumbprint. */
  kid: Type.Optional(Type.String({ minLength: 1 })),
  alg: Type.Union(CARD_SIGNING_ALGS.map(a => Type.Literal(a)), { default: 'ES256' }),
  /** The URL of the JWK set holding the public key, written in the signature's header when set. */
  jku: Type.Optional(Type.String({ minLength: 1 }))
}, { additionalProperties: false })
export type CardSigning = Static<typeof CardSigningSchema>

/** `agent.llm`: the OpenAI-compatible chat-completions endpoint of `agent.executor: openai` (docs/llm-executor.md). */
export const LlmConfigSchema = obj({
  base_url: Str('https://api.openai.com/v1', { minLength: 1 }),
  /** Sent as `Authorization: Bearer <api_key>` when not empty; never logged. */
  api_key: Str(''),
  model: Str('gpt-4o-mini', { minLength: 1 }),
  system_prompt: Str('You are a helpful assistant.'),
  temperature: Type.Number({ default: 0.2, minimum: 0, maximum: 2 }),
  max_tokens: Int(1024, { minimum: 1 }),
  /** Seconds the model may stay silent: until its answer starts, and between two chunks of its stream. */
  timeout: Type.Number({ default: 60, exclusiveMinimum: 0, maximum: 3600 }),
  max_tool_rounds: Int(5, { minimum: 0, maximum: 100 }),
  /** Token budget (estimated as characters / 4) of the earlier exchanges of the same contextId sent to the model. */
  history_tokens: Int(8000, { minimum: 0 }),
  /** Retries of a 429 or 5xx answer, after the first attempt. */
  max_retries: Int(3, { minimum: 0, maximum: 20 }),
  /** Seconds before the first retry, doubled each retry; a Retry-After of at most 60 s wins. */
  retry_delay: Type.Number({ default: 1, minimum: 0, maximum: 3600 })
})
export type LlmConfig = Static<typeof LlmConfigSchema>

/** `agent.description` when the configuration leaves it out: the built-in agent's. */
export const DEFAULT_AGENT_DESCRIPTION = 'An A2A agent that echoes text and runs the status, capabilities and list_directory tools'

export const AgentConfigSchema = obj({
  name: Type.String({ minLength: 1 }),
  description: Str(DEFAULT_AGENT_DESCRIPTION),
  version: Str('1.0.0', { minLength: 1 }),
  url: Type.Optional(Type.String({ minLength: 1 })),
  executor: Str('builtin', { minLength: 1 }),
  delay_ms: Int(0, { minimum: 0, maximum: 3_600_000 }),
  llm: LlmConfigSchema,
  skills: Type.Array(SkillSchema, { default: [] }),
  extensions: Type.Array(ExtensionSchema, { default: [] }),
  card_signing: Type.Optional(CardSigningSchema),
  input_modes: StrList(['text/plain', 'application/json', 'application/octet-stream']),
  output_modes: StrList(['text/plain', 'application/json'])
}, { name: 'Echo Agent' })

export const ServerConfigSchema = obj({
  host: Str('127.0.0.1', { minLength: 1 }),
  port: Int(8000, { minimum: 0, maximum: 65535 }),
  log_level: Type.Union(LogLevelSchema.anyOf, { default: 'info' }),
  request_timeout: Int(60, { minimum: 1 }),
  max_request_size: Int(16_777_216, { minimum: 1024 }),
  max_streams: Int(1000, { minimum: 1 }),
  /**
   * Bytes of answers written and not yet taken by their clients, all connections and bindings together (HTTP answers
   * and SSE streams, gRPC answers and streams): past it answers wait for room (services/serving/answer-budget.ts). One answer
   * always fits an idle server, however large.
   */
  max_answer_bytes: Int(33_554_432, { minimum: 65_536 }),
  /** The same, per connection: a client that does not read holds at most this much (and one answer of any size). */
  max_answer_bytes_per_connection: Int(4_194_304, { minimum: 65_536 }),
  /**
   * Bytes of requests being received, parsed and handled (not yet handed to the task store, which counts them from
   * then on), all connections and bindings together: past it an HTTP request waits briefly then gets 503, a gRPC call
   * RESOURCE_EXHAUSTED (services/serving/request-budget.ts). One request always fits an idle server.
   */
  // 16 MiB: on the Redis store a 2 MB request in flight cost 15 to 25 times its size in RSS before it was stored (40 of
  // them: 915 MB with 64 MiB here, 531 MB with 16 MiB); one max_request_size request still fits an idle server.
  max_request_bytes: Int(16_777_216, { minimum: 65_536 }),
  /** The same, per connection (an HTTP/1 socket, an HTTP/2 session): one request of any size, then this much. */
  max_request_bytes_per_connection: Int(4_194_304, { minimum: 65_536 }),
  /**
   * Seconds a connection may leave what was written to it untaken (no byte of it moving): past that it is closed,
   * on every binding. A stream's heartbeats do not count as movement.
   */
  write_timeout: Int(30, { minimum: 1 }),
  heartbeat_interval: Type.Number({ default: 15, exclusiveMinimum: 0 }),
  shutdown_timeout: Type.Number({ default: 10, minimum: 0 }),
  /**
   * The events kept per task so that a stream cut off can resume (`Last-Event-ID`, docs/architecture.md, "Resumable streams"): the
   * last `max_events` (0 keeps none: a resume then always resyncs), for `ttl` seconds once the task has ended.
   */
  stream_replay: obj({
    max_events: Int(1000, { minimum: 0, maximum: 100_000 }),
    ttl: Int(300, { minimum: 1 })
  }),
  /**
   * Standalone server: whether to trust X-Forwarded-For from a proxy in front (Fastify's `trustProxy`): false, the
   * proxies' addresses and CIDRs, or true (every address in the header, which lets a client choose its own: only
   * behind a proxy that overwrites the header). The client IP it yields keys the failed-authentication limit.
   */
  trust_proxy: Type.Union([Type.Boolean(), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })], { default: false }),
  /**
   * Standalone server: the number of proxies in front, trusted by position instead (`trust_proxy` must then be
   * false): 1 takes the last X-Forwarded-For address, the one the proxy added, never what the client wrote. 0: off.
   */
  proxy_hops: Int(0, { minimum: 0 })
})

export const ProtocolConfigSchema = obj({
  dialect: Type.Union([Type.Literal('default'), Type.Literal('a2a')], { default: 'default' }),
  /**
   * The card's `securitySchemes` entries (CONTRACT.md §11.5): `merged` writes the v0.3 form and the v1.0 oneof wrapper
   * in one object, which every SDK parser and the v0.3 conformance suite read; `v1` writes the wrapper alone.
   */
  card_security_schemes: Type.Union([Type.Literal('merged'), Type.Literal('v1')], { default: 'merged' }),
  /** The HTTP+JSON (REST) binding at the prefix root (CONTRACT.md §12); false removes its routes and card entries. */
  rest: Bool(true),
  /**
   * `id:` lines on the seed dialect's SSE frames too (CONTRACT.md §2). v1.0, REST and the a2a dialect always carry
   * them; the seed dialect's frames are exactly `data: ...` unless this is on.
   */
  sse_event_ids: Bool(false),
  /**
   * The gRPC binding (CONTRACT.md §13): a `@grpc/grpc-js` server on `port` (on `server.host`), listed in the card at
   * `advertised_url` (empty: `<host>:<port>`, what the official clients dial). Port 0 takes any free port, and then needs `advertised_url`.
   */
  grpc: obj({
    enabled: Bool(false),
    port: Int(50051, { minimum: 0, maximum: 65535 }),
    advertised_url: Str(''),
    /** Open connections on the port; Node drops those past it at once. */
    max_connections: Int(1000, { minimum: 1 }),
    /** Seconds a connection has to send its whole HTTP/2 preface before it is closed (slowloris). */
    handshake_timeout: Int(20, { minimum: 1 }),
    /** Calls open at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); the client queues the rest. */
    max_concurrent_streams: Int(100, { minimum: 1 }),
    /** MiB one connection's HTTP/2 session may buffer (Node's maxSessionMemory): past it, its new calls are refused. */
    max_session_memory: Int(32, { minimum: 1 }),
    /** Seconds a connection with no call open is kept. */
    idle_timeout: Int(300, { minimum: 1 }),
    /** Seconds between the server's pings on a connection; one not acknowledged within `keepalive_timeout` is closed. */
    keepalive_time: Int(60, { minimum: 1 }),
    keepalive_timeout: Int(20, { minimum: 1 })
  }),
  /**
   * The A2A v1.0 tenant this agent is served as (v1.0 `tenant`, CONTRACT.md §12): written on every card interface,
   * the v1.0 REST routes also served under `/<tenant>/`, and a v1.0 request naming another tenant refused. Unset: none.
   * `v1` is taken by the v0.3 REST routes.
   */
  tenant: Type.Optional(Type.String({ pattern: '^(?!v1$)[A-Za-z0-9._~-]{1,64}$' }))
})

export const ApiKeySchema = Type.Object({
  key: Type.String({ minLength: 1 }),
  scopes: StrList(),
  description: Type.Optional(Type.String()),
  id: Type.Optional(Type.String({ minLength: 1 }))
}, { additionalProperties: false })

export const BearerTokenSchema = Type.Object({
  token: Type.String({ minLength: 1 }),
  user: Type.String({ minLength: 1 }),
  scopes: StrList()
}, { additionalProperties: false })

export const OAuth2ConfigSchema = Type.Object({
  validation_strategy: Type.Literal('introspection', { default: 'introspection' }),
  introspection_endpoint: Type.String({ minLength: 1 }),
  client_id: Type.String({ minLength: 1 }),
  client_secret: Type.String({ minLength: 1 }),
  required_scopes: StrList(),
  cache_ttl: Int(60, { minimum: 0 }),
  timeout: Type.Number({ default: 5, exclusiveMinimum: 0 }),
  /** The introspection answer's field that names the caller; never `username` unless configured so. */
  user_claim: Str('sub', { minLength: 1 }),
  /** Put before that name to make the principal id, so IdP names never own static credentials' tasks; "" maps them together. */
  principal_prefix: Str('oauth2:')
}, { additionalProperties: false })

export const SecurityConfigSchema = obj({
  enabled: Bool(false),
  auth_type: Type.Union([Type.Literal('api_key'), Type.Literal('bearer'), Type.Literal('oauth2')], { default: 'api_key' }),
  auth: obj({
    api_key: obj({
      header: Str('X-API-Key', { minLength: 1 }),
      keys: Type.Array(ApiKeySchema, { default: [] })
    }),
    bearer: obj({
      tokens: Type.Array(BearerTokenSchema, { default: [] })
    }),
    oauth2: Type.Optional(OAuth2ConfigSchema)
  }),
  scope_hierarchy: Type.Record(Type.String({ minLength: 1 }), StrList(), { default: {} }),
  method_scopes: Type.Record(Type.String({ minLength: 1 }), StrList(), {
    default: { capabilities: ['agent:read'], list_directory: ['files:read'] }
  }),
  rate_limit: obj({
    enabled: Bool(true),
    requests_per_minute: Int(120, { minimum: 1 }),
    burst: Int(120, { minimum: 1 }),
    failed_auth_per_minute: Int(30, { minimum: 1 }),
    max_streams_per_principal: Int(10, { minimum: 1 })
  })
})

export const PushConfigSettingsSchema = obj({
  enabled: Bool(true),
  backend: Type.Union([Type.Literal('memory'), Type.Literal('webhook'), Type.Literal('kvcache'), Type.Literal('postgres')], { default: 'memory' }),
  validate_urls: Bool(true),
  key_prefix: Str('a2a:push:'),
  /** postgres: 32 bytes in base64 that seal each config at rest (AES-256-GCM); empty: stored as JSON. */
  encryption_key: Str(''),
  /** postgres: keys configs were sealed with before `encryption_key` was rotated, still opened on reads. */
  previous_encryption_keys: StrList(),
  config: obj({
    timeout: Int(10, { minimum: 1, maximum: 300 }),
    max_retries: Int(3, { minimum: 0, maximum: 20 }),
    retry_delay: Type.Number({ default: 1.0, minimum: 0, maximum: 3600 }),
    allowed_domains: StrList(),
    allowed_networks: StrList(),
    default_headers: Type.Record(Type.String({ minLength: 1 }), Type.String(), { default: {} }),
    require_https: Bool(false),
    signing_secret: Str(''),
    max_in_flight: Int(64, { minimum: 1 })
  })
})

export const TasksConfigSchema = obj({
  /** memory; kvcache (Redis, the first `type: cache` service); postgres (`services.postgres`, docs/stores.md). */
  backend: Type.Union([Type.Literal('memory'), Type.Literal('kvcache'), Type.Literal('postgres')], { default: 'memory' }),
  max_tasks: Int(10_000, { minimum: 1 }),
  /** memory: bytes of tasks held at most (an estimate); least recently updated terminal tasks are evicted first. */
  max_bytes: Int(268_435_456, { minimum: 65_536 }),
  /** Parts one message may carry; more is -32602. */
  max_parts: Int(1000, { minimum: 1 }),
  /** Object keys and array items of one message, all its objects together; more is -32602 (docs/configuration.md, `tasks.max_keys`). */
  max_keys: Int(10_000, { minimum: 16 }),
  /** Unfinished tasks one principal may hold; past it, -32012 with HTTP 429. */
  max_live_per_principal: Int(1000, { minimum: 1 }),
  ttl: Int(86_400, { minimum: 1 }),
  /** Seconds an input_required or auth_required task waits for its next message before it is canceled. */
  interrupted_ttl: Type.Number({ default: 86_400, minimum: 0.1 }),
  key_prefix: Str('a2a:task:'),
  /** kvcache: seconds an instance's hold on a running task lasts unrenewed; past it, another instance fails the task. */
  lease_ttl: Type.Number({ default: 30, minimum: 0.2, maximum: 3600 }),
  /** Seconds a principal's `messageId` names the task its send made: a send again gets that task; 0 turns it off. */
  dedupe_window: Int(600, { minimum: 0, maximum: 86_400 })
})

export const CacheServiceSchema = Type.Object({
  type: Type.Literal('cache'),
  url: Str('redis://127.0.0.1:6379', { minLength: 1 }),
  db: Int(0, { minimum: 0, maximum: 15 }),
  max_connections: Int(20, { minimum: 1 }),
  retry_on_timeout: Bool(true)
}, { additionalProperties: false })
export type CacheService = Static<typeof CacheServiceSchema>

/**
 * `services.postgres`: the PostgreSQL server of the `postgres` backends (docs/stores.md). The entry is found by its
 * name; `type` may be left out.
 */
export const PostgresServiceSchema = Type.Object({
  type: Type.Literal('postgres', { default: 'postgres' }),
  url: Type.String({ minLength: 1 }),
  /** Apply the shipped migrations at start, under an advisory lock (one instance migrates, the others wait). */
  migrate: Bool(true),
  pool_size: Int(10, { minimum: 1, maximum: 1000 }),
  /** Every statement is cut off past this (PostgreSQL's statement_timeout). */
  statement_timeout_ms: Int(5000, { minimum: 1 })
}, { additionalProperties: false })
export type PostgresService = Static<typeof PostgresServiceSchema>

/**
 * `services`: named Redis entries (`type: cache`), and the PostgreSQL one under the name `postgres`. (The static type
 * says what any entry may be; `redisService` and `postgresService` pick them.)
 */
const ServicesSchema = Type.Unsafe<Record<string, CacheService | PostgresService>>(Type.Object({
  postgres: Type.Optional(PostgresServiceSchema)
}, { additionalProperties: CacheServiceSchema, default: {} }))

/** `tools.list_directory.root` when the configuration leaves it out: created at start when missing. */
export const DEFAULT_ROOT = './workspace'

export const ConfigSchema = Type.Object({
  agent: AgentConfigSchema,
  server: ServerConfigSchema,
  protocol: ProtocolConfigSchema,
  security: SecurityConfigSchema,
  push_notifications: PushConfigSettingsSchema,
  tasks: TasksConfigSchema,
  services: ServicesSchema,
  tools: obj({
    list_directory: obj({
      root: Str(DEFAULT_ROOT, { minLength: 1 })
    })
  }),
  metrics: obj({ enabled: Bool(false) }),
  /**
   * Standalone server: OpenTelemetry's Node SDK, exporting spans as the `OTEL_*` environment variables say
   * (docs/operations.md, "Traces"). `service_name` names the service in the spans' resource; without it, the env
   * `OTEL_SERVICE_NAME`, else `fastify-a2a`. Embedded, the host's SDK (if any) receives the spans and this is ignored.
   */
  telemetry: obj({
    enabled: Bool(false),
    service_name: Type.Optional(Type.String({ minLength: 1 }))
  }),
  console: obj({
    enabled: Type.Union([Type.Literal('auto'), Type.Boolean()], { default: 'auto' })
  })
}, { additionalProperties: false })

/** A complete, validated configuration: every default filled in. */
export type A2AConfig = Static<typeof ConfigSchema>

type DeepPartial<T> = T extends Array<infer U>
  ? Array<DeepPartial<U>>
  : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T

/** What a user may write: any part of the configuration; the rest takes its default. */
export type A2AConfigInput = DeepPartial<A2AConfig>
