// The Python a2a-sdk 1.x's card verifier against our signed card. The SDK is not installed where the suite runs, so
// test/fixtures/python/a2a_sdk_card_verify.py replays what it does (its source lines are quoted there): its card
// resolver's compatibility steps and ParseDict into a2a.proto's AgentCard, then its verifier's MessageToDict, cleaning,
// json.dumps and PyJWT's jwt.decode. The AgentCard class is built from the vendored a2a.proto, as a FileDescriptorSet
// written here with protobufjs. Skipped, with the reason, without python3, protobuf and PyJWT (`PYTHON` names
// another interpreter).
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import protobuf from 'protobufjs'
import t from 'tap'
import { signedPayload } from '../../services/a2a/card-signing.js'
import { IDEMPOTENT_SEND_EXTENSION } from '../../services/a2a/extensions.js'
import { PROTO_ROOT } from '../../services/grpc/protos.js'
import { ALGS, pemOf } from '../services/a2a/card-keys.js'
import { listen, runChild, type Teardown } from '../helper.js'

const SCRIPT = fileURLToPath(new URL('../fixtures/python/a2a_sdk_card_verify.py', import.meta.url))

/** Why an interpreter cannot run the script (not there, or no protobuf / PyJWT / cryptography), or false. */
function unavailable (python: string): string | false {
  const probe = spawnSync(python, ['-c', 'import jwt, cryptography, google.protobuf.json_format'], { encoding: 'utf8' })
  if (probe.error !== undefined) return `${python} is not there (${probe.error.message}): install python3, or set PYTHON`
  if (probe.status !== 0) {
    return `${python} cannot import PyJWT, cryptography or protobuf (${probe.stderr.trim().split('\n').pop() ?? ''}): ` +
      '"apt-get install python3-jwt python3-cryptography python3-protobuf" (Debian) or "pip install pyjwt cryptography protobuf"'
  }
  return false
}

const CANDIDATES = process.env.PYTHON !== undefined ? [process.env.PYTHON] : ['python3', '/usr/bin/python3']
const PYTHON = CANDIDATES.find(python => unavailable(python) === false) ?? CANDIDATES[0]
const skip = unavailable(PYTHON)

/**
 * a2a.proto v1.0.1's messages (package lf.a2a.v1) as a FileDescriptorSet for Python's descriptor pool: the file
 * protobufjs describes, its options and services left out (google.api's annotations are not in the pool), depending
 * on the well-known types' files that protobuf ships.
 */
function descriptorSet (dir: string): string {
  const descriptor = createRequire(import.meta.url)('protobufjs/ext/descriptor/index.js')
  const root = new protobuf.Root()
  root.resolvePath = (_origin, target) => join(PROTO_ROOT, target)
  root.loadSync('a2a/v1.0.1/a2a.proto', { keepCase: true })
  root.resolveAll()
  const set = (root as any).toDescriptor('proto3')
  const file = set.file.find((f: { package?: string }) => f.package === 'lf.a2a.v1')
  const strip = (message: any): void => {
    // A map's entry type keeps the option that makes it one, under the name protoc gives it (`schemes` has
    // `SchemesEntry`, which protobufjs calls `Schemes`).
    message.options = message.options?.mapEntry === true ? { mapEntry: true } : undefined
    for (const field of message.field ?? []) {
      field.options = undefined
      const entry = (message.nestedType ?? []).find((n: any) => n.name === field.typeName && n.options?.mapEntry === true)
      if (entry !== undefined) {
        entry.name = field.name.replace(/(?:^|_)([a-z])/g, (_: string, c: string) => c.toUpperCase()) + 'Entry'
        field.typeName = entry.name
      }
    }
    for (const nested of message.nestedType ?? []) strip(nested)
  }
  for (const message of file.messageType) strip(message)
  file.name = 'lf/a2a/v1/a2a.proto'
  file.service = []
  file.options = undefined
  file.dependency = ['google/protobuf/struct.proto', 'google/protobuf/timestamp.proto', 'google/protobuf/empty.proto']
  const path = join(dir, 'a2a.desc')
  writeFileSync(path, descriptor.FileDescriptorSet.encode({ file: [file] }).finish())
  return path
}

