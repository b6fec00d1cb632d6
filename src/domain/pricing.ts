import type { Discount } from "./account.js"
import type { Pricing } from "./catalog.js"

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

export const estimateCost = (
  pricing: Pricing,
  discounts: ReadonlyArray<Discount>,
  modelSlug: string,
  creditMicroCents: number
): CostEstimate => {
  const breakdown: Array<CostComponent> = [
    { component: "base", costMicroCents: creditsToMicroCents(pricing.baseCredits, creditMicroCents) }
  ]
  const base = breakdown.reduce((sum, c) => sum + c.costMicroCents, 0)
  const discount = bestDiscount(discounts, modelSlug)
  if (discount === undefined || base === 0) {
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
