import ipaddr from "ipaddr.js"

/** The webhook targets to refuse (docs/webhooks.md), after resolving every A and AAAA record. */
const FORBIDDEN_V4 = [
  "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
  "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
  "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4"
].map((c) => ipaddr.parseCIDR(c))

const FORBIDDEN_V6 = [
  "::/128", "::1/128", "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/32",
  "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "ff00::/8"
].map((c) => ipaddr.parseCIDR(c))

/**
 * True when a resolved address may not receive webhooks: anything but global unicast (ipaddr.js's
 * `range()`), so loopback, private, link-local (cloud metadata at 169.254.169.254 included),
 * CGNAT, multicast, reserved, documentation, unspecified, site-local (fec0::/10), IPv4-translated
 * (::ffff:0:0:0/96) and IPv6 forms that embed or tunnel IPv4; and the lists above besides.
 * IPv4-mapped IPv6 is judged by the IPv4 address it carries. An address that does not parse is
 * refused.
 */
export const isForbiddenAddress = (address: string): boolean => {
  if (!ipaddr.isValid(address)) return true
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    return isForbiddenAddress((parsed as ipaddr.IPv6).toIPv4Address().toString())
  }
  if (parsed.range() !== "unicast") return true
  const ranges = parsed.kind() === "ipv4" ? FORBIDDEN_V4 : FORBIDDEN_V6
  return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
}
