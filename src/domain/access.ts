import ipaddr from "ipaddr.js"
import type { Scope } from "./account.js"

/** An empty scope list grants every operation (spec section 5.4). */
export const hasScope = (scopes: ReadonlyArray<Scope>, needed: Scope): boolean =>
  scopes.length === 0 || scopes.includes(needed)

type Address = ipaddr.IPv4 | ipaddr.IPv6
type Range = readonly [Address, number]

/**
 * Dotted IPv4 must have four decimal parts: ipaddr.js also takes inet_aton forms such as
 * "1.2.3" or "0x7f.1", which nobody writes in an allow-list on purpose.
 */
const isValidText = (text: string): boolean =>
  text.includes(":") ? ipaddr.IPv6.isValid(text) : ipaddr.IPv4.isValidFourPartDecimal(text)

/** IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are treated as the IPv4 address they carry. */
const parseAddress = (text: string): Address | undefined => {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  const zoneless = bare.split("%")[0]!
  return isValidText(zoneless) ? ipaddr.process(zoneless) : undefined
}

/** A single address or a CIDR range; IPv4-mapped ranges become IPv4 ranges. */
export const parseAllowedEntry = (entry: string): Range | undefined => {
  const text = entry.trim()
  if (!text.includes("/")) {
    const address = parseAddress(text)
    return address === undefined ? undefined : [address, address.kind() === "ipv4" ? 32 : 128]
  }
  if (!ipaddr.isValidCIDR(text) || !isValidText(text.slice(0, text.indexOf("/")))) return undefined
  const [address, bits] = ipaddr.parseCIDR(text)
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    return bits >= 96 ? [(address as ipaddr.IPv6).toIPv4Address(), bits - 96] : undefined
  }
  return [address, bits]
}

export const invalidAllowedEntries = (entries: ReadonlyArray<string>): ReadonlyArray<string> =>
  entries.filter((e) => parseAllowedEntry(e) === undefined)

/**
 * An empty list allows every address. A key with a list fails closed when the client address
 * is unknown or unparsable.
 */
export const ipAllowed = (allowed: ReadonlyArray<string>, client: string | undefined): boolean => {
  if (allowed.length === 0) return true
  const address = client === undefined ? undefined : parseAddress(client)
  if (address === undefined) return false
  return allowed.some((entry) => {
    const range = parseAllowedEntry(entry)
    return range !== undefined && range[0].kind() === address.kind() && address.match(range as [Address, number])
  })
}
