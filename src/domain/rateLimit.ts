import type { RateLimits } from "./catalog.js"
import { RetryLaterRefusal } from "./refusal.js"

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

/** A window counted by buckets of `bucketMs`: stores keep one counter row per bucket. */
export interface RateWindow {
  readonly windowMs: number
  readonly bucketMs: number
}

/**
 * A minute counted by seconds and a day by minutes: at most 60 and 1,440 rows to add up. A
 * bucket counts while all of its jobs are inside the window (its oldest is), so the one bucket
 * the window's edge cuts through is let go early: the minute slides by the second, the day by
 * the minute, never counting a job that has left.
 */
export const MINUTE_WINDOW: RateWindow = { windowMs: MINUTE_MS, bucketMs: 1_000 }
export const DAY_WINDOW: RateWindow = { windowMs: DAY_MS, bucketMs: MINUTE_MS }

export const bucketOf = (window: RateWindow, at: number) => at - (at % window.bucketMs)

/** The windows a version's limits ask for: a limit of 0 is none, and is neither read nor counted. */
export const limitedWindows = (limits: RateLimits): ReadonlyArray<RateWindow> => [
  ...(limits.requestsPerMinute > 0 ? [MINUTE_WINDOW] : []),
  ...(limits.requestsPerDay > 0 ? [DAY_WINDOW] : [])
]

export const NO_USAGE: WindowUsage = { count: 0, oldest: null }

/** A rate limit (a model version's for the account, or failed authentications from an address) is reached: retry after Retry-After. */
export class RateLimitExceeded extends RetryLaterRefusal<RateLimitExceeded>()("RateLimitExceeded", {
  code: "RATE_LIMIT_EXCEEDED",
  status: 429
}) {}
