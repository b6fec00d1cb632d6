import { describe, expect, it } from "vitest"
import { bestDiscount, creditsToMicroCents, discountSaving, estimateCost } from "../../src/domain/pricing.js"

const pricing = (baseCredits: number) => ({ baseCredits, unit: "per_generation" })

describe("pricing", () => {
  it("converts credits at the configured value, rounding fractional credits to the micro-cent", () => {
    expect(creditsToMicroCents(5, 10_000)).toBe(50_000)
    expect(creditsToMicroCents(0.33333, 10_000)).toBe(3_333)
    expect(creditsToMicroCents(2.5, 3)).toBe(8)
  })

  it("estimates without discount", () => {
    expect(estimateCost(pricing(5), [], "a/b", 10_000)).toEqual({
      baseCostMicroCents: 50_000,
      estimatedCostMicroCents: 50_000,
      breakdown: [{ component: "base", costMicroCents: 50_000 }],
      hasDiscount: false
    })
  })

  it("applies the largest discount that covers the model; discounts do not stack", () => {
    const discounts = [
      { type: "volume", percentage: 10 },
      { type: "partner", percentage: 30, models: ["x/y"] },
      { type: "promo", percentage: 20 }
    ]
    expect(bestDiscount(discounts, "a/b")?.type).toBe("promo")
    expect(bestDiscount(discounts, "x/y")?.type).toBe("partner")
    expect(bestDiscount([], "a/b")).toBeUndefined()
    const estimate = estimateCost(pricing(5), discounts, "a/b", 10_000)
    expect(estimate).toMatchObject({
      baseCostMicroCents: 50_000,
      estimatedCostMicroCents: 40_000,
      hasDiscount: true,
      discounted: { type: "promo", percentage: 20, savedMicroCents: 10_000 }
    })
  })

  it("rounds the saving down, so the charge is never below the advertised price", () => {
    expect(discountSaving(999, 33.33)).toBe(332)
    expect(estimateCost(pricing(0.0999), [{ type: "t", percentage: 33.33 }], "a/b", 10_000).estimatedCostMicroCents).toBe(999 - 332)
  })

  it("is exact for amounts beyond 2^53 / 10,000", () => {
    const base = 9_007_199_254_740
    const expected = Number((BigInt(base) * 3333n) / 10_000n)
    expect(discountSaving(base, 33.33)).toBe(expected)
  })

  it("shows no discount on a free model", () => {
    expect(estimateCost(pricing(0), [{ type: "t", percentage: 50 }], "a/b", 10_000).hasDiscount).toBe(false)
  })
})
