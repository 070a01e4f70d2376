/**
 * Where a webhook may be sent. A subscriber chooses the URL and reads the delivery log, so a
 * target inside the server's own network would let any account probe it (and read the answers'
 * status codes). Only public unicast addresses are targets; loopback only when the operator opts
 * in (ERM3_WEBHOOK_ALLOW_LOOPBACK, development and tests), and plain http only to loopback.
 *
 * The check runs twice: on the URL when a subscription is created or changed (address literals,
 * in every numeric form the URL parser accepts, and names that are local by definition), and at
 * every delivery on what the name resolves to then. The delivery resolves once, refuses the
 * target if any address is not allowed, and connects only to the addresses it checked: a name
 * re-pointed between the check and the connection (DNS rebinding) has nothing left to re-point.
 */
import { lookup } from 'node:dns/promises'
import { isIP, type LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { AppError } from '../../platform/errors.ts'

export interface TargetPolicy {
  /** ERM3_WEBHOOK_ALLOW_LOOPBACK: loopback targets (and http to them) for development and tests. */
  allowLoopback: boolean
}

/** What an address reaches: the public internet, this machine, or anything else (refused). */
export type AddressKind = 'public' | 'loopback' | 'refused'

/** 2000::/3, the only IPv6 space allocated for global unicast; the rest is reserved or local. */
const GLOBAL_UNICAST: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3]
/** The well-known NAT64 prefix (RFC 6052): the low 32 bits are the IPv4 address it translates to. */
const NAT64: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('64:ff9b::'), 96]

/** A URL's hostname without the brackets of an IPv6 literal. */
const bare = (hostname: string) => hostname.replace(/^\[|\]$/g, '')

function ipv4Kind(a: ipaddr.IPv4): AddressKind {
  const range = a.range()
  // ipaddr's 'unicast' is what is left after its table: private, CGNAT, link-local, loopback,
  // unspecified, broadcast, multicast, 192.0.0.0/24, documentation, benchmarking, 240/4, AS112, AMT.
  return range === 'unicast' ? 'public' : range === 'loopback' ? 'loopback' : 'refused'
}

/**
 * Classifies one address as the resolver or the URL parser writes it. IPv6 forms that carry an
 * IPv4 address are judged by that address: IPv4-mapped and -translated ones reach it directly;
 * NAT64 and 6to4 ones through a gateway, so they are public only when it is.
 */
export function addressKind(text: string): AddressKind {
  const family = isIP(text)
  if (family === 4) return ipv4Kind(ipaddr.IPv4.parse(text))
  if (family !== 6) return 'refused'
  // ipaddr reads the dotted IPv4-compatible form `::a.b.c.d` as IPv4-mapped (`::ffff:a.b.c.d`), a
  // different address: the URL serialiser's hexadecimal form is read as written. A zone
  // (`fe80::1%eth0`) belongs to a link-local address, refused either way.
  const v6 = ipaddr.IPv6.parse(bare(new URL(`http://[${text.split('%')[0]}]/`).hostname))
  const range = v6.range()
  const bytes = v6.toByteArray()
  if (range === 'loopback') return 'loopback'
  if (range === 'ipv4Mapped' || range === 'rfc6145') return ipv4Kind(new ipaddr.IPv4(bytes.slice(12)))
  if (v6.match(NAT64)) return ipv4Kind(new ipaddr.IPv4(bytes.slice(12))) === 'public' ? 'public' : 'refused'
  if (range === '6to4')
    return ipv4Kind(new ipaddr.IPv4(bytes.slice(2, 6))) === 'public' ? 'public' : 'refused'
  // Teredo, the local-use NAT64 prefix, ULA, link-local, multicast, documentation, IPv4-compatible …
  return range === 'unicast' && v6.match(GLOBAL_UNICAST) ? 'public' : 'refused'
}

/**
 * Suffixes of names that never lead to a public server: the special-use names (RFC 6761 test and
 * invalid, 6762 local, 7686 onion, 8375 home.arpa, 9476 alt), ICANN's private-use internal, and
 * the private suffixes RFC 6762 appendix G lists as common (plus localdomain).
 */
const LOCAL_SUFFIXES = [
  ...['test', 'invalid', 'local', 'onion', 'home.arpa', 'alt', 'internal'],
  ...['intranet', 'private', 'corp', 'home', 'lan', 'localdomain'],
]

