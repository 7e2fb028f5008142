import type { LookupAddress, LookupOptions } from 'node:dns'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { Agent, createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { JsonRpcError, RpcCode } from '../../../services/kernel/errors.js'
import { createUrlPolicy, type UrlPolicy, type UrlPolicyOptions } from '../../../services/push/url-policy.js'

// What each refusal a setting could lift adds: the setting.
const NETWORK = '(to allow it, add it to push_notifications.config.allowed_networks)'
const LOCALHOST = '(to allow it, add 127.0.0.1 and ::1 to push_notifications.config.allowed_networks)'
const HTTPS = '(to allow http, set push_notifications.config.require_https to false)'
const DOMAINS = '(to allow it, add it to push_notifications.config.allowed_domains)'

function policy (opts: Partial<UrlPolicyOptions> = {}): UrlPolicy {
  return createUrlPolicy({ validateUrls: true, requireHttps: false, allowedDomains: [], allowedNetworks: [], ...opts })
}

// The reason checkUrl gives, or 'ok'.
function reason (p: UrlPolicy, url: string): string {
  const res = p.checkUrl(url)
  return res.ok ? 'ok' : res.reason
}

// A resolver that answers every name with these addresses, and records the names asked.
function resolver (...addresses: string[]): { asked: string[], resolve: (h: string) => Promise<LookupAddress[]> } {
  const asked: string[] = []
  return {
    asked,
    resolve: async hostname => {
      asked.push(hostname)
      return addresses.map(address => ({ address, family: address.includes(':') ? 6 : 4 }))
    }
  }
}

interface LookupResult { err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number }

function lookup (p: UrlPolicy, hostname: string, options: LookupOptions): Promise<LookupResult> {
  return new Promise(resolve => p.lookup(hostname, options, (err, address, family) => resolve({ err, address, family })))
}

t.test('refuses every non-public literal address, with the range in the reason', async t => {
  const p = policy()
  const cases: Array<[string, string]> = [
    ['http://127.0.0.1/', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK],
    ['http://127.255.1.2:8080/hook', 'url: loopback address 127.255.1.2 is not allowed ' + NETWORK],
    ['http://[::1]/', 'url: loopback address ::1 is not allowed ' + NETWORK],
    ['http://10.0.0.1/', 'url: private address 10.0.0.1 is not allowed ' + NETWORK],
    ['http://172.16.0.1/', 'url: private address 172.16.0.1 is not allowed ' + NETWORK],
    ['http://172.31.255.255/', 'url: private address 172.31.255.255 is not allowed ' + NETWORK],
    ['http://192.168.1.1/', 'url: private address 192.168.1.1 is not allowed ' + NETWORK],
    ['http://100.64.0.1/', 'url: private (CGNAT) address 100.64.0.1 is not allowed ' + NETWORK],
    ['http://[fc00::1]/', 'url: private (ULA) address fc00::1 is not allowed ' + NETWORK],
    ['http://[fd12:3456::1]/', 'url: private (ULA) address fd12:3456::1 is not allowed ' + NETWORK],
    ['http://[fec0::1]/', 'url: private (site-local) address fec0::1 is not allowed ' + NETWORK],
    ['http://169.254.169.254/latest/meta-data', 'url: link-local address 169.254.169.254 is not allowed ' + NETWORK],
    ['http://[fe80::1]/', 'url: link-local address fe80::1 is not allowed ' + NETWORK],
    ['http://224.0.0.1/', 'url: multicast address 224.0.0.1 is not allowed ' + NETWORK],
    ['http://[ff02::1]/', 'url: multicast address ff02::1 is not allowed ' + NETWORK],
    ['http://0.0.0.0/', 'url: unspecified address 0.0.0.0 is not allowed ' + NETWORK],
    ['http://0/', 'url: unspecified address 0.0.0.0 is not allowed ' + NETWORK],
    ['http://[::]/', 'url: unspecified address :: is not allowed ' + NETWORK],
    ['http://255.255.255.255/', 'url: broadcast address 255.255.255.255 is not allowed ' + NETWORK],
    ['http://192.0.2.1/', 'url: reserved address 192.0.2.1 is not allowed ' + NETWORK],
    ['http://240.0.0.1/', 'url: reserved address 240.0.0.1 is not allowed ' + NETWORK],
    ['http://[2001:db8::1]/', 'url: reserved address 2001:db8::1 is not allowed ' + NETWORK],
    ['http://[2001::1]/', 'url: reserved address 2001::1 is not allowed ' + NETWORK],
    // IPv4 addresses inside IPv6 ones are judged as themselves.
    ['http://[::ffff:127.0.0.1]/', 'url: loopback address ::ffff:7f00:1 (127.0.0.1) is not allowed ' + NETWORK],
    ['http://[::ffff:10.1.2.3]/', 'url: private address ::ffff:a01:203 (10.1.2.3) is not allowed ' + NETWORK],
    ['http://[::ffff:0:a9fe:a9fe]/', 'url: link-local address ::ffff:0:a9fe:a9fe (169.254.169.254) is not allowed ' + NETWORK],
    ['http://[64:ff9b::7f00:1]/', 'url: loopback address 64:ff9b::7f00:1 (127.0.0.1) is not allowed ' + NETWORK],
    ['http://[2002:c0a8:101::1]/', 'url: private address 2002:c0a8:101::1 (192.168.1.1) is not allowed ' + NETWORK],
    // The deprecated IPv4-compatible form, in the IETF-reserved ::/8.
    ['http://[::127.0.0.1]/', 'url: reserved address ::7f00:1 is not allowed ' + NETWORK],
    // Decimal, hex, octal and short forms: WHATWG URL makes them dotted quads first.
    ['http://2130706433/', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK],
    ['http://0x7f000001/', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK],
    ['http://0x7f.0.0.1/', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK],
    ['http://0177.0.0.1/', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK],
    ['http://127.1/', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK],
    ['http://10.1/', 'url: private address 10.0.0.1 is not allowed ' + NETWORK],
    ['http://167772161/', 'url: private address 10.0.0.1 is not allowed ' + NETWORK],
    ['http://%31%32%37.0.0.1/', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK],
    ['http://127.0.0.1./', 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK]
  ]
  for (const [url, expected] of cases) t.equal(reason(p, url), expected, url)
})

t.test('refuses localhost and every *.localhost name, in any case and with a trailing dot', async t => {
  const p = policy()
  t.equal(reason(p, 'http://localhost:8000/'), 'url: localhost name localhost is not allowed ' + LOCALHOST)
  t.equal(reason(p, 'http://a.localhost/'), 'url: localhost name a.localhost is not allowed ' + LOCALHOST)
  t.equal(reason(p, 'http://x.y.LOCALHOST/'), 'url: localhost name x.y.localhost is not allowed ' + LOCALHOST)
  t.equal(reason(p, 'http://LOCALHOST./'), 'url: localhost name localhost is not allowed ' + LOCALHOST)
  t.equal(reason(p, 'http://notlocalhost/'), 'ok')
  t.equal(reason(p, 'http://localhost.example.com/'), 'ok')
})

t.test('refuses bad URLs, other schemes and credentials in the URL', async t => {
  const p = policy()
  t.equal(reason(p, 'not a url'), 'url: not a valid URL')
  t.equal(reason(p, ''), 'url: not a valid URL')
  t.equal(reason(p, 'http://'), 'url: not a valid URL')
  t.equal(reason(p, 'http://exa mple.com/'), 'url: not a valid URL')
  t.equal(reason(p, 'ftp://example.com/'), 'url: scheme "ftp" is not allowed; use http or https')
  t.equal(reason(p, 'file:///etc/passwd'), 'url: scheme "file" is not allowed; use http or https')
  t.equal(reason(p, 'javascript:alert(1)'), 'url: scheme "javascript" is not allowed; use http or https')
  t.equal(reason(p, 'http://user:secret@example.com/'), 'url: credentials in the URL are not allowed; use authentication')
  t.equal(reason(p, 'http://user@example.com/'), 'url: credentials in the URL are not allowed; use authentication')
  t.equal(reason(p, 'http://:pw@example.com/'), 'url: credentials in the URL are not allowed; use authentication')
  t.equal(reason(p, 'http://a..b/'), 'url: "a..b" is not a valid host name')
  t.equal(reason(p, 'http://-a.example.com/'), 'url: "-a.example.com" is not a valid host name')
  t.equal(reason(p, 'http://a*b.example.com/'), 'url: "a*b.example.com" is not a valid host name')
  t.equal(reason(p, `http://${'a'.repeat(64)}.example.com/`), `url: "${'a'.repeat(64)}.example.com" is not a valid host name`)
  t.equal(reason(p, `http://${'abcdefghi.'.repeat(26)}com/`), `url: "${'abcdefghi.'.repeat(26)}com" is not a valid host name`)
})

t.test('require_https refuses http and accepts https', async t => {
  const p = policy({ requireHttps: true })
  t.equal(reason(p, 'http://example.com/'), 'url: must use https ' + HTTPS)
  t.equal(reason(p, 'https://example.com/'), 'ok')
})

t.test('every refusal a setting could lift names that setting, and the others name none', async t => {
  const p = policy({ requireHttps: true, allowedDomains: ['*.example.com'] })
  t.match(reason(p, 'https://10.0.0.1/'), /push_notifications\.config\.allowed_networks\)$/)
  t.match(reason(p, 'https://localhost/'), /push_notifications\.config\.allowed_networks\)$/)
  t.match(reason(p, 'http://a.example.com/'), /push_notifications\.config\.require_https to false\)$/)
  t.match(reason(p, 'https://example.org/'), /push_notifications\.config\.allowed_domains\)$/)
  t.match(p.checkAddress('127.0.0.1'), /push_notifications\.config\.allowed_networks\)$/)
  // Nothing in the configuration lets another scheme or credentials in the URL through.
  t.notMatch(reason(p, 'ftp://a.example.com/'), /push_notifications/)
  t.notMatch(reason(p, 'https://u:p@a.example.com/'), /push_notifications/)
})

