// Which webhook URLs and addresses a push config may reach (CONTRACT.md §8.2): checked on the URL at `set`, and
// again on every resolved address when a delivery connects (the DNS-rebinding guard).
import { lookup as dnsLookup } from 'node:dns/promises'
import type { LookupAddress } from 'node:dns'
import type { LookupFunction } from 'node:net'
import createError from '@fastify/error'
import ipaddr from 'ipaddr.js'
import picomatch from 'picomatch'
import { InvalidPluginOptions, invalidParams } from '../kernel/errors.js'

/** The `push_notifications` settings the policy follows. */
export interface UrlPolicyOptions {
  /** `validate_urls`: refuse loopback, private, link-local, multicast, unspecified and reserved addresses, and localhost names. */
  validateUrls: boolean
  /** `config.require_https`: refuse `http:` URLs. */
  requireHttps: boolean
  /**
   * `config.allowed_domains`: when non-empty, the host must match one of these globs (case-insensitive). `*` matches any
   * run of characters, dots included: `*.example.com` matches `a.example.com` and `a.b.example.com`, never
   * `example.com`. IP-literal hosts are matched as written in the URL, IPv6 without brackets (`10.0.0.*`, `2001:db8::1`).
   * @see https://github.com/micromatch/picomatch#globbing-features
   */
  allowedDomains: string[]
  /** `config.allowed_networks`: CIDRs (or single addresses) exempt from the address rules, e.g. `127.0.0.0/8`. */
  allowedNetworks: string[]
  /** Resolves a host name at delivery; default: `dns.promises.lookup(hostname, { all: true })`. */
  resolve?: (hostname: string) => Promise<LookupAddress[]>
  /**
   * The server's own developer-console sink URLs (an IP literal, so no lookup is made): exempt from the address and
   * domain rules, never from the scheme and credential rules.
   */
  exempt?: (url: URL) => boolean
}

export type UrlCheck = { ok: true, url: URL } | { ok: false, reason: string }

export interface UrlPolicy {
  /** The `set`-time check: the URL, and its host if it is an IP literal or a localhost name. Never resolves names. */
  checkUrl (url: string): UrlCheck
  /** checkUrl that throws a -32602 JsonRpcError whose `data` is the reason. */
  assertUrl (url: string): URL
  /** The connect-time check of one resolved address: the reason it is refused, or null. */
  checkAddress (address: string, family?: number): string | null
  /** A `dns.lookup` for `http.Agent`, `net.connect` or got's `dnsLookup` that refuses unsafe resolved addresses. */
  lookup: LookupFunction
}

/** A delivery's host resolved to an address the policy refuses; not worth a retry. */
export const UnsafeAddress = createError<[string, string]>('A2A_ERR_UNSAFE_ADDRESS', 'Unsafe address for host %s: %s', 502)

type Ip = ipaddr.IPv4 | ipaddr.IPv6
type Network = [Ip, number]

// ipaddr.js range names, in words for a client; any other non-unicast range is "reserved".
const IPV4_WORDS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'private (CGNAT)',
  private: 'private'
}
const IPV6_WORDS: Record<string, string> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'private (ULA)',
  deprecatedSiteLocal: 'private (site-local)'
}

// ::/8 is IETF-reserved; ipaddr.js calls the deprecated IPv4-compatible form (::7f00:1) "unicast".
const IETF_RESERVED_V6 = ipaddr.IPv6.parseCIDR('::/8')
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96')
const LOOPBACKS = [ipaddr.parse('127.0.0.1'), ipaddr.parse('::1')]
const FAMILIES: Record<string, number> = { 4: 4, 6: 6, IPv4: 4, IPv6: 6 }
// Each refusal a setting could lift names that setting, so that the operator who meets it knows where to look.
const ALLOW_NETWORK = '(to allow it, add it to push_notifications.config.allowed_networks)'
const ALLOW_LOCALHOST = '(to allow it, add 127.0.0.1 and ::1 to push_notifications.config.allowed_networks)'
const ALLOW_HTTP = '(to allow http, set push_notifications.config.require_https to false)'
const ALLOW_DOMAIN = '(to allow it, add it to push_notifications.config.allowed_domains)'
// LDH labels (plus `_`, seen in real names); WHATWG URL has already lowercased and punycoded them.
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/

// The IPv4 address an IPv6 address stands for: mapped, translated (RFC 6145), NAT64 (RFC 6052) or 6to4.
function embeddedIPv4 (ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = ip.range()
  const bytes = ip.toByteArray()
  if (range === 'ipv4Mapped' || range === 'rfc6145' || ip.match(NAT64)) return new ipaddr.IPv4(bytes.slice(12))
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6))
  return undefined
}

// The words for a refused range, or null for public unicast.
function refusedRange (ip: Ip): string | null {
  const range = ip.range()
  if (ip.kind() === 'ipv4') return range === 'unicast' ? null : IPV4_WORDS[range] ?? 'reserved'
  if (range === 'unicast' && !ip.match(IETF_RESERVED_V6)) return null
  return IPV6_WORDS[range] ?? 'reserved'
}