/**
 * What a host name is before any lookup: 'loopback' (localhost), 'refused' (a single label,
 * resolved through the server's search domains, or a local suffix), or null (decided by what it
 * resolves to). Trailing dots are ignored: `localhost.` is localhost.
 */
function nameKind(host: string): AddressKind | null {
  const name = host.toLowerCase().replace(/\.+$/, '')
  if (name === 'localhost' || name.endsWith('.localhost')) return 'loopback'
  if (!name.includes('.')) return 'refused'
  return LOCAL_SUFFIXES.some((s) => name === s || name.endsWith(`.${s}`)) ? 'refused' : null
}

/** Whether a target of this kind may be sent to over this protocol. */
function allowed(kind: AddressKind | null, protocol: string, policy: TargetPolicy): boolean {
  if (kind === 'loopback') return policy.allowLoopback
  return kind !== 'refused' && protocol === 'https:'
}

/**
 * The URL of a subscription, checked when it is created or changed: https (http only to a
 * loopback host, with the operator's opt-in), no credentials or fragment, and not an address or
 * name that is local by definition. The hostname is judged after the WHATWG parser has
 * normalised it, so `2130706433`, `0x7f.1`, `0177.0.0.1` and `127.0.0.1.` are all 127.0.0.1.
 * Returns the normalised URL.
 */
export function checkTargetUrl(raw: string, policy: TargetPolicy): string {
  const bad = (why: string) =>
    new AppError('INVALID_REQUEST', `url: ${why}`, { fields: [{ field: 'url', message: why }] })
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw bad('not a valid absolute URL')
  }
  if (u.username || u.password) throw bad('must not carry credentials (user:password@)')
  if (u.hash) throw bad('must not carry a #fragment')
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw bad('must use https')
  const host = bare(u.hostname)
  const kind = isIP(host) ? addressKind(host) : nameKind(host)
  if (kind === 'refused' || (kind === 'loopback' && !policy.allowLoopback))
    throw bad('must point to a public address (not loopback, private, link-local or reserved)')
  if (!allowed(kind, u.protocol, policy))
    throw bad('must use https (http is accepted only for a loopback host on a development server)')
  return u.toString()
}

/** Resolves a host name to every address (dns.lookup with all: true); the tests inject theirs. */
export type ResolveHost = (host: string) => Promise<{ address: string; family: number }[]>

export const systemResolve: ResolveHost = (host) => lookup(host, { all: true })

/** What the delivery log says of a refused target: the same for every reason, no address named. */
const TARGET_REFUSED = 'target refused: not a public address'
/** Every failure before a connection (no such name, refused, unreachable, no answer in time). */
export const COULD_NOT_CONNECT = 'could not connect'

/** A delivery that failed for a reason the subscriber may read (one of a few fixed phrases). */
export class DeliveryFailed extends Error {}

export interface PinnedTarget {
  /** For http(s).request: answers with the checked addresses only, never resolving again. */
  lookup: LookupFunction
}

/**
 * Resolves the URL's host once and checks every address; any one not allowed refuses the target
 * (a name with one public and one private address is refused). Throws DeliveryFailed.
 */
export async function pinTarget(url: URL, policy: TargetPolicy, resolve: ResolveHost): Promise<PinnedTarget> {
  const host = bare(url.hostname)
  const family = isIP(host)
  let addresses: { address: string; family: number }[]
  if (family) addresses = [{ address: host, family }]
  else {
    if (nameKind(host) === 'refused') throw new DeliveryFailed(TARGET_REFUSED)
    try {
      addresses = await resolve(host)
    } catch {
      throw new DeliveryFailed(COULD_NOT_CONNECT)
    }
    if (addresses.length === 0) throw new DeliveryFailed(COULD_NOT_CONNECT)
  }
  // Over http every address must be loopback (allowed() says so), not merely public.
  if (!addresses.every((a) => allowed(addressKind(a.address), url.protocol, policy)))
    throw new DeliveryFailed(TARGET_REFUSED)
  const pinned = addresses.map((a) => ({ address: a.address, family: isIP(a.address) }))
  const pinnedLookup: LookupFunction = (name, options, callback) => {
    const fit = pinned.filter((a) => !options.family || a.family === options.family)
    const first = fit[0]
    if (bare(name) !== host || !first) {
      const err: NodeJS.ErrnoException = Object.assign(new Error(`no checked address for ${name}`), {
        code: 'ENOTFOUND',
      })
      callback(err, '', 0)
    } else if (options.all) callback(null, fit)
    else callback(null, first.address, first.family)
  }
  return { lookup: pinnedLookup }
}
