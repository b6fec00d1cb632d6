import { describe, expect, it } from "vitest"
import { periodEnd, periodStart, refuseForBudget } from "../../src/domain/budget.js"
import { checkSpendQuery, groupSpend, hourOf, type SpendRollup } from "../../src/domain/spend.js"

const at = (iso: string) => Date.parse(iso)

describe("budget periods (UTC)", () => {
  it("a day runs from UTC midnight to the next", () => {
    expect(periodStart("day", at("2026-03-31T23:59:59.999Z"))).toBe(at("2026-03-31T00:00:00Z"))
    expect(periodEnd("day", at("2026-03-31T23:59:59.999Z"))).toBe(at("2026-04-01T00:00:00Z"))
    expect(periodStart("day", at("2026-04-01T00:00:00Z"))).toBe(at("2026-04-01T00:00:00Z"))
  })

  it("a month from its first day to the next month's, over year ends and short months", () => {
    expect(periodStart("month", at("2026-02-28T12:00:00Z"))).toBe(at("2026-02-01T00:00:00Z"))
    expect(periodEnd("month", at("2026-02-28T12:00:00Z"))).toBe(at("2026-03-01T00:00:00Z"))
    expect(periodEnd("month", at("2026-12-31T23:59:59Z"))).toBe(at("2027-01-01T00:00:00Z"))
  })

  it("total counts from the epoch and never resets", () => {
    expect(periodStart("total", at("2026-05-05T05:05:05Z"))).toBe(0)
    expect(periodEnd("total", at("2026-05-05T05:05:05Z"))).toBeNull()
  })
})

describe("refuseForBudget", () => {
  const now = at("2026-03-10T10:00:00Z")
  const key = { scope: "key" as const, budget: { limitMicroCents: 1_000, period: "day" as const } }
  const account = { scope: "account" as const, budget: { limitMicroCents: 5_000, period: "month" as const } }

  it("admits a cost that fills the limit exactly, and refuses one micro-cent more", () => {
    expect(refuseForBudget(now, 400, [{ ...key, spentMicroCents: 600 }])).toBeUndefined()
    expect(refuseForBudget(now, 401, [{ ...key, spentMicroCents: 600 }])?.code).toBe("BUDGET_EXCEEDED")
  })

  it("names the first budget passed, with its limit, spend and reset", () => {
    const refused = refuseForBudget(now, 500, [{ ...key, spentMicroCents: 0 }, { ...account, spentMicroCents: 4_600 }])
    expect(refused?.details).toEqual({
      budget: "account",
      period: "month",
      limitMicroCents: 5_000,
      spentMicroCents: 4_600,
      requiredMicroCents: 500,
      resetsAt: "2026-04-01T00:00:00.000Z"
    })
  })

  it("admits anything with no budget in play, and a free job under a spent budget", () => {
    expect(refuseForBudget(now, 10 ** 12, [])).toBeUndefined()
    expect(refuseForBudget(now, 0, [{ ...key, spentMicroCents: 1_000 }])).toBeUndefined()
  })
})

describe("spend reads", () => {
  const row = (over: Partial<SpendRollup>): SpendRollup => ({
    accountId: "acc_1",
    keyId: "key_1",
    model: "m",
    hour: at("2026-03-10T10:00:00Z"),
    chargedMicroCents: 100,
    refundedMicroCents: 0,
    jobs: 1,
    failed: 0,
    cancelled: 0,
    ...over
  })

  it("hourOf takes the start of the UTC hour", () => {
    expect(hourOf(at("2026-03-10T10:59:59.999Z"))).toBe(at("2026-03-10T10:00:00Z"))
  })

  it("groups by the dimensions asked, days from hours, ordered with null keys first", () => {
    const rows = [
      row({ keyId: "key_2", hour: at("2026-03-10T23:00:00Z"), refundedMicroCents: 100, failed: 1 }),
      row({ keyId: null }),
      row({ keyId: "key_2", hour: at("2026-03-11T00:00:00Z") })
    ]
    expect(groupSpend(rows, ["key"]).map((g) => [g.key, g.jobs, g.chargedMicroCents - g.refundedMicroCents])).toEqual([
      [null, 1, 100],
      ["key_2", 2, 100]
    ])
    expect(groupSpend(rows, ["day"]).map((g) => [new Date(g.day!).toISOString(), g.jobs, g.failed])).toEqual([
      ["2026-03-10T00:00:00.000Z", 2, 1],
      ["2026-03-11T00:00:00.000Z", 1, 0]
    ])
  })

  it("bounds a read to 366 days and one or two known, distinct dimensions", () => {
    const day = 86_400_000
    const allowed = ["key", "model", "day"] as const
    expect(checkSpendQuery({ from: 0, to: 366 * day, groupBy: ["day"] }, allowed)).toBeUndefined()
    expect(checkSpendQuery({ from: 0, to: 366 * day + 1, groupBy: ["day"] }, allowed)?.details).toEqual({ field: "to" })
    expect(checkSpendQuery({ from: day, to: day, groupBy: ["day"] }, allowed)?.details).toEqual({ field: "from" })
    expect(checkSpendQuery({ from: 0, to: day, groupBy: ["account"] }, allowed)?.details).toEqual({ field: "groupBy" })
    expect(checkSpendQuery({ from: 0, to: day, groupBy: ["day", "day"] }, allowed)?.details).toEqual({ field: "groupBy" })
    expect(checkSpendQuery({ from: 0, to: day, groupBy: [] }, allowed)?.details).toEqual({ field: "groupBy" })
  })
})
