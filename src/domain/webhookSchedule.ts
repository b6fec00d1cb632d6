/** Spec 6.1: the initial attempt, then retries after 1, 4, 16, 64 and 256 seconds. */
export const RETRY_DELAYS_SECONDS: ReadonlyArray<number> = [1, 4, 16, 64, 256]
export const RETRY_DELAYS_MS: ReadonlyArray<number> = RETRY_DELAYS_SECONDS.map((s) => s * 1000)
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1

/**
 * When to try again after `attemptsMade` failed attempts, or undefined when the delivery has
 * failed for good. A receiver's Retry-After (on 429 and 503) is honoured within the schedule's
 * bounds: never sooner than the scheduled delay, never later than the longest one. `delaysMs`
 * is the spec's schedule unless a test shortens it.
 */
export const nextAttemptAt = (
  attemptsMade: number,
  now: number,
  retryAfterMs?: number,
  delaysMs: ReadonlyArray<number> = RETRY_DELAYS_MS
): number | undefined => {
  const scheduled = delaysMs[attemptsMade - 1]
  if (scheduled === undefined) return undefined
  const longest = Math.max(...delaysMs)
  const delay = retryAfterMs === undefined ? scheduled : Math.min(longest, Math.max(scheduled, retryAfterMs))
  return now + delay
}

/** The reason a timed-out attempt is recorded with, the same whichever side's timer fired. */
export const deadlineReason = (deadlineMs: number) =>
  `timed out: no complete answer within ${deadlineMs / 1000} s (the deadline covers DNS, connect, TLS, headers and body)`
