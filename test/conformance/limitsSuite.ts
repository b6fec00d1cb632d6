import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { type LimitPlan, NO_LIMITS as NO_PROVIDER_LIMITS } from "../../src/domain/providerLimits.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import type { Stores } from "./storeSuite.js"

const limited = { model: "demo/text", version: "v1" }
const other = { model: "demo/other", version: "v1" }

const providerWide = (limits: { maxInFlight?: number; startsPerMinute?: number }): LimitPlan => ({
  scopes: [{ key: "provider", ...limits }],
  versions: [{ ...limited, scopes: ["provider"] }]
})

/** Provider limits as every store must hold them: claims take only what fits, the rest stays pending. */
export const runLimitsConformance = (name: string, makeLayer: () => Layer.Layer<Stores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, Stores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  const claim = (workerId: string, now: number, limit: number, limits: LimitPlan) =>
    Effect.flatMap(JobRepo, (repo) => repo.claimBatch({ workerId, now, leaseMs: 60_000, maxAttempts: 3, limit, limits }))

  const queue = (versions: ReadonlyArray<typeof limited>) =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const owner = yield* createAccount(1_000_000)
      const made = versions.map((v, i) => job(owner.id, { ...v, createdAt: T0 + i }))
      for (const j of made) yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
      return { owner, made }
    })

  describe(`${name}: provider limits`, () => {
    test("takes no more of a limited provider's jobs than its room; the others are claimed as usual", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const { made } = yield* queue([limited, limited, other, limited, other, limited])
        const plan = providerWide({ maxInFlight: 2 })
        const first = yield* claim("w1", T0 + 10, 10, plan)
        expect(first.map((j) => j.id)).toEqual([made[0]!.id, made[1]!.id, made[2]!.id, made[4]!.id])
        expect(yield* claim("w2", T0 + 20, 10, plan)).toEqual([])
        for (const j of [made[3]!, made[5]!]) expect(Option.getOrThrow(yield* repo.get(j.id)).status).toBe("pending")

        yield* repo.complete(made[0]!.id, "w1", [], T0 + 30)
        const next = yield* claim("w3", T0 + 40, 10, plan)
        expect(next.map((j) => [j.id, j.status, j.leaseOwner])).toEqual([[made[3]!.id, "processing", "w3"]])
        // Without the plan (a process that has not read the limits yet) the job is claimed as any other.
        expect((yield* claim("w4", T0 + 50, 10, NO_PROVIDER_LIMITS)).map((j) => j.id)).toEqual([made[5]!.id])
      }))

    test("a limited job submitted after claims found none waiting is claimed, within its room", () =>
      Effect.gen(function*() {
        const { made, owner } = yield* queue([other, other])
        const plan = providerWide({ maxInFlight: 1 })
        expect((yield* claim("w1", T0 + 10, 1, plan)).map((j) => j.id)).toEqual([made[0]!.id])
        expect((yield* claim("w1", T0 + 20, 1, plan)).map((j) => j.id)).toEqual([made[1]!.id])
        const repo = yield* JobRepo
        const later = [job(owner.id, { ...limited, createdAt: T0 + 30 }), job(owner.id, { ...limited, createdAt: T0 + 31 })]
        for (const j of later) yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
        expect((yield* claim("w2", T0 + 40, 10, plan)).map((j) => j.id)).toEqual([later[0]!.id])
        expect(yield* claim("w2", T0 + 50, 10, plan)).toEqual([])
      }))

    test("a job waiting for room can be cancelled, with its refund", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const accounts = yield* AccountRepo
        const { made, owner } = yield* queue([limited, limited])
        yield* claim("w1", T0 + 10, 10, providerWide({ maxInFlight: 1 }))
        const cancelled = yield* repo.cancel(made[1]!.id, owner.id, T0 + 20)
        expect(cancelled).toMatchObject({ job: { status: "cancelled" }, refundedMicroCents: made[1]!.costMicroCents })
        expect(Option.getOrThrow(yield* accounts.get(owner.id)).balanceMicroCents).toBe(1_000_000 - made[0]!.costMicroCents)
        expect(yield* claim("w2", T0 + 30, 10, providerWide({ maxInFlight: 5 }))).toEqual([])
      }))

    test("a model's own limit is held inside its provider's", () =>
      Effect.gen(function*() {
        const small = { model: "demo/small", version: "v1" }
        const { made } = yield* queue([small, small, limited, small, limited, limited])
        const plan: LimitPlan = {
          scopes: [{ key: "provider", maxInFlight: 3 }, { key: "small", maxInFlight: 1 }],
          versions: [{ ...limited, scopes: ["provider"] }, { ...small, scopes: ["provider", "small"] }]
        }
        const taken = yield* claim("w1", T0 + 10, 10, plan)
        expect(taken.map((j) => j.id)).toEqual([made[0]!.id, made[2]!.id, made[4]!.id])
      }))

    test("starts per minute: the minute's starts count, whether the jobs ended or not", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const { made } = yield* queue([limited, limited, limited, limited])
        const plan = providerWide({ startsPerMinute: 2 })
        const first = yield* claim("w1", T0 + 1_000, 10, plan)
        expect(first).toHaveLength(2)
        for (const j of first) yield* repo.complete(j.id, "w1", [], T0 + 2_000)
        expect(yield* claim("w2", T0 + 30_000, 10, plan)).toEqual([])
        expect(yield* claim("w2", T0 + 60_999, 10, plan)).toEqual([])
        const later = yield* claim("w3", T0 + 61_001, 10, plan)
        expect(later.map((j) => j.id)).toEqual([made[2]!.id, made[3]!.id])
      }))

    test("an expired lease is resumed even when its provider is full: it is already in flight", () =>
      Effect.gen(function*() {
        const { made } = yield* queue([limited, limited])
        const plan = providerWide({ maxInFlight: 1 })
        yield* claim("dead", T0, 1, plan)
        const resumed = yield* claim("w2", T0 + 60_001, 10, plan)
        expect(resumed.map((j) => [j.id, j.attempts])).toEqual([[made[0]!.id, 2]])
      }))

    test("parallel claims never take more than the room between them", () =>
      Effect.gen(function*() {
        yield* queue(Array.from({ length: 8 }, () => limited))
        const plan = providerWide({ maxInFlight: 3 })
        const claims = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => claim(`w${i}`, T0 + 10, 1, plan)),
          { concurrency: "unbounded" }
        )
        expect(claims.flat()).toHaveLength(3)
      }))
  })
}
