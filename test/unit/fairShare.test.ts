import { describe, expect, it } from "vitest"
import { claimOrder, clampWeight, DEFAULT_FAIR_WEIGHT, fairKeyOf, fairStep, fairWeightOf } from "../../src/domain/fairShare.js"
import type { AccountId, JobId } from "../../src/domain/ids.js"
import { job } from "../conformance/fixtures.js"

describe("fair shares", () => {
  it("steps 1,000,000 at weight 1, shorter as the weight grows, rounded down", () => {
    expect([fairStep(1), fairStep(2), fairStep(3), fairStep(1000)]).toEqual([1_000_000, 500_000, 333_333, 1_000])
  })

  it("puts an account with nothing waiting at the front of the queue", () => {
    expect(fairKeyOf({ floor: 0, lastOwn: null, weight: 1 })).toBe(0)
    expect(fairKeyOf({ floor: 7_000_000, lastOwn: null, weight: 5 })).toBe(7_000_000)
  })

  it("puts an account's next job one step after its last waiting one", () => {
    expect(fairKeyOf({ floor: 0, lastOwn: 3_000_000, weight: 1 })).toBe(4_000_000)
    expect(fairKeyOf({ floor: 0, lastOwn: 3_000_000, weight: 4 })).toBe(3_250_000)
  })

  it("never puts a job before the first one waiting", () => {
    expect(fairKeyOf({ floor: 9_000_000, lastOwn: 3_000_000, weight: 1 })).toBe(9_000_000)
  })

  it("gives weight 2 two keys in the span weight 1 gets one", () => {
    const keys = (weight: number, n: number) => {
      const out: Array<number> = []
      for (let i = 0; i < n; i++) out.push(fairKeyOf({ floor: 0, lastOwn: out.at(-1) ?? null, weight }))
      return out
    }
    const heavy = keys(2, 6)
    const light = keys(1, 3)
    expect(heavy.filter((k) => k < light[2]!)).toHaveLength(4)
    expect(light.filter((k) => k < heavy[5]!)).toHaveLength(3)
  })

  it("reads an account without a weight as weight 1", () => {
    expect(fairWeightOf(undefined)).toBe(DEFAULT_FAIR_WEIGHT)
    expect(fairWeightOf({})).toBe(1)
    expect(fairWeightOf({ fairShareWeight: 3 })).toBe(3)
  })

  it("orders pending jobs by key, then id", () => {
    const owner = "acc_1" as AccountId
    const a = job(owner, { id: "job_b" as JobId, fairKey: 1 })
    const b = job(owner, { id: "job_a" as JobId, fairKey: 2 })
    const c = job(owner, { id: "job_c" as JobId, fairKey: 1 })
    expect([b, c, a].sort(claimOrder).map((j) => j.id)).toEqual(["job_b", "job_c", "job_a"])
  })

  it("carries weights on a broker's lanes as integers within 1..1000, whatever came", () => {
    expect([0, -3, 1.9, 1_001, Number.NaN, Number.POSITIVE_INFINITY].map(clampWeight)).toEqual([1, 1, 1, 1_000, 1, 1])
  })
})
