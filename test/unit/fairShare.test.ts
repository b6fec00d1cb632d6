import { describe, expect, it } from "vitest"
import type { Account } from "../../src/domain/account.js"
import { clampWeight, fairShareWeightOf } from "../../src/domain/fairShare.js"

describe("fair-share weights", () => {
  it("are an account's fairShareWeight, 1 when it has none", () => {
    expect(fairShareWeightOf({ id: "acc_a" } as unknown as Account)).toBe(1)
    expect(fairShareWeightOf({ id: "acc_a", fairShareWeight: 7 } as unknown as Account)).toBe(7)
  })

  it("are integers within 1..1000 on a lane, whatever came", () => {
    expect([0, -3, 1.9, 1_001, Number.NaN, Number.POSITIVE_INFINITY].map(clampWeight)).toEqual([1, 1, 1, 1_000, 1, 1])
  })
})