function parseNetwork (cidr: string): Network {
  try {
    return cidr.includes('/') ? ipaddr.parseCIDR(cidr) : [ipaddr.parse(cidr), cidr.includes(':') ? 128 : 32]
  } catch {
    throw new InvalidPluginOptions(`push_notifications.config.allowed_networks: "${cidr}" is not a CIDR`)
  }
}

function isLocalhostName (name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost')
}

export function createUrlPolicy (opts: UrlPolicyOptions): UrlPolicy {
  const networks = opts.allowedNetworks.map(parseNetwork)
  const domains = opts.allowedDomains.map(glob => picomatch(glob, { nocase: true, dot: true }))
  const resolve = opts.resolve ?? (hostname => dnsLookup(hostname, { all: true }))

  const allowed = (ip: Ip): boolean => networks.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits))

  // The reason an address is refused, or null. An embedded IPv4 address is judged, and exempted, as itself.
  function refuse (ip: Ip): string | null {
    const v4 = ip.kind() === 'ipv6' ? embeddedIPv4(ip as ipaddr.IPv6) : undefined
    const words = refusedRange(v4 ?? ip)
    if (words === null || allowed(ip) || (v4 !== undefined && allowed(v4))) return null
    return `${words} address ${ip.toString()}${v4 === undefined ? '' : ` (${v4.toString()})`} is not allowed ${ALLOW_NETWORK}`
  }

  function checkUrl (input: string): UrlCheck {
    let url: URL
    try {
      url = new URL(input)
    } catch {
      return { ok: false, reason: 'url: not a valid URL' }
    }
    const scheme = url.protocol.slice(0, -1)
    if (scheme !== 'http' && scheme !== 'https') {
      return { ok: false, reason: `url: scheme "${scheme}" is not allowed; use http or https` }
    }
    if (opts.requireHttps && scheme !== 'https') return { ok: false, reason: `url: must use https ${ALLOW_HTTP}` }
    // Credentials belong in `authentication`, where results hide them; in the URL they would be echoed and logged.
    if (url.username !== '' || url.password !== '') {
      return { ok: false, reason: 'url: credentials in the URL are not allowed; use authentication' }
    }
    // WHATWG URL has already turned decimal, hex, octal and short IPv4 forms into a dotted quad.
    const ipv6 = url.hostname.startsWith('[')
    const host = ipv6 ? url.hostname.slice(1, -1) : url.hostname.replace(/\.$/, '')
    const ip = ipv6 || ipaddr.IPv4.isValidFourPartDecimal(host) ? ipaddr.parse(host) : undefined
    if (ip === undefined && (host.length > 253 || !host.split('.').every(label => LABEL.test(label)))) {
      return { ok: false, reason: `url: "${url.hostname}" is not a valid host name` }
    }
    if (opts.exempt?.(url) === true) return { ok: true, url }
    if (opts.validateUrls) {
      const reason = ip !== undefined
        ? refuse(ip)
        : isLocalhostName(host) && !LOOPBACKS.some(allowed) ? `localhost name ${host} is not allowed ${ALLOW_LOCALHOST}` : null
      if (reason !== null) return { ok: false, reason: `url: ${reason}` }
    }
    if (domains.length > 0 && !domains.some(match => match(host))) {
      return { ok: false, reason: `url: host ${host} is not in the allowed domains ${ALLOW_DOMAIN}` }
    }
    return { ok: true, url }
  }

  function checkAddress (address: string, family?: number): string | null {
    if (!opts.validateUrls) return null
    if (!ipaddr.isValid(address)) return `${address} is not an IP address`
    const ip = ipaddr.parse(address)
    if (family !== undefined && family !== 0 && family !== (ip.kind() === 'ipv4' ? 4 : 6)) {
      return `${address} is not an IPv${family} address`
    }
    return refuse(ip)
  }

  // Every resolved address is checked, not only the one used, since the connection may fall back to any of them.
  async function resolveSafely (hostname: string, family: number): Promise<LookupAddress[]> {
    const all = await resolve(hostname)
    const addresses = family === 0 ? all : all.filter(a => a.family === family)
    if (addresses.length === 0) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname })
    }
    for (const { address, family } of addresses) {
      const reason = checkAddress(address, family)
      if (reason !== null) throw Object.assign(new UnsafeAddress(hostname, reason), { hostname, address })
    }
    return addresses
  }

  const lookup: LookupFunction = (hostname, options, callback) => {
    resolveSafely(hostname, FAMILIES[String(options.family)] ?? 0).then(addresses => {
      if (options.all === true) callback(null, addresses)
      else callback(null, addresses[0].address, addresses[0].family)
    }, (err: NodeJS.ErrnoException) => callback(err, ''))
  }

  return {
    checkUrl,
    assertUrl (input) {
      const res = checkUrl(input)
      if (!res.ok) throw invalidParams(res.reason)
      return res.url
    },
    checkAddress,
    lookup
  }
}
