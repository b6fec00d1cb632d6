import type { Discount } from "./account.js"
import type { Pricing, PricingComponent } from "./catalog.js"

export interface CostComponent {
  readonly component: string
  readonly costMicroCents: number
}

export interface AppliedDiscount {
  readonly type: string
  readonly percentage: number
  readonly savedMicroCents: number
}

export interface CostEstimate {
  readonly baseCostMicroCents: number
  readonly estimatedCostMicroCents: number
  readonly breakdown: ReadonlyArray<CostComponent>
  readonly hasDiscount: boolean
  readonly discounted?: AppliedDiscount
}

/** Credits can be fractional in the catalog; the conversion rounds to the nearest micro-cent. */
export const creditsToMicroCents = (credits: number, creditMicroCents: number): number =>
  Math.round(credits * creditMicroCents)

/** Of the account's discounts that cover the model, the largest one applies (they do not stack). */
export const bestDiscount = (discounts: ReadonlyArray<Discount>, modelSlug: string): Discount | undefined =>
  discounts
    .filter((d) => d.models === undefined || d.models.includes(modelSlug))
    .reduce<Discount | undefined>((best, d) => (best === undefined || d.percentage > best.percentage ? d : best), undefined)

/**
 * The saving is rounded down so a client is never charged less than the advertised percentage
 * allows and never more than list price. BigInt keeps large amounts exact.
 */
export const discountSaving = (baseMicroCents: number, percentage: number): number => {
  const basisPoints = BigInt(Math.round(percentage * 100))
  return Number((BigInt(baseMicroCents) * basisPoints) / 10_000n)
}

/** Credits a dynamic component adds for this input; missing or unknown values use the default. */
export const componentCredits = (
  component: PricingComponent,
  baseCredits: number,
  input: Readonly<Record<string, unknown>>
): number => {
  const value = input[component.field]
  if (component.type === "per_unit") {
    return (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : component.default) * component.creditsPerUnit
  }
  const key = value === undefined ? component.default : String(value)
  const factor = key === undefined ? 1 : component.values[key] ?? 1
  return baseCredits * (factor - 1)
}

/**
 * Every amount of the estimate is a whole number of micro-cents within MAX_MICRO_CENTS (the safe
 * integers), which a balance can hold:
 * huge inputs (or huge catalog prices) give Infinity, NaN or inexact sums otherwise.
 */
export const isExactCost = (estimate: CostEstimate): boolean =>
  [estimate.baseCostMicroCents, estimate.estimatedCostMicroCents, ...estimate.breakdown.map((c) => c.costMicroCents)]
    .every((amount) => Number.isSafeInteger(amount))

/**
 * List price from the version's pricing and the job's input: the base plus each dynamic
 * component, then the account's best discount. The total never goes below zero.
 */
export const estimateCost = (
  pricing: Pricing,
  discounts: ReadonlyArray<Discount>,
  modelSlug: string,
  creditMicroCents: number,
  input: Readonly<Record<string, unknown>> = {}
): CostEstimate => {
  const breakdown: Array<CostComponent> = [
    { component: "base", costMicroCents: creditsToMicroCents(pricing.baseCredits, creditMicroCents) },
    ...(pricing.components ?? []).map((c) => ({
      component: c.name,
      costMicroCents: creditsToMicroCents(componentCredits(c, pricing.baseCredits, input), creditMicroCents)
    }))
  ]
  const base = Math.max(0, breakdown.reduce((sum, c) => sum + c.costMicroCents, 0))
  const discount = bestDiscount(discounts, modelSlug)
  // A base out of the exact range is refused by isExactCost; no discount is computed on it.
  if (discount === undefined || base === 0 || !Number.isSafeInteger(base)) {
    return { baseCostMicroCents: base, estimatedCostMicroCents: base, breakdown, hasDiscount: false }
  }
  const saved = discountSaving(base, discount.percentage)
  return {
    baseCostMicroCents: base,
    estimatedCostMicroCents: base - saved,
    breakdown,
    hasDiscount: true,
    discounted: { type: discount.type, percentage: discount.percentage, savedMicroCents: saved }
  }
}
