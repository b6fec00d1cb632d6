import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import type { Stores } from "./storeSuite.js"

const handle = { id: "pred_1", data: { statusUrl: "https://provider.example/v1/p/1" } }

/**
 * JobLeaseDriver.handBackLeases: a stopping worker gives back the leases of its started
 * generations, for the next claim to resume at once with no attempt spent.
 */
export const runHandBackConformance = (name: string, makeLayer: () => Layer.Layer<Stores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, Stores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  /** `count` jobs claimed by `w1` at T0 with a lease of an hour. */
  const claimed = (count: number) =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const owner = yield* createAccount(1_000_000)
      const made = Array.from({ length: count }, (_, i) => job(owner.id, { createdAt: T0 + i, fairKey: i }))
      for (const j of made) yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
      yield* repo.claimBatch({ workerId: "w1", now: T0, leaseMs: 3_600_000, maxAttempts: 3, limit: count })
      return made.map((j) => j.id)
    })

  describe(`${name}: JobRepo hand-back of leases`, () => {
    test("gives back a started generation's lease: claimable at once, its handle kept, the claim's attempt given back", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const [id] = yield* claimed(1)
        expect(yield* repo.saveProviderState(id!, "w1", { phase: "started", handle, starts: 1 })).toBe(true)
        expect(yield* repo.handBackLeases!([{ id: id!, workerId: "w1" }], T0 + 10)).toEqual([id])
        expect(Option.getOrThrow(yield* repo.get(id!))).toMatchObject({ status: "processing", leaseOwner: null, attempts: 0, providerHandle: handle })
        // The old holder's writes are refused from now on.
        expect(yield* repo.renewLeases([{ id: id!, workerId: "w1" }], T0 + 20, 60_000)).toEqual([])
        expect(yield* repo.saveProviderState(id!, "w1", { phase: "started", handle, starts: 1 })).toBe(false)
        expect(Option.isNone(yield* repo.complete(id!, "w1", [], T0 + 20))).toBe(true)
        // The next claim takes it over long before the hour's lease would have ended: the handle to poll, its first attempt.
        const [taken] = yield* repo.claimBatch({ workerId: "w2", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3, limit: 10 })
        expect(taken).toMatchObject({ id, status: "processing", leaseOwner: "w2", attempts: 1, providerPhase: "started", providerHandle: handle, providerStarts: 1 })
        expect(Option.getOrThrow(yield* repo.complete(id!, "w2", [], T0 + 30)).status).toBe("completed")
      }))

    test("leaves a lease whose job has no handle stored (inside its start), another owner's, and an ended job's", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const [starting, others, ended, started] = yield* claimed(4)
        for (const id of [others!, ended!, started!]) yield* repo.saveProviderState(id, "w1", { phase: "started", handle, starts: 1 })
        yield* repo.complete(ended!, "w1", [], T0 + 5)
        const back = yield* repo.handBackLeases!([
          { id: starting!, workerId: "w1" },
          { id: others!, workerId: "w9" },
          { id: ended!, workerId: "w1" },
          { id: started!, workerId: "w1" }
        ], T0 + 10)
        expect(back).toEqual([started])
        expect(Option.getOrThrow(yield* repo.get(starting!))).toMatchObject({ leaseOwner: "w1", attempts: 1, providerPhase: "starting" })
        expect(Option.getOrThrow(yield* repo.get(others!))).toMatchObject({ leaseOwner: "w1", attempts: 1 })
        expect(Option.getOrThrow(yield* repo.get(ended!)).status).toBe("completed")
        expect(yield* repo.handBackLeases!([], T0 + 10)).toEqual([])
        // Only the one handed back is claimable: the others' leases run for the hour.
        expect((yield* repo.claimBatch({ workerId: "w2", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3, limit: 10 })).map((j) => j.id)).toEqual([started])
      }))

    test("a job handed back on its last attempt is resumed, not reaped", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const [id] = yield* claimed(1)
        yield* repo.saveProviderState(id!, "w1", { phase: "started", handle, starts: 1 })
        // maxAttempts 1: the claim used the job's only attempt.
        yield* repo.handBackLeases!([{ id: id!, workerId: "w1" }], T0 + 10)
        expect(yield* repo.reap({ workerId: "r", now: T0 + 20, passMs: 1_000, maxAttempts: 1, limit: 10 })).toBe(0)
        const [taken] = yield* repo.claimBatch({ workerId: "w2", now: T0 + 20, leaseMs: 60_000, maxAttempts: 1, limit: 10 })
        expect(taken).toMatchObject({ id, leaseOwner: "w2", attempts: 1, providerHandle: handle })
      }))
  })
}
