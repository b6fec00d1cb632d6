import type { RateLimits } from "./catalog.js"

export const MINUTE_MS = 60_000
export const DAY_MS = 24 * 60 * MINUTE_MS

/** What a store counts of an account's recent jobs on one model version. */
export interface WindowUsage {
  readonly count: number
  /** createdAt of the oldest job inside the window, when count > 0. */
  readonly oldest: number | null
}

/**
 * Sliding windows over the account's own jobs: a refused request creates no job, so it uses
 * no allowance. A limit of 0 means no limit. Answers the whole seconds until a slot frees, or
 * undefined when the request may go ahead.
 */
export const rateLimitRetryAfter = (
  limits: RateLimits,
  minute: WindowUsage,
  day: WindowUsage,
  now: number
): number | undefined => {
  const waits: Array<number> = []
  const check = (limit: number, usage: WindowUsage, windowMs: number) => {
    if (limit > 0 && usage.count >= limit) waits.push(Math.max(1, Math.ceil(((usage.oldest ?? now) + windowMs - now) / 1000)))
  }
  check(limits.requestsPerMinute, minute, MINUTE_MS)
  check(limits.requestsPerDay, day, DAY_MS)
  return waits.length === 0 ? undefined : Math.max(...waits)
}
