import type { RateLimits } from "./catalog.js"
import { engineError, type EngineError } from "./errors.js"
import { rateLimitRetryAfter, type WindowUsage } from "./rateLimit.js"

/** What a store reads, inside its atomic unit, to decide on a submit. */
export interface AdmissionFacts {
  readonly now: number
  readonly costMicroCents: number
  readonly balanceMicroCents: number
  /** pending + processing jobs of the account. */
  readonly activeJobs: number
  readonly maxConcurrentJobs: number
  readonly rateLimits: RateLimits
  readonly minute: WindowUsage
  readonly day: WindowUsage
}

/**
 * Every adapter decides a submit with this one function, so the order of refusals is the same
 * everywhere: rate limit, then concurrency, then balance. Undefined means admit.
 */
export const refuseSubmit = (facts: AdmissionFacts): EngineError | undefined => {
  const retryAfter = rateLimitRetryAfter(facts.rateLimits, facts.minute, facts.day, facts.now)
  if (retryAfter !== undefined) {
    return engineError(
      "RATE_LIMIT_EXCEEDED",
      "This model version's rate limit for the account is reached",
      { requestsPerMinute: facts.rateLimits.requestsPerMinute, requestsPerDay: facts.rateLimits.requestsPerDay },
      retryAfter
    )
  }
  if (facts.activeJobs >= facts.maxConcurrentJobs) {
    return engineError("CONCURRENT_JOBS_EXCEEDED", "The account's maximum of concurrent jobs is reached", {
      maxConcurrentJobs: facts.maxConcurrentJobs
    })
  }
  if (facts.balanceMicroCents < facts.costMicroCents) {
    return engineError("INSUFFICIENT_BALANCE", "The account's balance does not cover the job's cost", {
      requiredMicroCents: facts.costMicroCents,
      balanceMicroCents: facts.balanceMicroCents
    })
  }
  return undefined
}

export const idempotencyConflict = (key: string): EngineError =>
  engineError(
    "IDEMPOTENCY_KEY_REUSED",
    "This Idempotency-Key was used with a different request body",
    { idempotencyKey: key }
  )
