import { describe, expect, it } from "vitest"
import type { AccountId, JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { job as fixtureJob } from "../conformance/fixtures.js"
import { IndexedJobs } from "../../adapters/memory/jobIndex.js"

/** The conformance fixtures' job, named by `id` (the index orders pending jobs by fairKey, then id). */
const job = (id: string, { accountId = "acc", ...fields }: Omit<Partial<Job>, "accountId"> & { readonly accountId?: string } = {}): Job =>
  fixtureJob(accountId as AccountId, { createdAt: 0, ...fields, id: id as JobId })

const leased = (id: string, leaseExpiresAt: number, attempts = 1) =>
  job(id, { status: "processing", leaseOwner: "w", leaseExpiresAt, attempts })

const ids = (jobs: ReadonlyArray<Job>) => jobs.map((j) => j.id)

describe("the memory store's job index", () => {
  it("takes pending jobs in claim order (fair key, then id), whatever order they were written in", () => {
    const jobs = new IndexedJobs()
    for (const [id, fairKey] of [["c", 3], ["a", 1], ["e", 3], ["b", 2], ["d", 3]] as const) jobs.set(id, job(id, { fairKey, createdAt: 10 - fairKey }))
    expect(ids(jobs.takePending(2, () => false))).toEqual(["a", "b"])
    expect(ids(jobs.takePending(10, () => false))).toEqual(["c", "d", "e"])
    expect(jobs.takePending(10, () => false)).toEqual([])
  })

  it("passes over a job that changed since it was indexed, and takes a job once when an undo wrote a version twice", () => {
    const jobs = new IndexedJobs()
    const first = job("a", { createdAt: 1 })
    jobs.set("a", first)
    jobs.set("b", job("b", { createdAt: 2 }))
    jobs.set("c", job("c", { createdAt: 3 }))
    // Claimed by id (the broker's path), then completed: neither is pending any more.
    jobs.set("b", leased("b", 100))
    jobs.set("c", job("c", { status: "completed", createdAt: 3 }))
    // Claimed, then the claim's transaction undone: the first version is written again.
    jobs.set("a", leased("a", 100))
    jobs.set("a", first)
    expect(ids(jobs.takePending(10, () => false))).toEqual(["a"])
  })

  it("knows the first pending key, and each account's last one, as jobs come and go", () => {
    const jobs = new IndexedJobs()
    expect([jobs.firstPendingKey(), jobs.lastPendingKeyOf("a")]).toEqual([undefined, undefined])
    jobs.set("a1", job("a1", { accountId: "a", fairKey: 5 }))
    jobs.set("a2", job("a2", { accountId: "a", fairKey: 9 }))
    jobs.set("b1", job("b1", { accountId: "b", fairKey: 7 }))
    expect([jobs.firstPendingKey(), jobs.lastPendingKeyOf("a"), jobs.lastPendingKeyOf("b")]).toEqual([5, 9, 7])
    // The account's last job cancelled: its last key is the one before.
    jobs.set("a2", job("a2", { accountId: "a", fairKey: 9, status: "cancelled" }))
    expect(jobs.lastPendingKeyOf("a")).toBe(5)
    // Its first claimed: the first key is the next waiting one; the account has none left.
    expect(ids(jobs.takePending(1, () => false))).toEqual(["a1"])
    jobs.set("a1", leased("a1", 100))
    expect([jobs.firstPendingKey(), jobs.lastPendingKeyOf("a")]).toEqual([7, undefined])
    jobs.delete("b1")
    expect([jobs.firstPendingKey(), jobs.lastPendingKeyOf("b")]).toEqual([undefined, undefined])
  })

  it("leaves the jobs a claim skips (a version at its limit) for the next claim", () => {
    const jobs = new IndexedJobs()
    jobs.set("a", job("a", { createdAt: 1, version: "full" }))
    jobs.set("b", job("b", { createdAt: 2 }))
    expect(ids(jobs.takePending(10, (j) => j.version === "full"))).toEqual(["b"])
    expect(ids(jobs.takePending(10, () => false))).toEqual(["a"])
  })

  it("takes expired leases earliest first, only those expired by now with attempts left, and keeps the others", () => {
    const jobs = new IndexedJobs()
    jobs.set("late", leased("late", 50))
    jobs.set("early", leased("early", 10))
    jobs.set("spent", leased("spent", 5, 3))
    jobs.set("live", leased("live", 500))
    expect(ids(jobs.takeExpired(100, 3, 10))).toEqual(["early", "late"])
    // Out of attempts: left for the sweep, still there for a claim allowing more attempts.
    expect(ids(jobs.takeExpired(100, 3, 10))).toEqual([])
    expect(ids(jobs.takeExpired(100, 4, 10))).toEqual(["spent"])
    // A renewed lease counts at its new expiry only.
    jobs.set("live", leased("live", 900))
    expect(ids(jobs.takeExpired(600, 3, 10))).toEqual([])
    expect(ids(jobs.takeExpired(900, 3, 10))).toEqual(["live"])
  })

  it("says whether a claim would find a job without taking it", () => {
    const jobs = new IndexedJobs()
    expect(jobs.hasRunnable(0, 3)).toBe(false)
    jobs.set("x", leased("x", 10))
    expect(jobs.hasRunnable(5, 3)).toBe(false)
    expect(jobs.hasRunnable(10, 3)).toBe(true)
    expect(jobs.hasRunnable(10, 3)).toBe(true)
    jobs.set("x", job("x", { status: "completed" }))
    jobs.set("y", job("y"))
    expect(jobs.hasRunnable(10, 3)).toBe(true)
    expect(ids(jobs.takePending(1, () => false))).toEqual(["y"])
  })

  it("stays within a constant factor of the jobs it holds however often they are rewritten", () => {
    const jobs = new IndexedJobs()
    for (let i = 0; i < 100; i++) jobs.set(`j${i}`, leased(`j${i}`, 1_000))
    // Lease renewals write a new version each time; stale entries are compacted away.
    for (let round = 0; round < 500; round++) {
      for (let i = 0; i < 100; i++) jobs.set(`j${i}`, leased(`j${i}`, 1_000 + round))
    }
    const heap = (jobs as unknown as { leased: { items: Array<Job> } }).leased.items
    expect(heap.length).toBeLessThanOrEqual(1_024 + 2 * 100 + 1)
    expect(ids(jobs.takeExpired(2_000, 3, 1_000)).sort()).toEqual(Array.from({ length: 100 }, (_, i) => `j${i}`).sort())
  })

  it("counts each account's pending and processing jobs through every write and delete", () => {
    const jobs = new IndexedJobs()
    jobs.set("a", job("a", { accountId: "acc1" }))
    jobs.set("b", job("b", { accountId: "acc1" }))
    jobs.set("c", job("c", { accountId: "acc2" }))
    jobs.set("a", leased("a", 10))
    expect([jobs.activeOf("acc"), jobs.activeOf("acc1"), jobs.activeOf("acc2")]).toEqual([1, 1, 1])
    jobs.set("b", job("b", { accountId: "acc1", status: "completed" }))
    jobs.delete("c")
    jobs.delete("missing")
    expect([jobs.activeOf("acc"), jobs.activeOf("acc1"), jobs.activeOf("acc2")]).toEqual([1, 0, 0])
    jobs.set("a", job("a", { status: "cancelled" }))
    expect(jobs.activeOf("acc")).toBe(0)
  })

  it("reads a version's pending jobs in claim order without taking them, and counts its processing ones", () => {
    const jobs = new IndexedJobs()
    for (const [id, fairKey] of [["c", 3], ["a", 1], ["b", 2]] as const) jobs.set(id, job(id, { fairKey, version: "v2" }))
    jobs.set("other", job("other", { fairKey: 0 }))
    expect([jobs.hasPending("demo/text", "v2"), jobs.hasPending("demo/text", "v1"), jobs.hasPending("demo/text", "v3")]).toEqual([true, true, false])
    expect(ids(jobs.pendingOfVersion("demo/text", "v2", 2))).toEqual(["a", "b"])
    // A read: the same jobs again, and still there for a claim.
    expect(ids(jobs.pendingOfVersion("demo/text", "v2", 10))).toEqual(["a", "b", "c"])
    expect(ids(jobs.takePending(1, () => false))).toEqual(["other"])
    // Claimed, then one ended: counted while processing only; a claim undone is pending again, once.
    const first = jobs.get("a")!
    jobs.set("a", leased("a", 10))
    jobs.set("b", { ...leased("b", 10), version: "v2" })
    jobs.set("a", { ...leased("a", 10), version: "v2" })
    expect([jobs.processingOf("demo/text", "v2"), jobs.processingOf("demo/text", "v1")]).toEqual([2, 0])
    jobs.set("b", job("b", { status: "completed", version: "v2" }))
    jobs.set("a", first)
    expect([jobs.processingOf("demo/text", "v2"), ids(jobs.pendingOfVersion("demo/text", "v2", 10))]).toEqual([0, ["a", "c"]])
    jobs.delete("a")
    jobs.set("c", job("c", { status: "cancelled", version: "v2" }))
    expect([jobs.hasPending("demo/text", "v2"), jobs.pendingOfVersion("demo/text", "v2", 10)]).toEqual([false, []])
  })
})
