import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { refuseSubmit } from "../../src/domain/admission.js"
import { refuseForBudget } from "../../src/domain/budget.js"
import type { AccountId, JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { bucketOf, DAY_WINDOW, MINUTE_WINDOW } from "../../src/domain/rateLimit.js"
import { submitGates } from "../../src/services/jobRepo/submitGates.js"

const NOW = Date.UTC(2026, 10, 28, 13, 45, 12, 345)
const job = (costMicroCents: number) => ({ id: "job_1" as JobId, accountId: "acc_1" as AccountId, createdAt: NOW, costMicroCents }) as Job
const NO_LIMITS = { requestsPerMinute: 0, requestsPerDay: 0 }
/** Whole numbers from `minimum` to `maximum`, both included, for the properties below. */
const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))
const facts = { now: NOW, costMicroCents: 0, balanceMicroCents: 1, activeJobs: 0, maxConcurrentJobs: 1, day: { count: 0, oldest: null } }

describe("submitGates: the bounds a store admits a gated submit on", () => {
  it("none for a plain submit: it takes the one-statement path", () => {
    expect(submitGates({ job: job(1), maxConcurrentJobs: 1, rateLimits: NO_LIMITS })).toBeUndefined()
    expect(submitGates({ job: job(1), maxConcurrentJobs: 1, rateLimits: NO_LIMITS, budgets: [] })).toBeUndefined()
  })

  it("asks only for the windows a version limits, counted in the submit's buckets", () => {
    const gates = submitGates({ job: job(1), maxConcurrentJobs: 1, rateLimits: { requestsPerMinute: 0, requestsPerDay: 5 } })
    expect(gates?.minute).toBeUndefined()
    expect(gates?.day).toEqual({ windowMs: DAY_WINDOW.windowMs, bucket: bucketOf(DAY_WINDOW, NOW), mostBefore: 4 })
    expect(gates?.idempotency).toBeUndefined()
  })

  it("claims the key with the job's id and time", () => {
    const gates = submitGates({
      job: job(1),
      maxConcurrentJobs: 1,
      rateLimits: NO_LIMITS,
      idempotency: { key: "k", requestHash: "h", notBefore: NOW - 10 }
    })
    expect(gates?.idempotency).toEqual({ key: "k", record: { requestHash: "h", jobId: "job_1", createdAt: NOW }, notBefore: NOW - 10 })
  })

  it.prop("a window's bound admits exactly what rateLimitRetryAfter admits", [between(1, 1_000), between(0, 1_100)], ([limit, count]) => {
    const gates = submitGates({ job: job(1), maxConcurrentJobs: 1, rateLimits: { requestsPerMinute: limit, requestsPerDay: 0 } })!
    const refused = refuseSubmit({
      ...facts,
      rateLimits: { requestsPerMinute: limit, requestsPerDay: 0 },
      minute: { count, oldest: NOW - 1_000 }
    })
    expect(gates.minute!.bucket).toBe(bucketOf(MINUTE_WINDOW, NOW))
    expect(count <= gates.minute!.mostBefore).toBe(refused === undefined)
  })

  it.prop(
    "a budget's bound admits exactly what refuseForBudget admits, to the micro-cent",
    [between(0, 10_000), between(0, 10_000), between(-100, 12_000), Schema.Literals(["day", "month", "total"]), Schema.Literals(["key", "account"])],
    ([limitMicroCents, cost, spentMicroCents, period, scope]) => {
      const budget = { limitMicroCents, period }
      const gates = submitGates({ job: job(cost), maxConcurrentJobs: 1, rateLimits: NO_LIMITS, budgets: [{ scope, budget }] })!
      const bound = scope === "key" ? gates.keySpend! : gates.accountSpend!
      expect(scope === "key" ? gates.accountSpend : gates.keySpend).toBeUndefined()
      expect(spentMicroCents <= bound.mostBefore).toBe(refuseForBudget(NOW, cost, [{ scope, budget, spentMicroCents }]) === undefined)
    }
  )

  it("a budget counts from its period's start", () => {
    const gates = submitGates({
      job: job(1),
      maxConcurrentJobs: 1,
      rateLimits: NO_LIMITS,
      budgets: [
        { scope: "key", budget: { limitMicroCents: 10, period: "day" } },
        { scope: "account", budget: { limitMicroCents: 10, period: "month" } }
      ]
    })
    expect(gates?.keySpend?.since).toBe(Date.UTC(2026, 10, 28))
    expect(gates?.accountSpend?.since).toBe(Date.UTC(2026, 10, 1))
  })
})
