import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, type Layer, Option } from "effect"
import type { Job } from "../../src/domain/job.js"
import { type ClaimRider, JobRepo, type RiderOutcome } from "../../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import type { Stores } from "./storeSuite.js"

/** Long enough that no lease claimed at T0 expires while a test runs on the real clock. */
const LONG_LEASE = 100 * 365 * 24 * 3_600_000

/**
 * A worker's side of a riding claim, as the tests hold it: the lease owners of `prefix` free its
 * fibers, `idle` fibers are idle, and what the store hands it is recorded.
 */
const makeRider = (prefix: string, idle: number, fromIdle?: number) =>
  Effect.gen(function*() {
    const parked = yield* Deferred.make<() => void>()
    const settled: Array<{ readonly outcome: RiderOutcome; readonly claimed: ReadonlyArray<Job> }> = []
    let free = idle
    const rider: ClaimRider = {
      frees: (owner) => owner.startsWith(prefix),
      // `fromIdle`, when given, is the answer as is: below 0, the endings' fibers have work already.
      takeIdle: (max) => {
        if (fromIdle !== undefined) return fromIdle
        const taken = Math.min(free, max)
        free -= taken
        return taken
      },
      waiting: (wake) => {
        if (wake !== undefined) Deferred.doneUnsafe(parked, Exit.succeed(wake))
      },
      settled: (outcome, claimed) => void settled.push({ outcome, claimed })
    }
    return { rider, parked, settled }
  })

/**
 * Claims riding on completions (ClaimOptions.besideEndings, JobLeaseDriver.finishHeldAndClaim on
 * PostgreSQL, two steps elsewhere): the claim rules are the normal claim's, and the ending's.
 */
