import Fastify from 'fastify'

/** How the stub answers: normally, too late, with a body that is not JSON, or with a 500. */
export type IdpMode = 'ok' | 'slow' | 'garbage' | 'error'

export interface StubIdpOptions {
  clientId?: string
  clientSecret?: string
}

export interface StubIdp {
  /** Base URL, e.g. `http://127.0.0.1:PORT`. */
  url: string
  /** The RFC 7662 endpoint: `${url}/introspect`. */
  endpoint: string
  /** Introspection responses by token; an unknown token is `{ active: false }`. */
  tokens: Map<string, object>
  /** Requests received at `/introspect`, including rejected ones. */
  calls: () => number
  /** The form and `accept` header of the last request. */
  last: () => { form: Record<string, string>, accept: string | undefined } | undefined
  mode: (mode: IdpMode) => void
  /** Takes the stub down: later connections are refused. Safe to call twice. */
  close: () => Promise<void>
}

/** How long `slow` mode waits before answering: far longer than the client timeouts the tests use. */
const SLOW_MS = 2_000

interface Teardown {
  teardown (fn: () => unknown): void
}

/** Decodes one half of HTTP Basic credentials form-encoded per RFC 6749 §2.3.1. */
function formDecode (value: string): string {
  return new URLSearchParams(`v=${value}`).get('v') as string
}

/** A real RFC 7662 identity provider on 127.0.0.1, port 0, whose answers the test controls. */
export async function stubIdp (t: Teardown, opts: StubIdpOptions = {}): Promise<StubIdp> {
  const clientId = opts.clientId ?? 'a2a-server'
  const clientSecret = opts.clientSecret ?? 'idp-client-secret'
  const tokens = new Map<string, object>()
  const releases = new Set<() => void>()
  let mode: IdpMode = 'ok'
  let calls = 0
  let last: ReturnType<StubIdp['last']>
  let closed = false

  const app = Fastify({ logger: false })
  // @fastify/formbody is not installed; RFC 7662 §2.1 requests are application/x-www-form-urlencoded.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, async (_req: unknown, body: string) =>
    Object.fromEntries(new URLSearchParams(body)))

  app.post('/introspect', async function (request, reply) {
    calls++
    const form = request.body as Record<string, string>
    last = { form, accept: request.headers.accept }
    // RFC 6749 §2.3.1: each half is form-encoded, so a ':' inside either is escaped and the split is unambiguous.
    const basic = String(request.headers.authorization).replace(/^Basic /, '')
    const [id, secret] = Buffer.from(basic, 'base64').toString('utf8').split(':').map(formDecode)
    if (id !== clientId || secret !== clientSecret) {
      return reply.code(401).header('www-authenticate', 'Basic realm="idp"').send({ error: 'invalid_client' })
    }
    if (mode === 'slow') {
      await new Promise<void>(resolve => {
        const release = () => { clearTimeout(timer); releases.delete(release); resolve() }
        const timer = setTimeout(release, SLOW_MS)
        releases.add(release)
      })
    }
    if (mode === 'garbage') return reply.type('application/json').send('<html>not json</html>')
    if (mode === 'error') return reply.code(500).send({ error: 'server_error' })
    return tokens.get(form.token) ?? { active: false }
  })

  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const url = `http://127.0.0.1:${port}`

  const close = async () => {
    if (closed) return
    closed = true
    for (const release of [...releases]) release()
    await app.close()
  }
  t.teardown(close)

  return {
    url,
    endpoint: `${url}/introspect`,
    tokens,
    calls: () => calls,
    last: () => last,
    mode: (m: IdpMode) => { mode = m },
    close
  }
}