t.test('accepts public names and addresses, and gives back the parsed URL', async t => {
  const p = policy()
  for (const url of [
    'https://example.com/hook?x=1',
    'http://hooks.example.org:8443/a2a',
    'https://BÜCHER.example/',
    'http://my_host.example.com/',
    'http://8.8.8.8/',
    'http://[2606:4700:4700::1111]/',
    'http://[::ffff:8.8.8.8]/',
    'http://[2002:808:808::1]/',
    'https://example.com./'
  ]) {
    t.equal(reason(p, url), 'ok', url)
  }
  const res = p.checkUrl('HTTPS://Example.COM:443/Hook')
  t.ok(res.ok)
  if (res.ok) t.equal(res.url.href, 'https://example.com/Hook')
  // Names are never resolved at set time: one that does not exist is accepted.
  t.equal(reason(p, 'https://no-such-host.invalid/'), 'ok')
})

t.test('allowed_networks exempts its addresses, and localhost names when it covers 127.0.0.1 or ::1', async t => {
  const v4 = policy({ allowedNetworks: ['127.0.0.0/8', '10.1.0.0/16'] })
  t.equal(reason(v4, 'http://127.0.0.1:9000/'), 'ok')
  t.equal(reason(v4, 'http://127.0.0.2/'), 'ok')
  t.equal(reason(v4, 'http://localhost:9000/'), 'ok')
  t.equal(reason(v4, 'http://a.localhost/'), 'ok')
  t.equal(reason(v4, 'http://[::ffff:127.0.0.1]/'), 'ok')
  t.equal(reason(v4, 'http://10.1.2.3/'), 'ok')
  t.equal(reason(v4, 'http://10.2.0.1/'), 'url: private address 10.2.0.1 is not allowed ' + NETWORK)
  t.equal(reason(v4, 'http://[::1]/'), 'url: loopback address ::1 is not allowed ' + NETWORK)

  const v6 = policy({ allowedNetworks: ['::1/128', 'fd00::/8'] })
  t.equal(reason(v6, 'http://[::1]/'), 'ok')
  t.equal(reason(v6, 'http://localhost/'), 'ok')
  t.equal(reason(v6, 'http://[fd00::5]/'), 'ok')
  t.equal(reason(v6, 'http://127.0.0.1/'), 'url: loopback address 127.0.0.1 is not allowed ' + NETWORK)

  // A single address counts as a /32 or /128; an IPv6 network can exempt a mapped address as written.
  const single = policy({ allowedNetworks: ['192.168.1.10', 'fe80::1', '::ffff:10.9.0.0/112'] })
  t.equal(reason(single, 'http://192.168.1.10/'), 'ok')
  t.equal(reason(single, 'http://192.168.1.11/'), 'url: private address 192.168.1.11 is not allowed ' + NETWORK)
  t.equal(reason(single, 'http://[fe80::1]/'), 'ok')
  t.equal(reason(single, 'http://[::ffff:10.9.1.1]/'), 'ok')
  t.equal(reason(single, 'http://localhost/'), 'url: localhost name localhost is not allowed ' + LOCALHOST)
})