export const runRidingClaimsConformance = (name: string, makeLayer: () => Layer.Layer<Stores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, Stores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  const submitted = (count: number) =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const owner = yield* createAccount(1_000_000)
      const made = Array.from({ length: count }, (_, i) => job(owner.id, { createdAt: T0 + i, fairKey: i }))
      for (const j of made) yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
      return made
    })

  const ride = (workerId: string, rider: ClaimRider) =>
    Effect.flatMap(JobRepo, (repo) =>
      repo.claimBatch({ workerId, now: T0, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 100, besideEndings: rider }))

  describe(`${name}: claims riding on completions`, () => {
    test("a completion batch ends its jobs and claims one job per fiber it frees and per idle fiber, in claim order", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const made = yield* submitted(6)
        const held = yield* repo.claimBatch({ workerId: "w1_a", now: T0 + 10, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 2 })
        const { parked, rider, settled } = yield* makeRider("w1_", 1)
        const claim = yield* Effect.forkChild(ride("w1_b", rider))
        yield* Deferred.await(parked)
        const ended = yield* repo.complete(held[0]!.id, "w1_a", [], T0 + 20)
        expect(Option.getOrThrow(ended).status).toBe("completed")
        const claimed = yield* Fiber.join(claim)
        // One fiber freed by the ending, one idle: the next two pending jobs, in claim order.
        expect(claimed.map((j) => j.id)).toEqual([made[2]!.id, made[3]!.id])
        for (const j of claimed) {
          expect(j.status).toBe("processing")
          expect(j.leaseOwner).toBe("w1_b")
          expect(j.attempts).toBe(1)
          expect(Option.getOrThrow(yield* repo.get(j.id))).toEqual(j)
        }
        expect(settled.map((s) => [s.outcome.fromIdle, s.outcome.limit, s.claimed.length])).toEqual([[1, 2, 2]])
        // The other held job is still w1_a's, untouched.
        expect(Option.getOrThrow(yield* repo.get(held[1]!.id)).leaseOwner).toBe("w1_a")
      }))

    for (const fromIdle of [-1, -2]) {
      test(`a rider answering ${fromIdle} (the ending's fiber took a ready job) claims none beside its ending`, () =>
        Effect.gen(function*() {
          const repo = yield* JobRepo
          yield* submitted(4)
          const [held] = yield* repo.claimBatch({ workerId: "w7_a", now: T0 + 10, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 1 })
          const { parked, rider, settled } = yield* makeRider("w7_", 0, fromIdle)
          const claim = yield* Effect.forkChild(ride("w7_b", rider))
          yield* Deferred.await(parked)
          expect(Option.getOrThrow(yield* repo.complete(held!.id, "w7_a", [], T0 + 20)).status).toBe("completed")
          expect(yield* Fiber.join(claim)).toEqual([])
          expect(settled.map((s) => s.claimed.length)).toEqual([0])
          const pending = yield* repo.claimBatch({ workerId: "w8", now: T0 + 30, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 10 })
          expect(pending).toHaveLength(3)
        }))
    }

    test("never claims a job its own batch ends, though that job's lease expired", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const made = yield* submitted(2)
        // A lease that expired long before the riding claim's time: reclaimable, but still its holder's to end.
        const [expired] = yield* repo.claimBatch({ workerId: "w2_a", now: T0, leaseMs: 1_000, maxAttempts: 3, limit: 1 })
        const { parked, rider } = yield* makeRider("w2_", 0)
        const claim = yield* Effect.forkChild(ride("w2_b", rider))
        yield* Deferred.await(parked)
        expect(Option.getOrThrow(yield* repo.complete(expired!.id, "w2_a", [], T0 + 20)).status).toBe("completed")
        expect((yield* Fiber.join(claim)).map((j) => j.id)).toEqual([made[1]!.id])
        expect(Option.getOrThrow(yield* repo.get(expired!.id)).status).toBe("completed")
      }))

    test("a completion whose lease was lost frees no claim; a completion of another worker is not ridden on", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        yield* submitted(4)
        const [mine] = yield* repo.claimBatch({ workerId: "w3_a", now: T0 + 10, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 1 })
        const [other] = yield* repo.claimBatch({ workerId: "x_a", now: T0 + 10, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 1 })
        const { parked, rider, settled } = yield* makeRider("w3_", 0)
        const claim = yield* Effect.forkChild(ride("w3_b", rider))
        yield* Deferred.await(parked)
        // Another worker's completion: the claim keeps waiting.
        expect(Option.isSome(yield* repo.complete(other!.id, "x_a", [], T0 + 20))).toBe(true)
        expect(settled).toEqual([])
        // Its own, written by a holder that lost the lease: nothing ended, nothing claimed.
        expect(yield* repo.complete(mine!.id, "w3_stale", [], T0 + 20)).toEqual(Option.none())
        expect(yield* Fiber.join(claim)).toEqual([])
        expect(settled.map((s) => [s.outcome.fromIdle, s.outcome.limit])).toEqual([[0, 0]])
        expect(Option.getOrThrow(yield* repo.get(mine!.id)).leaseOwner).toBe("w3_a")
      }))

    test("woken, a waiting claim answers none at once; interrupted, it claims nothing", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        yield* submitted(2)
        const woken = yield* makeRider("w4_", 1)
        const claim = yield* Effect.forkChild(ride("w4_b", woken.rider))
        ;(yield* Deferred.await(woken.parked))()
        expect(yield* Fiber.join(claim)).toEqual([])
        expect(woken.settled.map((s) => [s.outcome.fromIdle, s.outcome.limit])).toEqual([[0, 0]])

        const [held] = yield* repo.claimBatch({ workerId: "w5_a", now: T0 + 10, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 1 })
        const gone = yield* makeRider("w5_", 1)
        const interrupted = yield* Effect.forkChild(ride("w5_b", gone.rider))
        yield* Deferred.await(gone.parked)
        yield* Fiber.interrupt(interrupted)
        expect(Option.getOrThrow(yield* repo.complete(held!.id, "w5_a", [], T0 + 20)).status).toBe("completed")
        expect(gone.settled).toEqual([])
        // The job left pending stays pending: nothing claimed it.
        const pending = (yield* repo.claimBatch({ workerId: "w6", now: T0 + 30, leaseMs: LONG_LEASE, maxAttempts: 3, limit: 10 }))
        expect(pending).toHaveLength(1)
      }))
  })
}
