import { describe, expect, it } from "vitest"
import { type Due, DueHeap } from "../../src/services/watch/dueHeap.js"
import { answered, MIN_POLLS_PER_SECOND, openBudget, takePoll, throttled } from "../../src/services/watch/pollBudget.js"

interface Item extends Due {
  readonly name: string
}
const item = (name: string): Item => ({ name, dueAt: 0, slot: -1 })

/** Every item due by `now`, in the order the heap gives them. */
const drain = (heap: DueHeap<Item>, now: number) => {
  const out: Array<string> = []
  for (let next = heap.popDue(now); next !== undefined; next = heap.popDue(now)) out.push(next.name)
  return out
}

describe("the watch list's timetable (DueHeap)", () => {
  it("gives items back in due order, only once due", () => {
    const heap = new DueHeap<Item>()
    const times = [50, 10, 40, 30, 20, 60, 0]
    for (const at of times) heap.schedule(item(`i${at}`), at)
    expect(heap.nextDueAt()).toBe(0)
    expect(drain(heap, 35)).toEqual(["i0", "i10", "i20", "i30"])
    expect(heap.size).toBe(3)
    expect(drain(heap, 100)).toEqual(["i40", "i50", "i60"])
    expect(heap.nextDueAt()).toBeUndefined()
  })

  it("moves an item when it is scheduled again (a callback makes it due now) and removes it in place", () => {
    const heap = new DueHeap<Item>()
    const items = Array.from({ length: 100 }, (_, i) => item(`i${i}`))
    for (const [i, it] of items.entries()) heap.schedule(it, 1_000 + i)
    heap.schedule(items[70]!, 5)
    heap.schedule(items[0]!, 5_000)
    for (const i of [3, 50, 99]) heap.remove(items[i]!)
    heap.remove(items[3]!)
    expect(items[50]!.slot).toBe(-1)
    const order = drain(heap, 10_000)
    expect(order[0]).toBe("i70")
    expect(order.at(-1)).toBe("i0")
    expect(order).toHaveLength(97)
    expect(order).not.toContain("i50")
    // Due times never go down along the order.
    const dueOf = new Map(items.map((it) => [it.name, it.dueAt]))
    for (let i = 1; i < order.length; i++) expect(dueOf.get(order[i]!)!).toBeGreaterThanOrEqual(dueOf.get(order[i - 1]!)!)
  })
})

describe("a provider's poll budget", () => {
  it("lets every poll go until the provider answers 429", () => {
    const budget = openBudget(0)
    for (let i = 0; i < 10_000; i++) expect(takePoll(budget, i / 10)).toBe(true)
  })

  it("after a 429 waits out Retry-After, then sends at most half the rate that drew it", () => {
    const budget = openBudget(0)
    // 200 polls a second for two seconds, then a 429 asking for 5 s.
    for (let t = 0; t < 2_000; t += 5) takePoll(budget, t)
    throttled(budget, 2_000, 5_000)
    expect(takePoll(budget, 6_999)).toBe(false)
    let sent = 0
    for (let t = 7_000; t < 9_000; t += 1) if (takePoll(budget, t)) sent++
    // Half of 200 a second, for two seconds.
    expect(sent).toBeGreaterThanOrEqual(190)
    expect(sent).toBeLessThanOrEqual(210)
  })

  it("pauses at least a second on a 429 without Retry-After, and never drops below its floor", () => {
    const budget = openBudget(0)
    takePoll(budget, 0)
    for (let i = 0; i < 20; i++) throttled(budget, 0, undefined)
    expect(takePoll(budget, 999)).toBe(false)
    expect(budget.limit).toBe(MIN_POLLS_PER_SECOND)
    expect(takePoll(budget, 2_000)).toBe(true)
  })

  it("grows back with answered polls until it is unlimited again", () => {
    const budget = openBudget(0)
    for (let t = 0; t < 1_000; t += 10) takePoll(budget, t)
    throttled(budget, 1_000, 0)
    const halved = budget.limit
    expect(halved).toBe(50)
    answered(budget)
    expect(budget.limit).toBeGreaterThan(halved)
    for (let i = 0; i < 100_000 && budget.limit !== Infinity; i++) answered(budget)
    expect(budget.limit).toBe(Infinity)
  })
})