t.test('an invalid allowed_networks entry throws a TypeError naming it', async t => {
  for (const bad of ['10.0.0.0/33', 'nonsense', '10.0.0.0/', '::1/129']) {
    let thrown: unknown
    try {
      policy({ allowedNetworks: ['10.0.0.0/8', bad] })
    } catch (err) {
      thrown = err
    }
    t.ok(thrown instanceof TypeError, bad)
    t.match(thrown, {
      code: 'A2A_ERR_INVALID_OPTIONS',
      message: `Invalid option: push_notifications.config.allowed_networks: "${bad}" is not a CIDR`
    })
  }
})

t.test('allowed_domains globs: *.example.com matches subdomains at any depth, never the apex', async t => {
  const p = policy({ allowedDomains: ['*.example.com', 'hooks.example.org', '8.8.*', '2606:4700:4700::1111'] })
  t.equal(reason(p, 'https://a.example.com/'), 'ok')
  t.equal(reason(p, 'https://a.b.example.com/'), 'ok')
  t.equal(reason(p, 'https://A.Example.COM./'), 'ok')
  t.equal(reason(p, 'https://example.com/'), 'url: host example.com is not in the allowed domains ' + DOMAINS)
  t.equal(reason(p, 'https://evilexample.com/'), 'url: host evilexample.com is not in the allowed domains ' + DOMAINS)
  t.equal(reason(p, 'https://a.example.com.evil.net/'), 'url: host a.example.com.evil.net is not in the allowed domains ' + DOMAINS)
  t.equal(reason(p, 'https://hooks.example.org/'), 'ok')
  t.equal(reason(p, 'https://x.hooks.example.org/'), 'url: host x.hooks.example.org is not in the allowed domains ' + DOMAINS)
  // An IP-literal host needs a glob too; IPv6 is matched without brackets.
  t.equal(reason(p, 'http://8.8.4.4/'), 'ok')
  t.equal(reason(p, 'http://1.1.1.1/'), 'url: host 1.1.1.1 is not in the allowed domains ' + DOMAINS)
  t.equal(reason(p, 'http://[2606:4700:4700::1111]/'), 'ok')
  t.equal(reason(p, 'http://[2606:4700:4700::1001]/'), 'url: host 2606:4700:4700::1001 is not in the allowed domains ' + DOMAINS)
})

