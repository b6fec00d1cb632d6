import { Schema } from "effect"
import { MAX_MICRO_CENTS } from "./limits.js"
import { Refusal } from "./refusal.js"

/** The UTC period a budget counts spend over; `total` never resets. */
export const BudgetPeriod = Schema.Literals(["day", "month", "total"])
export type BudgetPeriod = typeof BudgetPeriod.Type

/** A cap on what a key or an account spends per period: charges less refunds, in micro-cents. */
export const Budget = Schema.Struct({
  limitMicroCents: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(MAX_MICRO_CENTS)),
  period: BudgetPeriod
})
export type Budget = typeof Budget.Type

/** Whose budget: the calling key's, or its account's. */
export type BudgetScope = "key" | "account"

const DAY_MS = 86_400_000

/** Where the period holding `now` began (epoch ms, UTC); the epoch for `total`. */
export const periodStart = (period: BudgetPeriod, now: number): number => {
  if (period === "total") return 0
  const at = new Date(now)
  return period === "day"
    ? Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate())
    : Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)
}

/** When the period holding `now` ends and the spend starts again from 0; null for `total`. */
export const periodEnd = (period: BudgetPeriod, now: number): number | null => {
  if (period === "total") return null
  if (period === "day") return periodStart("day", now) + DAY_MS
  const at = new Date(now)
  return Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)
}

export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

/** A budget a submit is held to, and what its period had spent before the submit. */
export interface BudgetUse {
  readonly scope: BudgetScope
  readonly budget: Budget
  readonly spentMicroCents: number
}

/**
 * The first budget the job's cost would take past its limit, as the refusal the client sees;
 * undefined when every budget has room. A budget at exactly its limit after the job admits it.
 */
export const refuseForBudget = (now: number, costMicroCents: number, uses: ReadonlyArray<BudgetUse>): BudgetExceeded | undefined => {
  const over = uses.find((use) => use.spentMicroCents + costMicroCents > use.budget.limitMicroCents)
  if (over === undefined) return undefined
  return new BudgetExceeded({ message: `The ${over.scope}'s ${over.budget.period} budget does not cover the job's cost`, details: {
    budget: over.scope,
    period: over.budget.period,
    limitMicroCents: over.budget.limitMicroCents,
    spentMicroCents: over.spentMicroCents,
    requiredMicroCents: costMicroCents,
    resetsAt: isoOrNull(periodEnd(over.budget.period, now))
  } })
}

/** A budget (the account's or the key's) does not cover the job's cost. */
export class BudgetExceeded extends Refusal<BudgetExceeded>()("BudgetExceeded", { code: "BUDGET_EXCEEDED", status: 402 }) {}
