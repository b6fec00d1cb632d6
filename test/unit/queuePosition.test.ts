import { describe, expect, it } from "vitest"
import { NO_LIMITS, type LimitPlan } from "../../src/domain/providerLimits.js"
import { fairStep } from "../../src/domain/fairShare.js"
import {
  aheadIn,
  EVERY_CHANGE_WITHIN,
  placeOf,
  type QueueSnapshot,
  sameWaiting,
  sharesCapacity,
  tellsPlace,
  type WaitingGroup
} from "../../src/domain/queuePosition.js"
import { RunTimeSketch, SKETCH_SIZE } from "../../src/domain/runTimeSketch.js"

const STEP = fairStep(1)

/**
 * `count` jobs of `accountId` on model m@v1 queued back to back from `head`. Its smallest job id
 * is its account's name: "a"'s jobs began before "b"'s.
 */
const group = (accountId: string, count: number, head: number, weight = 1, model = "m"): WaitingGroup => ({
  accountId,
  model,
  version: "v1",
  count,
  headKey: head,
  tailKey: head + (count - 1) * fairStep(weight),
  headId: accountId,
  weight
})

/** The fair order itself, job by job (equal keys by the accounts' first ids): what the counters must agree with. */
const fairOrder = (groups: ReadonlyArray<WaitingGroup>) =>
  groups
    .flatMap((g) => Array.from({ length: g.count }, (_, i) => ({ accountId: g.accountId, key: g.headKey + i * fairStep(g.weight) })))
    .sort((a, b) => a.key - b.key || (a.accountId < b.accountId ? -1 : 1))

describe("jobs ahead in the fair order", () => {
  it("counts exactly what the fair order puts ahead, for three accounts and weights", () => {
    // A queued 30 jobs first; B one job later (its key the smallest waiting); C, weight 2, 6 jobs.
    const groups = [group("a", 30, 0), group("b", 1, 0), group("c", 6, 0, 2), group("d", 4, STEP / 2)]
    const order = fairOrder(groups)
    order.forEach((job, index) => {
      const asked = { accountId: job.accountId, model: "m", version: "v1", fairKey: job.key, tieId: job.accountId }
      expect(groups.reduce((sum, g) => sum + aheadIn(g, asked), 0)).toBe(index)
    })
  })

  it("puts B's first job second behind A's thousands, and A's first job first (position = ahead + 1)", () => {
    const snapshot: QueueSnapshot = { at: 0, waiting: [group("a", 5000, 0), group("b", 1, 0)], running: [] }
    const placeOfJob = (accountId: string) =>
      placeOf({ now: 0, snapshot, plan: NO_LIMITS, job: { accountId, model: "m", version: "v1", fairKey: 0 }, runTime: { p50Ms: 1000, p90Ms: 2000 } })
    // Both take the smallest waiting key; A's jobs began first, so A's wins the tie.
    expect(placeOfJob("b")).toMatchObject({ ahead: 1, position: 2 })
    expect(placeOfJob("a")).toMatchObject({ ahead: 0, position: 1 })
  })

  it("counts another account's job of an equal key ahead when the job is not in the read", () => {
    expect(aheadIn(group("a", 3, 0), { accountId: "z", model: "m", version: "v1", fairKey: STEP })).toBe(2)
    expect(aheadIn(group("z", 3, 0), { accountId: "a", model: "m", version: "v1", fairKey: STEP, tieId: "a" })).toBe(1)
  })

  it("counts a job not yet in the read behind all of its account's", () => {
    expect(aheadIn(group("a", 4, 0), { accountId: "a", model: "m", version: "v1", fairKey: 4 * STEP })).toBe(4)
    expect(aheadIn(group("a", 4, 0), { accountId: "a", model: "m", version: "v1", fairKey: 3 * STEP })).toBe(3)
    expect(aheadIn(group("a", 4, 10), { accountId: "b", model: "m", version: "v1", fairKey: 5 })).toBe(0)
  })

  it("is an upper bound when an account's keys have gaps", () => {
    // Four jobs between keys 0 and 10 steps: at most 4 ahead, never more than the group holds.
    const gappy: WaitingGroup = { accountId: "a", model: "m", version: "v1", count: 4, headKey: 0, tailKey: 10 * STEP, headId: "a", weight: 1 }
    expect(aheadIn(gappy, { accountId: "b", model: "m", version: "v1", fairKey: 2 * STEP })).toBe(3)
    expect(aheadIn(gappy, { accountId: "b", model: "m", version: "v1", fairKey: 9 * STEP })).toBe(4)
  })
})

