import type { FastifyPluginAsync } from 'fastify'
import type { A2AConfig } from '../schemas/config.js'
import { SUPPORTED_VERSIONS } from '../services/a2a/version.js'
import { consoleEnabled } from '../services/console/sinks.js'

export interface RootRoutesOptions {
  config: A2AConfig
  /** The plugin prefix without its trailing slash (`''` standalone), for the links. */
  base: string
}

/** What `GET /` answers: who this is, and where to go next. */
export interface RootInfo {
  name: string
  description: string
  version: string
  a2aVersions: string[]
  /** Where JSON-RPC 2.0 requests go, as `POST <path>`. */
  jsonRpc: string
  /** The routes a person or a client looks for first, by name; those that are off are left out. */
  links: Record<string, string>
  docs: string
}

/** The package has no web site yet: its documentation ships with it. */
const DOCS = 'README.md and the docs/ folder of the fastify-a2a package'

/** What each link is, on the page. */
const LINK_TITLES: Record<string, string> = {
  card: 'Agent card',
  console: 'Developer console',
  health: 'Health',
  ready: 'Readiness',
  metrics: 'Metrics (Prometheus)',
  openrpc: 'OpenRPC document (JSON-RPC methods)',
  openapi: 'OpenAPI document (HTTP+JSON routes)'
}

/** The page may load nothing and run nothing: it is text and links to this origin. */
const PAGE_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const RootSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    description: { type: 'string' },
    version: { type: 'string' },
    a2aVersions: { type: 'array', items: { type: 'string' } },
    jsonRpc: { type: 'string' },
    links: { type: 'object', additionalProperties: { type: 'string' } },
    docs: { type: 'string' }
  }
}

export function rootInfo (config: A2AConfig, base: string): RootInfo {
  const links: Record<string, string> = { card: `${base}/.well-known/agent-card.json` }
  if (consoleEnabled(config)) links.console = `${base}/console`
  links.health = `${base}/health`
  links.ready = `${base}/ready`
  if (config.metrics.enabled) links.metrics = `${base}/metrics`
  links.openrpc = `${base}/openrpc.json`
  if (config.protocol.rest) links.openapi = `${base}/openapi.json`
  return {
    name: config.agent.name,
    description: config.agent.description,
    version: config.agent.version,
    a2aVersions: [...SUPPORTED_VERSIONS],
    jsonRpc: `POST ${base}/`,
    links,
    docs: DOCS
  }
}

/** `text` for an HTML element or a double-quoted attribute. */
export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)
}

/** The same as a small HTML page, every value escaped. */
export function rootPage (info: RootInfo): string {
  const e = escapeHtml
  const items = Object.entries(info.links)
    .map(([name, path]) => `<li><a href="${e(path)}">${e(LINK_TITLES[name])}</a> <code>${e(path)}</code></li>`)
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${e(info.name)}</title></head>
<body>
<h1>${e(info.name)}</h1>
<p>${e(info.description)}</p>
<p>An A2A agent, version ${e(info.version)}, speaking A2A ${e(info.a2aVersions.join(' and '))}. JSON-RPC 2.0: <code>${e(info.jsonRpc)}</code>.</p>
<ul>
${items.join('\n')}
</ul>
<p>Documentation: ${e(info.docs)}.</p>
</body>
</html>
`
}

/**
 * Whether the client would rather have HTML than JSON (RFC 9110 §12.5.1, by q-value): browsers, whose Accept names
 * `text/html` first. Anything else (no Accept, any type, `application/json`) gets JSON.
 */
export function prefersHtml (accept: string | undefined): boolean {
  if (accept === undefined) return false
  let html = 0
  let json = 0
  for (const range of accept.toLowerCase().split(',')) {
    const [type, ...params] = range.split(';').map(part => part.trim())
    const q = params.find(param => param.startsWith('q='))
    const quality = q === undefined ? 1 : Number(q.slice(2))
    if (type === 'text/html') html = quality
    else if (type === 'application/json') json = quality
  }
  return html > json
}

/**
 * `GET /`: a small JSON document (or, for a browser, an HTML page) naming the agent, the A2A versions it speaks and
 * the routes to try next. Public, as the agent card is; `POST /` stays the JSON-RPC endpoint.
 */
const rootRoutes: FastifyPluginAsync<RootRoutesOptions> = async (fastify, opts) => {
  const info = rootInfo(opts.config, opts.base)
  const page = rootPage(info)

  fastify.get('/', { schema: { response: { 200: RootSchema } } }, async function (request, reply) {
    reply.header('vary', 'Accept')
    if (!prefersHtml(request.headers.accept)) return info
    reply.header('content-security-policy', PAGE_CSP)
    return reply.type('text/html; charset=utf-8').send(page)
  })
}

export default rootRoutes
