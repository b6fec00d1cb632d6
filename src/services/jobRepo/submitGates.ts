import { periodStart } from "../../domain/budget.js"
import { bucketOf, DAY_WINDOW, limitedWindows, MINUTE_WINDOW, type RateWindow } from "../../domain/rateLimit.js"
import type { SubmitCommand } from "../../ports/JobRepo.js"
import type { SubmitGates, WindowGate } from "../../ports/JobStoreDriver.js"

/**
 * The bounds a store admits a gated submit on, from the rules that refuse one: a window refuses
 * at `count >= limit` (rateLimitRetryAfter), so it admits at most `limit - 1` before; a budget
 * refuses at `spent + cost > limit` (refuseForBudget), so it admits at most `limit - cost` spent.
 * Undefined when the submit needs no gate (the plain one-statement submit). A refusal is never
 * decided by these: a declined submit is decided again, reason and all, by the rules.
 */
export const submitGates = ({ budgets = [], idempotency, job, rateLimits }: SubmitCommand): SubmitGates | undefined => {
  const windows = limitedWindows(rateLimits)
  if (idempotency === undefined && windows.length === 0 && budgets.length === 0) return undefined
  const windowGate = (window: RateWindow, limit: number): WindowGate | undefined =>
    windows.includes(window) ? { windowMs: window.windowMs, bucket: bucketOf(window, job.createdAt), mostBefore: limit - 1 } : undefined
  const spendGate = (scope: "account" | "key") => {
    const found = budgets.find((b) => b.scope === scope)
    return found === undefined
      ? undefined
      : { since: periodStart(found.budget.period, job.createdAt), mostBefore: found.budget.limitMicroCents - job.costMicroCents }
  }
  return {
    idempotency: idempotency === undefined ? undefined : {
      key: idempotency.key,
      record: { requestHash: idempotency.requestHash, jobId: job.id, createdAt: job.createdAt },
      notBefore: idempotency.notBefore
    },
    minute: windowGate(MINUTE_WINDOW, rateLimits.requestsPerMinute),
    day: windowGate(DAY_WINDOW, rateLimits.requestsPerDay),
    accountSpend: spendGate("account"),
    keySpend: spendGate("key")
  }
}
