import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { pemOf } from './services/a2a/card-keys.js'
import { freePort } from '../scripts/redis-server.js'
import { runChild, serve } from './helper.js'

// `fastify-a2a card` with agent.card_signing: the signed card, `card --verify` against a running server, a file, a JWK
// set file, an altered card and an unsigned one; and a bad key refused by `validate` and `serve` in one line.

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))
// The children's coverage counts for cli.ts only: the rest runs from dist/, whose source maps would blur the in-process
// coverage of the same files (as test/helper.ts's `serve` does).
const ENV: NodeJS.ProcessEnv = { ...process.env, _TAPJS_PROCESSINFO_COV_EXCLUDE_: String(/[\\/](node_modules|services|plugins|routes|schemas)[\\/]/) }
for (const name of ['A2A_CONFIG', 'HOST', 'PORT', 'LOG_LEVEL', 'REDIS_URL']) delete ENV[name]

async function run (cwd: string, ...args: string[]) {
  const { status, stdout, stderr } = await runChild(t, process.execPath, [CLI, ...args], { cwd, env: ENV })
  return { status, stdout, stderr }
}

const agentYml = (extra = '') => `agent:\n  name: Signed CLI\n  card_signing:\n    key: key.pem\n    kid: cli-key\n${extra}`

t.ok(existsSync(CLI), 'dist/cli.js exists (run `npm run build` first)')

t.test('card prints the signed card; --verify checks it from a file with --jwks', async t => {
  const dir = t.testdir({ 'agent.yml': agentYml(), 'key.pem': pemOf('ES256') })
  const printed = await run(dir, 'card')
  t.equal(printed.status, 0, printed.stderr)
  const card = JSON.parse(printed.stdout)
  t.equal(card.signatures.length, 1, 'the card is signed')
  writeFileSync(join(dir, 'card.json'), printed.stdout)
  writeFileSync(join(dir, 'altered.json'), JSON.stringify({ ...card, name: 'Impostor' }))
  const { signatures: _, ...unsigned } = card
  writeFileSync(join(dir, 'unsigned.json'), JSON.stringify(unsigned))

  // The JWK set from a running server (the same key): `serve` publishes it at /.well-known/jwks.json.
  const served = await serve(t, ['--config', 'agent.yml'])
  const jwks = await (await fetch(`${served.url}/.well-known/jwks.json`)).text()
  writeFileSync(join(dir, 'jwks.json'), jwks)

  const ok = await run(dir, 'card', '--verify', 'card.json', '--jwks', 'jwks.json')
  t.equal(ok.status, 0, ok.stderr)
  t.equal(ok.stdout, 'signature 1 (kid cli-key, ES256): ok\nverified: card.json (1 of 1 signatures)\n')

  const altered = await run(dir, 'card', '--verify', 'altered.json', '--jwks', 'jwks.json')
  t.equal(altered.status, 1)
  t.equal(altered.stderr, 'signature 1 (kid cli-key, ES256): failed: bad signature: the card was changed after it was signed, or another key signed it\n' +
    'not verified: altered.json\n')

  const none = await run(dir, 'card', '--verify', 'unsigned.json', '--jwks', 'jwks.json')
  t.equal(none.status, 1)
  t.equal(none.stderr, 'no signature: the card has no signatures\nnot verified: unsigned.json\n')

  const noKey = await run(dir, 'card', '--verify', 'card.json')
  t.equal(noKey.status, 1, 'no --jwks and no jku: no key')
  t.match(noKey.stderr, 'signature 1 (kid cli-key, ES256): failed: no key: the signature names no jku (give the JWK set with --jwks)')

  const live = await run(dir, 'card', '--verify', `${served.url}/.well-known/agent-card.json`, '--jwks', `${served.url}/.well-known/jwks.json`)
  t.equal(live.status, 0, live.stderr)
  t.match(live.stdout, /^signature 1 \(kid cli-key, ES256\): ok\nverified: http:/)

  const gone = await run(dir, 'card', '--verify', 'card.json', '--jwks', 'missing.json')
  t.equal(gone.status, 1)
  t.equal(gone.stderr, 'jwks unreachable: cannot read missing.json: ENOENT\n')
})

t.test('card --verify with the jku the card names, from a running server', async t => {
  const dir = t.testdir({ 'key.pem': pemOf('EdDSA') })
  // jku names the server's own JWK set, so the server gets a port known beforehand.
  const port = await freePort()
  writeFileSync(join(dir, 'agent.yml'), agentYml(`    alg: EdDSA\n    jku: http://127.0.0.1:${port}/.well-known/jwks.json\n`))
  const served = await serve(t, ['--config', 'agent.yml', '--port', String(port)])
  const res = await run(dir, 'card', '--verify', `${served.url}/.well-known/agent.json`)
  t.equal(res.status, 0, res.stderr)
  t.match(res.stdout, 'signature 1 (kid cli-key, EdDSA): ok')
})

t.test('--jwks without --verify is a usage error', async t => {
  const res = await run(t.testdir({}), 'card', '--jwks', 'jwks.json')
  t.equal(res.status, 2)
  t.match(res.stderr, /^fastify-a2a: --jwks goes with --verify\n\nUsage: fastify-a2a card/)
})

t.test('RELIABILITY: a card-signing key that cannot sign stops validate and serve with one line, never the key', async t => {
  const rsa = pemOf('RS256')
  const dir = t.testdir({ 'agent.yml': agentYml(), 'key.pem': rsa, 'missing.yml': 'agent:\n  name: A\n  card_signing:\n    key: nowhere.pem\n' })
  for (const command of ['validate', 'serve']) {
    const res = await run(dir, command, '--config', 'agent.yml', ...(command === 'serve' ? ['--port', '0'] : []))
    t.equal(res.status, 1, command)
    t.equal(res.stderr, 'agent.card_signing.key: an RSA key of 2048 bits does not fit alg ES256, which needs an EC P-256 key\n', `${command}: one line`)
    t.notOk(res.stdout.includes('PRIVATE KEY') || res.stderr.includes('PRIVATE KEY'), 'no key material')
  }
  const missing = await run(dir, 'validate', '--config', 'missing.yml')
  t.equal(missing.status, 1)
  t.equal(missing.stderr, 'agent.card_signing.key: not a PEM or JWK key, nor a file that can be read (ENOENT)\n')
})