/** Runs the script on the card and the JWK set at these URLs; `dir` holds the descriptor set. */
async function verifyInPython (t: Teardown & { testdir: () => string }, cardUrl: string, jwksUrl: string, dir = t.testdir()) {
  const { status, stdout, stderr } = await runChild(t, PYTHON, [SCRIPT, descriptorSet(dir), cardUrl, jwksUrl])
  if (status !== 0) throw new Error(`${PYTHON} exited with ${String(status)}\n${stderr}`)
  return JSON.parse(stdout) as { canonical: string, verified: boolean, errors: string[] }
}

const baseConfig = (alg: typeof ALGS[number]) => ({
  agent: {
    name: 'Python Verified',
    card_signing: { key: pemOf(alg), alg, kid: `py-${alg}` },
    extensions: [{ uri: 'urn:example:ext', description: 'An extension', params: { mode: 'strict', enabled: true, tags: ['a', 'b'] } }]
  },
  security: { enabled: true, auth: { api_key: { keys: [{ key: 'python-key-0123456789abcdef', scopes: ['admin'] }] } } },
  protocol: { rest: true }
})

for (const alg of ALGS) {
  t.test(`${alg}: the Python SDK's verifier accepts our card and rebuilds our payload byte for byte`, { skip }, async t => {
    const { url } = await listen(t, { config: baseConfig(alg) })
    const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json()
    const out = await verifyInPython(t, `${url}/.well-known/agent-card.json`, `${url}/.well-known/jwks.json`)
    t.ok((card as { capabilities: { extensions: Array<{ uri: string }> } }).capabilities.extensions.some(e => e.uri === IDEMPOTENT_SEND_EXTENSION), 'the default idempotent-send extension is on the card')
    t.equal(out.canonical, signedPayload(card), 'the same canonical payload')
    t.same(out.errors, [])
    t.equal(out.verified, true)
  })
}

t.test('what the Python verifier cannot verify: integers in params, text outside ASCII (docs/protocol.md says so)', { skip }, async t => {
  const integer = baseConfig('ES256')
  integer.agent.extensions[0].params = { ...integer.agent.extensions[0].params, limit: 5 } as any
  const a = await listen(t, { config: integer })
  const outA = await verifyInPython(t, `${a.url}/.well-known/agent-card.json`, `${a.url}/.well-known/jwks.json`)
  t.match(outA.canonical, /"limit":5\.0/, 'MessageToDict makes every Struct number a float')
  t.equal(outA.verified, false)
  t.match(outA.errors, [/InvalidSignatureError/])

  const accented = baseConfig('ES256')
  accented.agent.name = 'Agent Ünïcode'
  const b = await listen(t, { config: accented })
  const outB = await verifyInPython(t, `${b.url}/.well-known/agent-card.json`, `${b.url}/.well-known/jwks.json`)
  t.match(outB.canonical, /Agent \\u00dcn\\u00efcode/, 'json.dumps escapes non-ASCII text (RFC 8785 does not)')
  t.equal(outB.verified, false)
})

t.test('an altered card fails in the Python verifier', { skip }, async t => {
  const { url } = await listen(t, { config: baseConfig('EdDSA') })
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json() as Record<string, unknown>
  const dir = t.testdir({ 'card.json': JSON.stringify({ ...card, description: 'Altered' }), 'jwks.json': await (await fetch(`${url}/.well-known/jwks.json`)).text() })
  const out = await verifyInPython(t, `file://${join(dir, 'card.json')}`, `file://${join(dir, 'jwks.json')}`, dir)
  t.equal(out.verified, false)
  t.match(out.errors, [/InvalidSignatureError/])
})