const LIMITED: LimitPlan = {
  scopes: [{ key: "p", maxInFlight: 2 }, { key: "q", startsPerMinute: 6 }],
  versions: [{ model: "l1", version: "v1", scopes: ["p"] }, { model: "l2", version: "v1", scopes: ["p"] }, { model: "r", version: "v1", scopes: ["q"] }]
}

describe("two reads of the queue", () => {
  const read = (waiting: ReadonlyArray<WaitingGroup>, running = 0): QueueSnapshot => ({
    at: 0,
    waiting,
    running: running === 0 ? [] : [{ model: "m", version: "v1", count: running }]
  })
  const groups = [group("a", 30, 0), group("b", 1, 0), group("c", 6, 0, 2)]

  it("are the same when they hold the same waiting groups, in any order, whatever runs", () => {
    expect(sameWaiting(read(groups), read([...groups].reverse(), 4))).toBe(true)
  })

  it("differ when any group's jobs moved: one claimed or cancelled, one added, a weight changed, a group gone or new", () => {
    const [a, b, c] = groups as [WaitingGroup, WaitingGroup, WaitingGroup]
    const moved: ReadonlyArray<ReadonlyArray<WaitingGroup>> = [
      [{ ...a, count: 29, headKey: STEP }, b, c],
      [a, b, { ...c, count: 7, tailKey: c.tailKey + fairStep(2) }],
      [a, { ...b, headId: "b2" }, c],
      [a, b, { ...c, weight: 1 }],
      [a, b],
      [a, b, c, group("d", 1, 0)],
      [a, b, { ...c, accountId: "d" }]
    ]
    for (const waiting of moved) {
      expect(sameWaiting(read(groups), read(waiting))).toBe(false)
      expect(sameWaiting(read(waiting), read(groups))).toBe(false)
    }
  })
})

describe("a stream's place, told", () => {
  it("never when it did not change, in its turn or not", () => {
    expect(tellsPlace(3, 3, true)).toBe(false)
    expect(tellsPlace(5_000, 5_000, true)).toBe(false)
  })

  it("at once within the first hundred places, whether it moved up or back", () => {
    expect(tellsPlace(2, 3, false)).toBe(true)
    expect(tellsPlace(EVERY_CHANGE_WITHIN, EVERY_CHANGE_WITHIN + 1, false)).toBe(true)
    expect(tellsPlace(4, 3, false)).toBe(true)
  })

  it("further back, only in the stream's turn, also just after leaving the first hundred", () => {
    expect(tellsPlace(EVERY_CHANGE_WITHIN + 1, EVERY_CHANGE_WITHIN + 2, false)).toBe(false)
    expect(tellsPlace(4_900, 5_000, false)).toBe(false)
    expect(tellsPlace(4_900, 5_000, true)).toBe(true)
    expect(tellsPlace(EVERY_CHANGE_WITHIN + 1, EVERY_CHANGE_WITHIN, false)).toBe(false)
    expect(tellsPlace(EVERY_CHANGE_WITHIN + 1, EVERY_CHANGE_WITHIN, true)).toBe(true)
  })
})

