import { describe, expect, it } from "vitest"
import { type ClaimCandidate, claimLeavesRoom, fairClaims } from "../../src/domain/webhookClaims.js"

/** One claim at a time, as the rule reads: the fewest in flight, then the earliest due, then the id. */
const oneByOne = (due: ReadonlyArray<ClaimCandidate>, inFlight: ReadonlyMap<string, number>, max: number, limit: number) => {
  const flight = new Map(inFlight)
  const left = [...due]
  const out: Array<ClaimCandidate> = []
  while (out.length < limit) {
    const open = left.filter((d) => (flight.get(d.accountId) ?? 0) < max)
    if (open.length === 0) break
    open.sort((a, b) =>
      (flight.get(a.accountId) ?? 0) - (flight.get(b.accountId) ?? 0) || a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1)
    )
    const pick = open[0]!
    out.push(pick)
    left.splice(left.indexOf(pick), 1)
    flight.set(pick.accountId, (flight.get(pick.accountId) ?? 0) + 1)
  }
  return out
}

/** A small deterministic generator (mulberry32), so a failure names its seed. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

describe("fairClaims", () => {
  it("takes an idle account's delivery before a busy account's older ones, and none past the cap", () => {
    const due = [
      { id: "a1", accountId: "a", nextAttemptAt: 1 },
      { id: "a2", accountId: "a", nextAttemptAt: 2 },
      { id: "a3", accountId: "a", nextAttemptAt: 3 },
      { id: "b1", accountId: "b", nextAttemptAt: 9 }
    ]
    const picks = fairClaims(due, new Map([["a", 1]]), 3, 10).map((d) => d.id)
    expect(picks).toEqual(["b1", "a1", "a2"])
  })

  it("takes what as many claims of one each would take, in their order (2,000 random cases)", () => {
    for (let seed = 1; seed <= 2_000; seed++) {
      const next = random(seed)
      const accounts = 1 + Math.floor(next() * 5)
      const due = Array.from({ length: Math.floor(next() * 30) }, (_, i) => ({
        id: `d${String(Math.floor(next() * 1000)).padStart(3, "0")}_${i}`,
        accountId: `acc${Math.floor(next() * accounts)}`,
        nextAttemptAt: Math.floor(next() * 10)
      }))
      const inFlight = new Map(Array.from({ length: accounts }, (_, a) => [`acc${a}`, Math.floor(next() * 4)] as const))
      const max = 1 + Math.floor(next() * 4)
      const limit = Math.floor(next() * 12)
      expect(fairClaims(due, inFlight, max, limit), `seed ${seed}`).toEqual(oneByOne(due, inFlight, max, limit))
    }
  })
})

describe("claimLeavesRoom", () => {
  const of = (...accounts: ReadonlyArray<string>) => accounts.map((accountId) => ({ accountId }))

  it("is true while some account of the claim got fewer than the cap", () => {
    expect(claimLeavesRoom(of("a", "a", "b", "b", "c"), 2)).toBe(true)
    expect(claimLeavesRoom(of("a", "b", "c", "d"), 4)).toBe(true)
  })

  it("is false when every account of the claim got the cap, and for an empty claim", () => {
    expect(claimLeavesRoom(of("a", "a", "b", "b"), 2)).toBe(false)
    expect(claimLeavesRoom(of("a", "b", "a", "b", "a", "b", "a", "b"), 4)).toBe(false)
    expect(claimLeavesRoom([], 4)).toBe(false)
  })
})
