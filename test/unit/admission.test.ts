import { describe, expect, it } from "vitest"
import { refuseSubmit } from "../../src/domain/admission.js"
import { rateLimitRetryAfter } from "../../src/domain/rateLimit.js"

const NOW = 1_000_000_000
const none = { count: 0, oldest: null }

describe("rate-limit windows", () => {
  it("treats 0 as no limit", () => {
    expect(rateLimitRetryAfter({ requestsPerMinute: 0, requestsPerDay: 0 }, { count: 99, oldest: NOW }, { count: 99, oldest: NOW }, NOW)).toBeUndefined()
  })

  it("answers the whole seconds until the oldest job leaves the window, at least 1", () => {
    const limits = { requestsPerMinute: 2, requestsPerDay: 0 }
    expect(rateLimitRetryAfter(limits, { count: 1, oldest: NOW - 10_000 }, none, NOW)).toBeUndefined()
    expect(rateLimitRetryAfter(limits, { count: 2, oldest: NOW - 10_000 }, none, NOW)).toBe(50)
    expect(rateLimitRetryAfter(limits, { count: 2, oldest: NOW - 10_500 }, none, NOW)).toBe(50)
    expect(rateLimitRetryAfter(limits, { count: 2, oldest: NOW - 59_999 }, none, NOW)).toBe(1)
  })

  it("takes the longer wait when both windows are full", () => {
    const limits = { requestsPerMinute: 1, requestsPerDay: 1 }
    expect(rateLimitRetryAfter(limits, { count: 1, oldest: NOW - 1_000 }, { count: 1, oldest: NOW - 1_000 }, NOW)).toBe(86_399)
  })
})

describe("admission of a submit", () => {
  const facts = {
    now: NOW,
    costMicroCents: 100,
    balanceMicroCents: 100,
    activeJobs: 0,
    maxConcurrentJobs: 1,
    rateLimits: { requestsPerMinute: 1, requestsPerDay: 0 },
    minute: none,
    day: none
  }

  it("admits a balance exactly equal to the cost", () => {
    expect(refuseSubmit(facts)).toBeUndefined()
  })

  it("refuses in the order rate limit, concurrency, balance", () => {
    const everything = { ...facts, balanceMicroCents: 0, activeJobs: 1, minute: { count: 1, oldest: NOW - 30_000 } }
    expect(refuseSubmit(everything)).toMatchObject({ code: "RATE_LIMIT_EXCEEDED", retryAfterSeconds: 30 })
    expect(refuseSubmit({ ...everything, minute: none })?.code).toBe("CONCURRENT_JOBS_EXCEEDED")
    expect(refuseSubmit({ ...everything, minute: none, activeJobs: 0 })?.code).toBe("INSUFFICIENT_BALANCE")
  })
})
