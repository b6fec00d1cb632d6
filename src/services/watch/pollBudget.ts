/**
 * A provider's poll budget: how many polls per second the watch list may send it. It starts
 * unlimited (the polls asked go out on time); a 429 halves it (from the rate observed in the
 * last second when unlimited) and pauses polling until its Retry-After; each answered poll
 * raises it again by a small step, until it is far enough above what is asked to be unlimited
 * again (additive increase, multiplicative decrease). Plain data, changed in place.
 */
export interface PollBudget {
  /** Polls per second allowed; Infinity when unlimited. */
  limit: number
  /** Polls that may go now (a token bucket holding at most one second's worth). */
  tokens: number
  /** When tokens were last added (epoch ms). */
  filledAt: number
  /** No poll goes before this (epoch ms): the provider's Retry-After. */
  pausedUntil: number
  /** Polls taken in the current one-second window, and the window's start. */
  windowCount: number
  windowStart: number
  /** Polls taken in the last whole window: the rate a 429 halves. */
  lastRate: number
  /** Back to unlimited once the limit grows past this: a few times the rate that drew the last 429. */
  unlimitedFrom: number
}

/** The lowest a 429 takes a budget to: one poll a second still finds generations that ended. */
export const MIN_POLLS_PER_SECOND = 1

/** A budget this many times the rate that drew its 429 is no budget any more. */
const UNLIMITED_AFTER = 4

export const openBudget = (now: number): PollBudget => ({
  limit: Infinity,
  tokens: 0,
  filledAt: now,
  pausedUntil: 0,
  windowCount: 0,
  windowStart: now,
  lastRate: 0,
  unlimitedFrom: Infinity
})

const countWindow = (budget: PollBudget, now: number) => {
  if (now - budget.windowStart < 1_000) return
  budget.lastRate = now - budget.windowStart < 2_000 ? budget.windowCount : 0
  budget.windowCount = 0
  budget.windowStart = now
}

/** Whether one poll may go at `now`; counts it when it may. */
export const takePoll = (budget: PollBudget, now: number): boolean => {
  if (now < budget.pausedUntil) return false
  countWindow(budget, now)
  if (budget.limit !== Infinity) {
    budget.tokens = Math.min(budget.limit, budget.tokens + ((now - budget.filledAt) / 1_000) * budget.limit)
    budget.filledAt = now
    if (budget.tokens < 1) return false
    budget.tokens -= 1
  }
  budget.windowCount++
  return true
}

/** The provider answered 429: halve the budget and wait out its Retry-After (at least a second). */
export const throttled = (budget: PollBudget, now: number, retryAfterMs: number | undefined): void => {
  countWindow(budget, now)
  const observed = Math.max(budget.lastRate, budget.windowCount)
  const from = budget.limit === Infinity ? observed : Math.min(budget.limit, Math.max(observed, MIN_POLLS_PER_SECOND))
  budget.limit = Math.max(MIN_POLLS_PER_SECOND, from / 2)
  budget.unlimitedFrom = UNLIMITED_AFTER * Math.max(MIN_POLLS_PER_SECOND, from)
  budget.tokens = 0
  budget.pausedUntil = Math.max(budget.pausedUntil, now + Math.max(1_000, retryAfterMs ?? 0))
  budget.filledAt = budget.pausedUntil
}

/** A poll was answered: the budget grows back by a step (a twentieth of a poll per second per answer, at least). */
export const answered = (budget: PollBudget): void => {
  if (budget.limit === Infinity) return
  budget.limit += Math.max(0.05, budget.limit * 0.002)
  if (budget.limit >= budget.unlimitedFrom) budget.limit = Infinity
}
