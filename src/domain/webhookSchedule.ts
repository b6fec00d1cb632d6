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
  retryAfterSeconds?: number,
  delaysMs: ReadonlyArray<number> = RETRY_DELAYS_MS
): number | undefined => {
  const scheduled = delaysMs[attemptsMade - 1]
  if (scheduled === undefined) return undefined
  const longest = Math.max(...delaysMs)
  const delay = retryAfterSeconds === undefined ? scheduled : Math.min(longest, Math.max(scheduled, retryAfterSeconds * 1000))
  return now + delay
}

/** Retry-After as seconds or an HTTP date; undefined when absent or unreadable. */
export const parseRetryAfter = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

/** The reason a timed-out attempt is recorded with, the same whichever side's timer fired. */
export const deadlineReason = (deadlineMs: number) =>
  `timed out: no complete answer within ${deadlineMs / 1000} s (the deadline covers DNS, connect, TLS, headers and body)`
