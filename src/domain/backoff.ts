/** Capped exponential backoff. */
export interface Backoff {
  /** The first retry's ceiling. */
  readonly baseMs: number
  /** No retry's ceiling grows past this. */
  readonly capMs: number
}

/**
 * The wait before retry number `attempt` (0 for the first): full jitter, a uniform draw below
 * `min(capMs, baseMs * 2^attempt)`, so many callers failing together spread their retries; never
 * sooner than `retryAfterMs` (a provider's Retry-After). `random` is a draw in [0, 1).
 */
export const backoffDelayMs = (backoff: Backoff, attempt: number, random: number, retryAfterMs?: number): number => {
  const ceiling = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.min(attempt, 52))
  return Math.max(retryAfterMs ?? 0, Math.floor(random * ceiling))
}