t.test('allowed_domains and the address rules apply together', async t => {
  const p = policy({ allowedDomains: ['*.localhost', '10.0.0.*'] })
  t.equal(reason(p, 'http://a.localhost/'), 'url: localhost name a.localhost is not allowed ' + LOCALHOST)
  t.equal(reason(p, 'http://10.0.0.1/'), 'url: private address 10.0.0.1 is not allowed ' + NETWORK)
  const exempt = policy({ allowedDomains: ['*.localhost', '10.0.0.*'], allowedNetworks: ['127.0.0.1/32', '10.0.0.0/24'] })
  t.equal(reason(exempt, 'http://a.localhost/'), 'ok')
  t.equal(reason(exempt, 'http://localhost/'), 'url: host localhost is not in the allowed domains ' + DOMAINS)
  t.equal(reason(exempt, 'http://10.0.0.1/'), 'ok')
})

t.test('validate_urls false lets every address through, but keeps the scheme, https and domain rules', async t => {
  const p = policy({ validateUrls: false })
  for (const url of ['http://127.0.0.1/', 'http://localhost/', 'http://[::1]/', 'http://10.0.0.1/', 'http://169.254.169.254/']) {
    t.equal(reason(p, url), 'ok', url)
  }
  t.equal(reason(p, 'ftp://example.com/'), 'url: scheme "ftp" is not allowed; use http or https')
  t.equal(reason(p, 'http://u:p@example.com/'), 'url: credentials in the URL are not allowed; use authentication')
  t.equal(reason(policy({ validateUrls: false, requireHttps: true }), 'http://example.com/'), 'url: must use https ' + HTTPS)
  t.equal(reason(policy({ validateUrls: false, allowedDomains: ['*.example.com'] }), 'http://127.0.0.1/'),
    'url: host 127.0.0.1 is not in the allowed domains ' + DOMAINS)
  t.equal(p.checkAddress('127.0.0.1'), null)
})

