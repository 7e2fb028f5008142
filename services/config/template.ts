import { writeFile } from 'node:fs/promises'
import { stringify } from 'yaml'
import { validateConfig } from './validate.js'

// What `fastify-a2a init` writes. Every key shows its default, taken from the schema so that the two never drift:
// the file validates as is, and running on it is the same as running with no file at all (a test checks both).
const d = validateConfig({})

// One YAML value on one line: `[ a, b ]`, `{}`, quoted only when it must be.
const y = (value: unknown) => stringify(value, { collectionStyle: 'flow', lineWidth: 0 }).trimEnd()

// A mapping of lists as block lines under its key, or `{}` when empty.
const lists = (indent: string, record: Record<string, string[]>) => {
  const entries = Object.entries(record)
  if (entries.length === 0) return ' {}'
  return entries.map(([key, value]) => `\n${indent}${y(key)}: ${y(value)}`).join('')
}

const TEMPLATE = `# fastify-a2a configuration, written by \`fastify-a2a init\`.
# Check it with \`fastify-a2a validate\`, see the agent card with \`fastify-a2a card\`, start with \`fastify-a2a serve\`.
#
# Every key shows its default: delete what you do not change. Unknown keys, wrong types and out-of-range values are
# errors that name the key's full path.
# String values may read the environment: \${VAR}, \${VAR:default} (used when VAR is unset),
# \${VAR:-default} (used when VAR is unset or empty), \${VAR:?message} (VAR is required). $\${ is a literal \${.
# The environment variables HOST, PORT, LOG_LEVEL and REDIS_URL override this file, and the flags
# \`serve --host/--port\` override both.

agent:
  # Shown in the agent card, /health and the status method. Required when the agent section is present.
  name: ${y(d.agent.name)}
  # The card's description.
  description: ${y(d.agent.description)}
  # The agent's own version, in the card.
  version: ${y(d.agent.version)}
  # Public base URL put in the card (http or https). Default: http://<server.host>:<server.port>/
  # url: https://agent.example.com/
  # builtin | echo | openai (see llm below) | a path to a module exporting an AgentExecutor.
  executor: ${y(d.agent.executor)}
  # Built-in agent: milliseconds each task stays in progress (for demos and tests). 0 to 3600000.
  delay_ms: ${y(d.agent.delay_ms)}
  # executor: openai talks to an OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, LM Studio,
  # llama.cpp server). See docs/llm-executor.md. The other executors ignore this section.
  llm:
    # http(s) URL of the API, up to and without /chat/completions (Ollama: http://127.0.0.1:11434/v1).
    base_url: ${y(d.agent.llm.base_url)}
    # Sent as "Authorization: Bearer <key>" when not empty; never logged. Here read from the environment.
    api_key: "\${OPENAI_API_KEY:-}"
    model: ${y(d.agent.llm.model)}
    # Told to the model first; the ask_user convention (docs/llm-executor.md) is added to it.
    system_prompt: ${y(d.agent.llm.system_prompt)}
    # 0 to 2.
    temperature: ${y(d.agent.llm.temperature)}
    # Most tokens the model may write per request.
    max_tokens: ${y(d.agent.llm.max_tokens)}
    # Seconds the model may stay silent: until its answer starts, and between two chunks of its stream.
    timeout: ${y(d.agent.llm.timeout)}
    # Rounds of tool calls (status, capabilities, list_directory) per message; 0 offers no tools.
    max_tool_rounds: ${y(d.agent.llm.max_tool_rounds)}
    # Tokens (estimated as characters / 4) of the earlier exchanges of the same contextId sent along; 0 sends none.
    history_tokens: ${y(d.agent.llm.history_tokens)}
    # Retries of an HTTP 429 or 5xx answer, and seconds before the first one (doubled each time; Retry-After wins).
    max_retries: ${y(d.agent.llm.max_retries)}
    retry_delay: ${y(d.agent.llm.retry_delay)}
  # Skills listed in the card. Empty: the card lists the built-in agent's skill.
  skills: ${y(d.agent.skills)}
  # skills:
  #   - id: echo
  #     name: Echo
  #     description: Repeats the text it is given
  #     tags: [text]
  #     examples: [hello]
  # Extensions the card declares. A required one must be activated by the client (the A2A-Extensions header),
  # else its request is refused.
  extensions: ${y(d.agent.extensions)}
  # extensions:
  #   - uri: https://example.com/ext/citations/v1
  #     description: Answers cite their sources
  #     required: false
  #     params: { style: short }
  # Sign the agent card (JWS, A2A v1.0 section 8.4) with this private key: PEM or JWK text, or a file's path.
  # card_signing:
  #   key: ./card-key.pem
  #   alg: ES256            # ES256 | RS256 | EdDSA
  #   kid: card-2026        # default: the key's thumbprint
  #   jku: https://agent.example.com/.well-known/jwks.json
  # Media types the agent accepts and answers with, when a skill does not say.
  input_modes: ${y(d.agent.input_modes)}
  output_modes: ${y(d.agent.output_modes)}

server:
  # Address and port to listen on (env HOST and PORT, flags --host and --port). Port 0 picks a free port.
  host: ${y(d.server.host)}
  port: ${y(d.server.port)}
  # fatal | error | warn | info | debug | trace | silent (env LOG_LEVEL).
  log_level: ${y(d.server.log_level)}
  # Seconds a non-streaming request may take; streams are not cut.
  request_timeout: ${y(d.server.request_timeout)}
  # Largest request body, in bytes (at least 1024).
  max_request_size: ${y(d.server.max_request_size)}
  # Open SSE streams of this instance, all callers together.
  max_streams: ${y(d.server.max_streams)}
  # Bytes of answers written and not yet taken by their clients, all connections and bindings together; past it
  # answers wait for room. One answer always fits an idle server, however large.
  max_answer_bytes: ${y(d.server.max_answer_bytes)}
  # The same per connection: what a client that does not read can hold (plus one answer of any size).
  max_answer_bytes_per_connection: ${y(d.server.max_answer_bytes_per_connection)}
  # Bytes of requests being received and handled (not yet stored), all connections and bindings together; past it
  # an HTTP request waits briefly, then gets 503 with Retry-After (gRPC: RESOURCE_EXHAUSTED).
  max_request_bytes: ${y(d.server.max_request_bytes)}
  # The same per connection (one request of any size always fits a connection with none in flight).
  max_request_bytes_per_connection: ${y(d.server.max_request_bytes_per_connection)}
  # Seconds a connection may leave what was written to it untaken before it is closed (every binding).
  write_timeout: ${y(d.server.write_timeout)}
  # Seconds between the SSE heartbeat comments that keep a stream open.
  heartbeat_interval: ${y(d.server.heartbeat_interval)}
  # Seconds to let requests and streams finish on SIGTERM.
  shutdown_timeout: ${y(d.server.shutdown_timeout)}
  # Events kept per task so that a stream cut off resumes where it broke (Last-Event-ID): the last max_events
  # (0: none), for ttl seconds once the task has ended.
  stream_replay:
    max_events: ${y(d.server.stream_replay.max_events)}
    ttl: ${y(d.server.stream_replay.ttl)}
  # Behind a load balancer: trust its X-Forwarded-For for the client address (rate limits per IP use it).
  # false | true (any proxy) | a list of the proxies' addresses or CIDRs, e.g. [10.0.0.0/8].
  trust_proxy: ${y(d.server.trust_proxy)}
  # Or the number of proxies in front, trusted by position (1: the address the proxy added); 0 is off.
  proxy_hops: ${y(d.server.proxy_hops)}

protocol:
  # default: the service's own task state names. a2a: A2A v0.3 state names and stream event kinds.
  # Input in either spelling is accepted in both.
  dialect: ${y(d.protocol.dialect)}
  # The agent card's securitySchemes entries: merged (the v0.3 form and the v1.0 one in one object, read by
  # clients of both versions) | v1 (the v1.0 form alone).
  card_security_schemes: ${y(d.protocol.card_security_schemes)}
  # The HTTP+JSON (REST) binding at the prefix root: POST /message:send, GET /tasks/{id}, ...
  rest: ${y(d.protocol.rest)}
  # id: lines on the default dialect's stream frames too (v1.0, REST and the a2a dialect always have them).
  sse_event_ids: ${y(d.protocol.sse_event_ids)}
  # The gRPC binding: both A2A services (lf.a2a.v1.A2AService, a2a.v1.A2AService) and grpc.health.v1 on a port of
  # their own (on server.host; not server.port).
  grpc:
    enabled: ${y(d.protocol.grpc.enabled)}
    port: ${y(d.protocol.grpc.port)}
    # The card's URL for it; empty: <host>:<port>, what the official clients dial. Set it behind a proxy or NAT.
    advertised_url: ${y(d.protocol.grpc.advertised_url)}
    # Open connections on its port; past it new ones are dropped.
    max_connections: ${y(d.protocol.grpc.max_connections)}
    # Seconds a connection has to send its whole HTTP/2 preface before it is closed.
    handshake_timeout: ${y(d.protocol.grpc.handshake_timeout)}
    # Calls open at once on one connection; the client queues the rest.
    max_concurrent_streams: ${y(d.protocol.grpc.max_concurrent_streams)}
    # MiB one connection may buffer; past it its new calls are refused.
    max_session_memory: ${y(d.protocol.grpc.max_session_memory)}
    # Seconds a connection with no call open is kept.
    idle_timeout: ${y(d.protocol.grpc.idle_timeout)}
    # Seconds between pings on a connection; one not acknowledged within keepalive_timeout seconds is closed.
    keepalive_time: ${y(d.protocol.grpc.keepalive_time)}
    keepalive_timeout: ${y(d.protocol.grpc.keepalive_timeout)}
  # The A2A v1.0 tenant the agent is served as: on every card interface, and the v1.0 REST routes also under
  # /<tenant>/. Letters, digits and . _ ~ - (not v1). Unset: none.
  # tenant: acme

security:
  # Off: every caller is anonymous and no scope is checked (a warning is logged at start).
  # On: at least one api key, bearer token or oauth2 section is needed.
  enabled: ${y(d.security.enabled)}
  # api_key | bearer | oauth2: the scheme the card shows first; every section under auth is active.
  auth_type: ${y(d.security.auth_type)}
  auth:
    api_key:
      # The header that carries a key (keys are also accepted as "Authorization: Bearer <key>").
      header: ${y(d.security.auth.api_key.header)}
      keys: []
      # keys:
      #   - key: \${API_KEY}
      #     scopes: [api:read, agent:read]
      #     description: ci
    bearer:
      tokens: []
      # tokens:
      #   - token: \${ADMIN_TOKEN}
      #     user: ops
      #     scopes: [admin]
    # OAuth2 token introspection (RFC 7662); absent by default.
    # oauth2:
    #   validation_strategy: introspection
    #   introspection_endpoint: https://idp.example.com/oauth2/introspect
    #   client_id: \${OAUTH_CLIENT_ID}
    #   client_secret: \${OAUTH_CLIENT_SECRET}
    #   required_scopes: [api:read]
    #   cache_ttl: 60          # seconds a result is cached, never past the token's exp
    #   timeout: 5             # seconds per introspection call
    #   user_claim: sub        # the field that names the caller
    #   principal_prefix: "oauth2:"   # the principal id is this + that name; "" shares names with the static credentials
  # Scopes that grant other scopes, transitively; "*" grants everything.
  scope_hierarchy:${lists('    ', d.security.scope_hierarchy)}
  # scope_hierarchy:
  #   admin: ["*"]
  #   api:write: [api:read]
  #   agent:admin: [agent:read, agent:execute]
  # Scopes a method needs; methods not listed need authentication only.
  method_scopes:${lists('    ', d.security.method_scopes)}
  rate_limit:
    enabled: ${y(d.security.rate_limit.enabled)}
    # Token bucket per authenticated caller.
    requests_per_minute: ${y(d.security.rate_limit.requests_per_minute)}
    burst: ${y(d.security.rate_limit.burst)}
    # Failed authentications per client IP before every credential-bearing request gets 429.
    failed_auth_per_minute: ${y(d.security.rate_limit.failed_auth_per_minute)}
    # Open streams per authenticated caller.
    max_streams_per_principal: ${y(d.security.rate_limit.max_streams_per_principal)}

push_notifications:
  # Off: the tasks/pushNotificationConfig/* methods answer "method not found" and the card says so.
  enabled: ${y(d.push_notifications.enabled)}
  # memory | webhook (the same as memory) | kvcache (Redis: needs a services entry with type: cache)
  # | postgres (services.postgres; required with tasks.backend postgres).
  backend: ${y(d.push_notifications.backend)}
  # Refuse webhook URLs on loopback, private, link-local and localhost addresses, unless allowed_networks covers them.
  validate_urls: ${y(d.push_notifications.validate_urls)}
  # Prefix of the Redis keys of the kvcache backend.
  key_prefix: ${y(d.push_notifications.key_prefix)}
  # postgres backend: seals each config (token and credentials with it) at rest with AES-256-GCM. 32 bytes in base64
  # (openssl rand -base64 32), best read from the environment: "\${A2A_PUSH_KEY}". Empty: stored as JSON.
  encryption_key: ${y(d.push_notifications.encryption_key)}
  # After a rotation: the keys configs were sealed with before, still opened on reads.
  previous_encryption_keys: []
  config:
    # Seconds per delivery attempt (1 to 300).
    timeout: ${y(d.push_notifications.config.timeout)}
    # Retries after the first attempt (0 to 20).
    max_retries: ${y(d.push_notifications.config.max_retries)}
    # Seconds before the first retry, doubled for each one after.
    retry_delay: ${y(d.push_notifications.config.retry_delay)}
    # Webhook host globs, e.g. "*.example.com" (which does not match example.com itself). Empty: any host.
    allowed_domains: ${y(d.push_notifications.config.allowed_domains)}
    # CIDRs allowed despite the private-address rule, e.g. 127.0.0.0/8 for local tests.
    allowed_networks: ${y(d.push_notifications.config.allowed_networks)}
    # Headers added to every delivery.
    default_headers: ${y(d.push_notifications.config.default_headers)}
    # Refuse http:// webhook URLs.
    require_https: ${y(d.push_notifications.config.require_https)}
    # When not empty, deliveries are signed (Standard Webhooks). Here read from the environment, empty if unset.
    signing_secret: "\${A2A_SIGNING_SECRET:-}"
    # Deliveries in flight at once.
    max_in_flight: ${y(d.push_notifications.config.max_in_flight)}

tasks:
  # memory | kvcache (Redis: needs a services entry with type: cache, shared by every instance)
  # | postgres (PostgreSQL: needs services.postgres, shared by every instance; push configs there too).
  backend: ${y(d.tasks.backend)}
  # Memory backend: tasks kept; the least recently updated finished tasks are evicted first.
  max_tasks: ${y(d.tasks.max_tasks)}
  # Memory backend: bytes of tasks kept at most (an estimate of the heap: text by its length, twice that outside
  # Latin-1, about 80 bytes a key; kept stream events count too); finished tasks are evicted first,
  # and with only unfinished ones left a new task or message is refused with 503.
  max_bytes: ${y(d.tasks.max_bytes)}
  # Parts one message may carry, and object keys and array items of all its objects together: more is refused with
  # -32602 (REST 400, gRPC INVALID_ARGUMENT). A key costs the heap about 80 bytes, far more than its text.
  max_parts: ${y(d.tasks.max_parts)}
  max_keys: ${y(d.tasks.max_keys)}
  # Unfinished tasks one principal may hold at once; one more is refused with 429 (-32012).
  max_live_per_principal: ${y(d.tasks.max_live_per_principal)}
  # Seconds a finished task is kept.
  ttl: ${y(d.tasks.ttl)}
  # Seconds an input_required or auth_required task waits for its next message before it is canceled.
  interrupted_ttl: ${y(d.tasks.interrupted_ttl)}
  # Prefix of the Redis keys of the kvcache backend.
  key_prefix: ${y(d.tasks.key_prefix)}
  # kvcache and postgres: seconds an instance's lease on a running task lasts unrenewed (renewed every third of it).
  # When the instance dies, another one fails its running tasks once their leases expire and a grace as long has passed.
  lease_ttl: ${y(d.tasks.lease_ttl)}
  # Seconds a send's messageId stays bound to the task it made, per principal: the same message sent again (a
  # client's retry) gets that task, and the agent does not run twice. 0 turns it off.
  dedupe_window: ${y(d.tasks.dedupe_window)}

# Backing services, by any name. The first entry with type: cache is the Redis of the kvcache backends;
# env REDIS_URL replaces its url (and creates services.cache when there is none). The entry named postgres is the
# PostgreSQL server: \`fastify-a2a migrate\` applies the schema to it.
services: {}
# services:
#   cache:
#     type: cache
#     url: redis://127.0.0.1:6379   # redis:// or rediss://; a path /N picks the db
#     db: 0                         # 0 to 15
#     max_connections: 20
#     retry_on_timeout: true
#   postgres:
#     url: \${DATABASE_URL}         # postgres:// or postgresql://
#     migrate: true                 # apply the schema migrations at start (one instance at a time)
#     pool_size: 10
#     statement_timeout_ms: 5000

tools:
  list_directory:
    # The list_directory tool resolves paths inside this directory only.
    root: ${y(d.tools.list_directory.root)}

metrics:
  # GET /metrics, Prometheus text, never authenticated. Off: the route answers 404 and nothing is measured.
  enabled: ${y(d.metrics.enabled)}

telemetry:
  # fastify-a2a serve: start OpenTelemetry's Node SDK, which exports spans as the OTEL_* env variables say
  # (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318; OTEL_TRACES_EXPORTER=console prints them).
  enabled: ${y(d.telemetry.enabled)}
  # service_name: my-agent     # the service.name of the spans; default: $OTEL_SERVICE_NAME, else fastify-a2a

console:
  # GET /console, the developer console: chat, live task list, a webhook sink for trying push; works offline.
  # auto: on while security is off; true: on with security too (its calls still need credentials); false: off.
  enabled: ${y(d.console.enabled)}
`

/** The commented `agent.yml` written by `fastify-a2a init`. */
export function initTemplate (): string {
  return TEMPLATE
}

/** Writes the template to `file`. Returns false, and writes nothing, when the file exists and `force` is not set. */
export async function writeTemplate (file: string, { force = false }: { force?: boolean } = {}): Promise<boolean> {
  try {
    await writeFile(file, TEMPLATE, { flag: force ? 'w' : 'wx' })
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  }
}
