import ipaddr from "ipaddr.js"

/** Failed authentications a client may make in a minute; its next attempt is refused before any key or token is checked. */
export const AUTH_FAILURES_PER_MINUTE = 30

const BUCKET_MS = 60_000

/** The clock minute a moment falls in: stores keep one failure counter per client and minute. */
export const failureBucket = (nowMs: number): number => Math.floor(nowMs / BUCKET_MS)

/** A client's failures in the current minute bucket and in the one before. */
export interface RecentFailures {
  readonly current: number
  readonly previous: number
}

/**
 * Whole seconds until the client may try again, or 0 when it may now. This minute's failures
 * and the last minute's count together, so no 60 seconds ever let more than the limit through
 * (a minute counted alone would let twice the limit through across its edge); a failure stops
 * counting one to two minutes after it was made.
 */
export const authRetryAfterSeconds = (failures: RecentFailures, nowMs: number): number => {
  if (failures.current + failures.previous < AUTH_FAILURES_PER_MINUTE) return 0
  const nextMinute = (failureBucket(nowMs) + 1) * BUCKET_MS
  // At the next minute the last minute's failures drop out; this minute's drop out one minute later.
  const freeAt = failures.current >= AUTH_FAILURES_PER_MINUTE ? nextMinute + BUCKET_MS : nextMinute
  return Math.max(1, Math.ceil((freeAt - nowMs) / 1000))
}

/**
 * Whom failures are counted against: an IPv4 address (IPv4-mapped IPv6 included), or an IPv6
 * address's /64, since one host is usually given a whole /64 and could walk through it. Clients
 * whose address is unknown (a mount that passes none) share one count: failing closed, as
 * allow-lists do.
 */
export const throttleKeyOf = (clientAddress: string | undefined): string => {
  const bare = clientAddress?.replace(/^\[|\]$/g, "").split("%")[0]
  if (bare === undefined || !ipaddr.isValid(bare)) return "unknown"
  const address = ipaddr.process(bare)
  if (address.kind() === "ipv4") return address.toString()
  const prefix = ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/64`)
  return `${prefix.toString()}/64`
}