t.test('assertUrl gives the URL, or throws -32602 with the reason as data', async t => {
  const p = policy()
  t.equal(p.assertUrl('https://example.com/x').href, 'https://example.com/x')
  t.throws(() => p.assertUrl('http://10.0.0.1/'), new JsonRpcError(RpcCode.invalidParams, 'Invalid params', 'url: private address 10.0.0.1 is not allowed ' + NETWORK))
  try {
    p.assertUrl('ftp://x/')
  } catch (err) {
    t.match(err, { code: RpcCode.invalidParams, data: 'url: scheme "ftp" is not allowed; use http or https' })
  }
})

t.test('checkAddress judges a resolved address by the same ranges and exemptions', async t => {
  const p = policy({ allowedNetworks: ['192.168.0.0/16'] })
  t.equal(p.checkAddress('127.0.0.1', 4), 'loopback address 127.0.0.1 is not allowed ' + NETWORK)
  t.equal(p.checkAddress('::1', 6), 'loopback address ::1 is not allowed ' + NETWORK)
  t.equal(p.checkAddress('::ffff:127.0.0.1', 6), 'loopback address ::ffff:7f00:1 (127.0.0.1) is not allowed ' + NETWORK)
  t.equal(p.checkAddress('10.0.0.1'), 'private address 10.0.0.1 is not allowed ' + NETWORK)
  t.equal(p.checkAddress('fe80::1%eth0', 6), 'link-local address fe80::1%eth0 is not allowed ' + NETWORK)
  t.equal(p.checkAddress('192.168.1.1', 4), null)
  t.equal(p.checkAddress('::ffff:192.168.1.1', 6), null)
  t.equal(p.checkAddress('93.184.216.34', 4), null)
  t.equal(p.checkAddress('2606:4700:4700::1111', 0), null)
  t.equal(p.checkAddress('not-an-ip'), 'not-an-ip is not an IP address')
  t.equal(p.checkAddress('93.184.216.34', 6), '93.184.216.34 is not an IPv6 address')
})

t.test('lookup refuses a name that resolves to a refused address, in both `all` modes', async t => {
  const { asked, resolve } = resolver('127.0.0.1')
  const p = policy({ resolve })
  for (const all of [false, true]) {
    const res = await lookup(p, 'rebind.example.com', { all })
    t.match(res.err, {
      code: 'A2A_ERR_UNSAFE_ADDRESS',
      hostname: 'rebind.example.com',
      address: '127.0.0.1',
      message: 'Unsafe address for host rebind.example.com: loopback address 127.0.0.1 is not allowed ' + NETWORK
    })
  }
  t.same(asked, ['rebind.example.com', 'rebind.example.com'])
})

