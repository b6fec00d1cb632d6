import { Data } from "effect"
import ipaddr from "ipaddr.js"
import { isIP } from "node:net"

/** The targets the engine refuses to reach (docs/webhooks.md, docs/providers.md), after resolving every A and AAAA record. */
const FORBIDDEN_V4 = [
  "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
  "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
  "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4"
].map((c) => ipaddr.parseCIDR(c))

/**
 * The only IPv6 addresses reached: global unicast (RFC 4291, 2.4). ipaddr.js's `unicast` range is
 * "none of its named ranges", which lets reserved space such as 1::1 or 4000::1 through.
 */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3")

/**
 * Special ranges inside 2000::/3: Teredo, documentation (RFC 3849, RFC 9637), 6to4. The design
 * notes' other IPv6 ranges (::/96, 64:ff9b::/96, 100::/64, fc00::/7 ...) lie outside 2000::/3.
 */
const FORBIDDEN_V6 = ["2001::/32", "2001:db8::/32", "2002::/16", "3fff::/20"].map((c) => ipaddr.parseCIDR(c))

/**
 * True when a resolved address may not be reached by a webhook or an output download. IPv4:
 * anything but ipaddr.js's `unicast`, so loopback, private, link-local (cloud metadata at
 * 169.254.169.254 included), CGNAT, multicast, reserved, documentation, unspecified; and the list
 * above besides. IPv6: anything outside 2000::/3 (loopback, unique local, link-local, site-local,
 * multicast, the IPv4-compatible, IPv4-translated and NAT64 forms, reserved space), its named
 * special ranges and the list above. IPv4-mapped IPv6 is judged by the IPv4 address it carries.
 * An address that does not parse is refused.
 */
export const isForbiddenAddress = (address: string): boolean => {
  if (!ipaddr.isValid(address)) return true
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6
    if (v6.isIPv4MappedAddress()) return isForbiddenAddress(v6.toIPv4Address().toString())
    if (!v6.match(GLOBAL_UNICAST_V6)) return true
  }
  if (parsed.range() !== "unicast") return true
  const ranges = parsed.kind() === "ipv4" ? FORBIDDEN_V4 : FORBIDDEN_V6
  return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
}

/**
 * The address a URL names that may not be reached, when its host is an address rather than a
 * name. Names are judged once resolved, by whoever dials them; an address is never resolved, so
 * it is judged here. The URL parser has already turned `2130706433` or `0x7f.1` into `127.0.0.1`.
 */
export const forbiddenHostOf = (url: URL): string | undefined => {
  const host = url.hostname.replace(/^\[|\]$/g, "")
  return isIP(host) !== 0 && isForbiddenAddress(host) ? host : undefined
}

/**
 * Why an output download may not go to `url` (its scheme, or an address in it that is not
 * public unless `allowPrivate`), or undefined when it may be tried: a name is then checked once
 * resolved, by the client that dials it.
 */
export const outputUrlRefusal = (url: string, allowPrivate: boolean): string | undefined => {
  if (!URL.canParse(url)) return "it is not a URL"
  const parsed = new URL(url)
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return `${parsed.protocol} URLs are not fetched`
  const forbidden = forbiddenHostOf(parsed)
  return forbidden !== undefined && !allowPrivate ? `${forbidden} is not a public address` : undefined
}

/**
 * A target the guard refused before connecting. Dialers hand it to the socket (a lookup's
 * callback, a fetch's rejection), so whoever asked can tell a refusal from an outage.
 */
export class AddressRefused extends Data.TaggedError("AddressRefused")<{ readonly message: string }> {}
