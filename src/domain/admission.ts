import type { RateLimits } from "./catalog.js"
import { RateLimitExceeded, rateLimitRetryAfter, type WindowUsage } from "./rateLimit.js"
import { Refusal } from "./refusal.js"

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
export const refuseSubmit = (facts: AdmissionFacts): RateLimitExceeded | ConcurrentJobsExceeded | InsufficientBalance | undefined => {
  const retryAfter = rateLimitRetryAfter(facts.rateLimits, facts.minute, facts.day, facts.now)
  if (retryAfter !== undefined) {
    return new RateLimitExceeded({
      message: "This model version's rate limit for the account is reached",
      details: { requestsPerMinute: facts.rateLimits.requestsPerMinute, requestsPerDay: facts.rateLimits.requestsPerDay },
      retryAfterSeconds: retryAfter
    })
  }
  if (facts.activeJobs >= facts.maxConcurrentJobs) {
    return new ConcurrentJobsExceeded({ message: "The account's maximum of concurrent jobs is reached", details: {
      maxConcurrentJobs: facts.maxConcurrentJobs
    } })
  }
  if (facts.balanceMicroCents < facts.costMicroCents) {
    return new InsufficientBalance({ message: "The account's balance does not cover the job's cost", details: {
      requiredMicroCents: facts.costMicroCents,
      balanceMicroCents: facts.balanceMicroCents
    } })
  }
  return undefined
}

export const idempotencyConflict = (key: string): IdempotencyKeyReused =>
  new IdempotencyKeyReused({
    message: "This Idempotency-Key was used with a different request body",
    details: { idempotencyKey: key }
  })

// What admission refuses (spec section 7, job submission codes), besides the rate limit (rateLimit.ts) and budgets (budget.ts).

/** The input does not match the model's schema, or prices the job past what an account can hold. */
export class InvalidInput extends Refusal<InvalidInput>()("InvalidInput", { code: "INVALID_INPUT", status: 400 }) {}

/** The account's maximum of concurrent jobs is reached. */
export class ConcurrentJobsExceeded extends Refusal<ConcurrentJobsExceeded>()("ConcurrentJobsExceeded", {
  code: "CONCURRENT_JOBS_EXCEEDED",
  status: 429
}) {}

/** The account's balance does not cover the job's cost. */
export class InsufficientBalance extends Refusal<InsufficientBalance>()("InsufficientBalance", { code: "INSUFFICIENT_BALANCE", status: 402 }) {}

/** The Idempotency-Key was used with a different request. */
export class IdempotencyKeyReused extends Refusal<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  code: "IDEMPOTENCY_KEY_REUSED",
  status: 409
}) {}