describe("the capacity a job waits for", () => {
  it("is the versions sharing a limit scope, else the unlimited pool", () => {
    const l1 = sharesCapacity(LIMITED, { model: "l1", version: "v1" })
    expect(l1({ model: "l2", version: "v1" })).toBe(true)
    expect(l1({ model: "r", version: "v1" })).toBe(false)
    expect(l1({ model: "free", version: "v1" })).toBe(false)
    const free = sharesCapacity(LIMITED, { model: "free", version: "v1" })
    expect(free({ model: "other", version: "v1" })).toBe(true)
    expect(free({ model: "l1", version: "v1" })).toBe(false)
  })

  it("counts only the jobs of the same capacity", () => {
    const snapshot: QueueSnapshot = {
      at: 0,
      waiting: [group("a", 10, 0, 1, "l2"), group("a", 100, 0, 1, "free"), group("b", 1, 0, 1, "l1")],
      running: [{ model: "l1", version: "v1", count: 2 }, { model: "free", version: "v1", count: 50 }]
    }
    const place = placeOf({
      now: 1_000,
      snapshot,
      plan: LIMITED,
      job: { accountId: "b", model: "l1", version: "v1", fairKey: 0 },
      runTime: { p50Ms: 10_000, p90Ms: 20_000 }
    })
    expect(place.ahead).toBe(1)
    // Two in flight of 10 s each: a start every 5 s.
    expect(place.estimatedStartAt.p50).toBe(1_000 + 5_000)
    expect(place.estimatedStartAt.p90).toBe(1_000 + 2 * 10_000)
    expect(place.estimatedCompletionAt).toEqual({ p50: 16_000, p90: 41_000 })
  })
})

describe("estimates", () => {
  const snapshot = (running: number): QueueSnapshot => ({
    at: 0,
    waiting: [group("a", 9, 0, 1, "r")],
    running: running === 0 ? [] : [{ model: "r", version: "v1", count: running }]
  })
  const job = { accountId: "b", model: "r", version: "v1", fairKey: 100 * STEP }

  it("starts no faster than a limit's starts per minute", () => {
    // 9 ahead, 6 starts a minute: 90 s, however many run at once.
    const place = placeOf({ now: 0, snapshot: snapshot(30), plan: LIMITED, job, runTime: { p50Ms: 1_000, p90Ms: 1_000 } })
    expect(place.estimatedStartAt.p50).toBe(90_000)
  })

  it("falls back to one at a time when nothing runs and no in-flight limit says more", () => {
    const place = placeOf({ now: 0, snapshot: snapshot(0), plan: NO_LIMITS, job: { ...job, model: "r" }, runTime: { p50Ms: 1_000, p90Ms: 3_000 } })
    expect(place.estimatedStartAt).toEqual({ p50: 9_000, p90: 30_000 })
    expect(place.estimatedCompletionAt).toEqual({ p50: 10_000, p90: 33_000 })
  })

  it("puts p90 at or after p50", () => {
    const place = placeOf({ now: 0, snapshot: snapshot(3), plan: NO_LIMITS, job, runTime: { p50Ms: 5_000, p90Ms: 4_000 } })
    expect(place.estimatedStartAt.p90).toBeGreaterThanOrEqual(place.estimatedStartAt.p50)
  })
})

describe("run time sketch", () => {
  it("has no percentiles before a run", () => {
    expect(new RunTimeSketch().percentiles()).toBeUndefined()
  })

  it("gives the nearest-rank p50 and p90 of the runs kept", () => {
    const sketch = new RunTimeSketch()
    for (let ms = 100; ms >= 1; ms--) sketch.record(ms)
    expect(sketch.percentiles()).toEqual({ p50Ms: 50, p90Ms: 90 })
    sketch.record(1_000)
    expect(sketch.percentiles()!.p90Ms).toBe(91)
  })

  it("keeps only the latest runs", () => {
    const sketch = new RunTimeSketch()
    for (let i = 0; i < SKETCH_SIZE; i++) sketch.record(10)
    for (let i = 0; i < SKETCH_SIZE; i++) sketch.record(500)
    expect(sketch.count).toBe(SKETCH_SIZE)
    expect(sketch.percentiles()).toEqual({ p50Ms: 500, p90Ms: 500 })
  })
})
