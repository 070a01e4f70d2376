import ipaddr from 'ipaddr.js'

/**
 * Client addresses: who a per-address limit counts, and which peers may say who the client is.
 *
 * A per-address limit keyed on the exact address string is no limit for an IPv6 client: one
 * subscriber holds a whole /64 (2^64 addresses) and picks a new one per request. So a limit counts
 * an IPv6 client by its network prefix (ERM3_IPV6_PREFIX, default /64), an IPv4 client by its
 * address; the two spellings of one IPv4 client (`::ffff:a.b.c.d` from a dual-stack socket, and
 * the NAT64 `64:ff9b::a.b.c.d` of RFC 6052) count as that IPv4 address.
 */

/** The subject of what is not an address (a peer gone before it was read): one shared bucket. */
const NOT_AN_ADDRESS = 'unknown'

/** The RFC 6052 well-known NAT64 prefix, whose last 32 bits are the IPv4 client. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96')

/**
 * The subject a per-address limit counts `address` under: IPv4 as is (canonical dotted quad), an
 * IPv4-mapped or NAT64 IPv6 address as its IPv4, any other IPv6 address as its /`ipv6Prefix`
 * network (`2001:db8:1:2::/64`). Anything else — no address, garbage a proxy passed on — shares
 * one subject, so inventing values gains nothing.
 */
export function limitSubject(address: string | undefined, ipv6Prefix: number): string {
  if (address === undefined || !ipaddr.isValid(address)) return NOT_AN_ADDRESS
  const ip = ipaddr.process(address)
  if (ip.kind() === 'ipv4') return ip.toString()
  const v6 = ip as ipaddr.IPv6
  if (v6.match(NAT64)) return ipaddr.fromByteArray(v6.toByteArray().slice(12)).toString()
  const bytes = v6.toByteArray()
  for (let bit = ipv6Prefix; bit < 128; bit++) {
    const i = bit >> 3
    bytes[i] = bytes[i] & ~(0x80 >> (bit & 7))
  }
  // fromByteArray drops any zone (`%eth0`): one network is one subject whatever the interface.
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6Prefix}`
}

/** The names TRUST_PROXY accepts for whole ranges (as proxy-addr and Express name them). */
const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number]

/**
 * Parses TRUST_PROXY's comma-separated list: addresses, CIDR ranges and the names `loopback`,
 * `linklocal`, `uniquelocal`. Throws an Error naming the first entry that is none of these.
 */
export function parseTrustedProxies(list: readonly string[]): Range[] {
  const ranges: Range[] = []
  for (const entry of list) {
    const named = NAMED_RANGES[entry]
    if (named) {
      for (const r of named) ranges.push(ipaddr.parseCIDR(r))
      continue
    }
    if (ipaddr.isValidCIDR(entry)) {
      const [ip, bits] = ipaddr.parseCIDR(entry)
      // An IPv4-mapped range is the IPv4 range it maps (addresses are compared as IPv4).
      if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96)
        ranges.push([(ip as ipaddr.IPv6).toIPv4Address(), bits - 96])
      else ranges.push([ip, bits])
    } else if (ipaddr.isValid(entry)) {
      const ip = ipaddr.process(entry)
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128])
    } else throw new Error(`${JSON.stringify(entry)} is not an address, a CIDR range or a range name`)
  }
  return ranges
}

/**
 * Whether a peer at `address` is one of the trusted proxies: their X-Forwarded-For entries are
 * believed, and the connection cap does not count them (they carry many clients' connections).
 */
export function trustedProxyTest(list: readonly string[]): (address: string | undefined) => boolean {
  const ranges = parseTrustedProxies(list)
  if (ranges.length === 0) return () => false
  return (address) => {
    if (address === undefined || !ipaddr.isValid(address)) return false
    const ip = ipaddr.process(address)
    for (const [net, bits] of ranges) if (net.kind() === ip.kind() && ip.match(net, bits)) return true
    return false
  }
}