t.test('lookup refuses when any resolved address is refused, even if the first is public', async t => {
  const p = policy({ resolve: resolver('93.184.216.34', '10.0.0.7').resolve })
  const res = await lookup(p, 'mixed.example.com', { all: true })
  t.match(res.err, { code: 'A2A_ERR_UNSAFE_ADDRESS', address: '10.0.0.7' })
})

t.test('lookup gives public addresses in the dns.lookup shapes', async t => {
  const p = policy({ resolve: resolver('93.184.216.34', '2606:2800:220:1::1').resolve })
  t.same(await lookup(p, 'example.com', { all: false }), { err: null, address: '93.184.216.34', family: 4 })
  t.same(await lookup(p, 'example.com', { all: true }), {
    err: null,
    address: [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1::1', family: 6 }],
    family: undefined
  })
  // A requested family filters the answers; none left is ENOTFOUND.
  t.same(await lookup(p, 'example.com', { family: 6 }), { err: null, address: '2606:2800:220:1::1', family: 6 })
  t.same(await lookup(p, 'example.com', { family: 'IPv4', all: true }), { err: null, address: [{ address: '93.184.216.34', family: 4 }], family: undefined })
  const v4only = policy({ resolve: resolver('93.184.216.34').resolve })
  t.match((await lookup(v4only, 'example.com', { family: 6 })).err, { code: 'ENOTFOUND', hostname: 'example.com' })
})

t.test('lookup passes resolver errors through, and everything when validate_urls is false', async t => {
  const failing = policy({ resolve: async () => { throw Object.assign(new Error('nope'), { code: 'EAI_AGAIN' }) } })
  t.match((await lookup(failing, 'example.com', { all: false })).err, { code: 'EAI_AGAIN' })
  const off = policy({ validateUrls: false, resolve: resolver('127.0.0.1').resolve })
  t.same(await lookup(off, 'rebind.example.com', { all: false }), { err: null, address: '127.0.0.1', family: 4 })
})

t.test('lookup resolves with the system resolver by default', async t => {
  // localhost resolves from the hosts file, without a network.
  const res = await lookup(policy(), 'localhost', { all: true })
  t.equal(res.err?.code, 'A2A_ERR_UNSAFE_ADDRESS')
  const allowed = await lookup(policy({ allowedNetworks: ['127.0.0.0/8', '::1/128'] }), 'localhost', { all: true })
  t.equal(allowed.err, null)
  t.ok((allowed.address as LookupAddress[]).length > 0)
})

t.test('at connect time: an http.Agent with the policy lookup refuses a name resolved to 127.0.0.1', async t => {
  const server = createServer((_req, res) => res.end('reached'))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const { port } = server.address() as AddressInfo
  const { asked, resolve } = resolver('127.0.0.1')

  async function fetchThrough (p: UrlPolicy): Promise<string> {
    const agent = new Agent({ lookup: p.lookup })
    t.teardown(() => agent.destroy())
    return new Promise((resolve, reject) => {
      get(`http://hooks.made-up.test:${port}/`, { agent }, res => {
        let body = ''
        res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => resolve(body))
      }).on('error', reject)
    })
  }

  await t.rejects(fetchThrough(policy({ resolve })), { code: 'A2A_ERR_UNSAFE_ADDRESS', hostname: 'hooks.made-up.test' })
  t.equal(await fetchThrough(policy({ resolve, allowedNetworks: ['127.0.0.0/8'] })), 'reached')
  t.same(asked, ['hooks.made-up.test', 'hooks.made-up.test'])
})

t.test('the refusals docs/configuration.md shows are the ones given', async t => {
  const docs = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8')
  const section = docs.slice(docs.indexOf('## When the configuration is wrong'))
  const shown = [...section.matchAll(/```text\n([\s\S]*?)```/g)][1]?.[1].trimEnd().split('\n')
  const p = policy({ requireHttps: true, allowedDomains: ['*.example.com'] })
  t.same(shown, ['https://127.0.0.1/', 'https://localhost/', 'http://a.example.com/', 'https://hooks.example.org/'].map(url => reason(p, url)))
})
