import { describe, expect, it } from "vitest"
import { fairPick, type FairLane, type FairTurn, laneRoom } from "../../src/domain/fairPick.js"

const lane = (id: string, n: number, weight = 1): FairLane<string> => ({
  id,
  weight,
  heads: Array.from({ length: n }, (_, i) => `${id}${i}`)
})

/** Picks one at a time, each from what the lanes still hold, as a consumer receiving one by one does. */
const oneByOne = (lanes: ReadonlyArray<FairLane<string>>, count: number) => {
  const left = new Map(lanes.map((l) => [l.id, [...l.heads]]))
  let turn: FairTurn | undefined
  const order: Array<string> = []
  for (let i = 0; i < count; i++) {
    const pick = fairPick(turn, lanes.map((l) => ({ ...l, heads: left.get(l.id)! })), 1)
    turn = pick.turn
    for (const head of pick.picked) {
      order.push(head)
      left.get(head.replace(/\d+$/, ""))!.shift()
    }
  }
  return order
}

describe("fairPick", () => {
  it("alternates between lanes of equal weight, first in first out within each", () => {
    expect(fairPick(undefined, [lane("a", 5), lane("b", 2)], 6).picked).toEqual(["a0", "b0", "a1", "b1", "a2", "a3"])
    expect(oneByOne([lane("a", 5), lane("b", 2)], 6)).toEqual(["a0", "b0", "a1", "b1", "a2", "a3"])
  })

  it("gives a lane of weight w w turns to another's one", () => {
    expect(fairPick(undefined, [lane("a", 10, 3), lane("b", 10)], 8).picked).toEqual(["a0", "a1", "a2", "b0", "a3", "a4", "a5", "b1"])
    expect(oneByOne([lane("a", 10, 3), lane("b", 10)], 8)).toEqual(["a0", "a1", "a2", "b0", "a3", "a4", "a5", "b1"])
  })

  it("goes on mid-turn where the last pick stopped", () => {
    const first = fairPick(undefined, [lane("a", 10, 3), lane("b", 10)], 2)
    expect(first.picked).toEqual(["a0", "a1"])
    expect(first.turn).toEqual({ lane: "a", credit: 1 })
    expect(fairPick(undefined, [lane("a", 10, 3), lane("b", 10)], 3).turn).toEqual({ lane: "a", credit: 0 })
    const next = fairPick(first.turn, [{ ...lane("a", 10, 3), heads: ["a2", "a3"] }, lane("b", 10)], 2)
    expect(next.picked).toEqual(["a2", "b0"])
  })

  it("skips lanes without heads, and takes the turn to the next lane when the lane whose turn it was is gone", () => {
    expect(fairPick({ lane: "b", credit: 1 }, [lane("a", 2), lane("b", 0), lane("c", 2)], 3).picked).toEqual(["c0", "a0", "c1"])
    expect(fairPick({ lane: "bb", credit: 5 }, [lane("a", 2), lane("c", 2)], 1).picked).toEqual(["c0"])
  })

  it("picks nothing from no heads, and never more than max", () => {
    expect(fairPick(undefined, [lane("a", 0)], 5)).toEqual({ picked: [], turn: undefined })
    expect(fairPick(undefined, [lane("a", 3)], 0).picked).toEqual([])
    expect(fairPick(undefined, [lane("a", 3), lane("b", 3)], 10).picked).toHaveLength(6)
  })

  it("passes the turn to a lane that came while another was alone", () => {
    const alone = fairPick(undefined, [lane("b", 5)], 2)
    expect(alone.picked).toEqual(["b0", "b1"])
    expect(fairPick(alone.turn, [{ ...lane("b", 5), heads: ["b2", "b3"] }, lane("a", 3)], 3).picked).toEqual(["a0", "b2", "a1"])
  })

  it("starts a late lane's k-th head within the first 2k picks after it came, behind a long backlog", () => {
    const order = oneByOne([lane("a", 200), lane("b", 10)], 40)
    order.filter((head) => head.startsWith("b")).forEach((head, k) => expect(order.indexOf(head)).toBeLessThan(2 * (k + 1)))
  })
})

describe("laneRoom", () => {
  it("is a lane's share of a pick by weight, rounded up, within 1..max", () => {
    expect(laneRoom(1, 1, 24)).toBe(24)
    expect(laneRoom(1, 2, 24)).toBe(12)
    expect(laneRoom(1, 10, 24)).toBe(3)
    expect(laneRoom(1, 1_000, 4)).toBe(1)
    expect(laneRoom(999, 1_000, 4)).toBe(4)
  })
})

describe("fairPick over heads fewer than a lane holds", () => {
  it("keeps a lane's turn when a pick stops at max, though it took the lane's last head", () => {
    let turn: FairTurn | undefined
    const order: Array<string> = []
    // Each pick sees one head per lane, as a consumer reading one entry per lane does.
    const next = { a: 0, b: 0 }
    for (let i = 0; i < 8; i++) {
      const pick = fairPick(turn, [{ id: "a", weight: 3, heads: [`a${next.a}`] }, { id: "b", weight: 1, heads: [`b${next.b}`] }], 1)
      turn = pick.turn
      const head = pick.picked[0]!
      order.push(head[0]!)
      next[head[0] as "a" | "b"]++
    }
    expect(order.join("")).toBe("aaabaaab")
  })
})
