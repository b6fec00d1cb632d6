import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option, Result } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import type { Stores } from "./storeSuite.js"

const handle = { id: "pred_1", data: { statusUrl: "https://provider.example/v1/p/1" } }

/**
 * JobLeaseDriver.returnUnstarted: a worker that claimed jobs ahead of its fibers puts back, when
 * it stops, those it never started: pending again as before the claim, in their place in claim order.
 */
export const runReturnUnstartedConformance = (name: string, makeLayer: () => Layer.Layer<Stores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, Stores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  /** `count` jobs of one account (active jobs at most `maxConcurrentJobs`), as stored before any claim. */
  const submitted = (count: number, maxConcurrentJobs = 100) =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const owner = yield* createAccount(1_000_000)
      const made = Array.from({ length: count }, (_, i) => job(owner.id, { createdAt: T0 + i, fairKey: i }))
      for (const j of made) yield* repo.submit({ job: j, maxConcurrentJobs, rateLimits: NO_LIMITS })
      const stored = yield* repo.getMany(made.map((j) => j.id))
      return { owner, jobs: made.map((j) => stored.find((s) => s.id === j.id)!) }
    })

  const claim = (workerId: string, now: number, limit: number, leaseMs = 3_600_000) =>
    Effect.flatMap(JobRepo, (repo) => repo.claimBatch({ workerId, now, leaseMs, maxAttempts: 3, limit }))

  const get = (id: JobId) => Effect.map(Effect.flatMap(JobRepo, (repo) => repo.get(id)), Option.getOrThrow)

  describe(`${name}: JobRepo return of unstarted jobs`, () => {
    test("a job claimed and never started is pending again as before its claim, and the old holder's writes are refused", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const { jobs: [before] } = yield* submitted(1)
        const [claimed] = yield* claim("w1", T0 + 100, 1)
        expect(claimed).toMatchObject({ id: before!.id, status: "processing", attempts: 1, providerPhase: "starting", providerStarts: 1 })
        expect(yield* repo.returnUnstarted!([{ id: before!.id, workerId: "w1" }])).toEqual([before!.id])
        expect(yield* get(before!.id)).toEqual(before)
        expect(yield* repo.renewLeases([{ id: before!.id, workerId: "w1" }], T0 + 200, 60_000)).toEqual([])
        expect(Option.isNone(yield* repo.complete(before!.id, "w1", [], T0 + 200))).toBe(true)
        // The next claim is its first pickup again: one attempt, the start mark the claim's own.
        const [again] = yield* claim("w2", T0 + 300, 1, 60_000)
        expect(again).toMatchObject({ id: before!.id, leaseOwner: "w2", attempts: 1, providerPhase: "starting", providerStarts: 1, startedAt: T0 + 300 })
        expect(Option.getOrThrow(yield* repo.complete(before!.id, "w2", [], T0 + 400)).status).toBe("completed")
      }))

    test("a returned job takes its place in claim order again, and a pending job can be cancelled", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const { jobs, owner } = yield* submitted(3)
        const order = jobs.map((j) => j.id)
        const first = yield* claim("w1", T0 + 100, 2)
        expect(first.map((j) => j.id)).toEqual(order.slice(0, 2))
        expect(yield* repo.returnUnstarted!(first.map((j) => ({ id: j.id, workerId: "w1" })))).toHaveLength(2)
        expect((yield* claim("w2", T0 + 200, 1, 60_000)).map((j) => j.id)).toEqual([order[0]])
        expect((yield* repo.cancel(order[1]!, owner.id, T0 + 300)).job.status).toBe("cancelled")
        expect((yield* claim("w2", T0 + 400, 5, 60_000)).map((j) => j.id)).toEqual([order[2]])
      }))

    test("leaves a started job, another owner's, a reclaimed one's and an ended one's", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const { jobs } = yield* submitted(4)
        const [started, others, ended, reclaimed] = jobs.map((j) => j.id)
        yield* claim("w1", T0 + 100, 3)
        yield* claim("w0", T0 + 100, 1, 50)
        expect(yield* repo.saveProviderState(started!, "w1", { phase: "started", handle, starts: 1 })).toBe(true)
        yield* repo.complete(ended!, "w1", [], T0 + 150)
        // Its lease expired: a second attempt, whose run may find the provider started.
        expect((yield* claim("w2", T0 + 200, 1, 60_000)).map((j) => j.id)).toEqual([reclaimed])
        const back = yield* repo.returnUnstarted!([
          { id: started!, workerId: "w1" },
          { id: others!, workerId: "w9" },
          { id: ended!, workerId: "w1" },
          { id: reclaimed!, workerId: "w2" }
        ])
        expect(back).toEqual([])
        expect(yield* get(started!)).toMatchObject({ status: "processing", leaseOwner: "w1", providerHandle: handle })
        expect(yield* get(others!)).toMatchObject({ status: "processing", leaseOwner: "w1", attempts: 1 })
        expect((yield* get(ended!)).status).toBe("completed")
        expect(yield* get(reclaimed!)).toMatchObject({ status: "processing", leaseOwner: "w2", attempts: 2 })
        expect(yield* repo.returnUnstarted!([])).toEqual([])
      }))

    test("the account's active jobs count a returned job once, as before its claim", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const { jobs, owner } = yield* submitted(2, 3)
        yield* claim("w1", T0 + 100, 2)
        yield* repo.returnUnstarted!(jobs.map((j) => ({ id: j.id, workerId: "w1" })))
        const submit = (maxConcurrentJobs: number) =>
          Effect.result(repo.submit({ job: job(owner.id, { createdAt: T0 + 500 }), maxConcurrentJobs, rateLimits: NO_LIMITS }))
        expect(Result.isSuccess(yield* submit(2))).toBe(false)
        expect(Result.isSuccess(yield* submit(3))).toBe(true)
        expect(Result.isSuccess(yield* submit(3))).toBe(false)
      }))
  })
}
