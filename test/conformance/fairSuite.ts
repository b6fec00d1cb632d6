import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import type { AccountId, JobId } from "../../src/domain/ids.js"
import type { LimitPlan } from "../../src/domain/providerLimits.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import type { Stores } from "./storeSuite.js"

const limited = { model: "demo/text", version: "v1" }
/** The provider of `limited` runs one job at a time. */
const oneAtATime: LimitPlan = {
  scopes: [{ key: "provider", maxInFlight: 1 }],
  versions: [{ ...limited, scopes: ["provider"] }]
}

/**
 * Fair shares (issue 37, src/domain/fairShare.ts) as every store must hold them: jobs waiting for
 * the same capacity start in weighted round robin across accounts, first in, first out within
 * one, whether the capacity is the worker pool or a provider's limit.
 */
export const runFairConformance = (name: string, makeLayer: () => Layer.Layer<Stores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, Stores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  /** `count` jobs of the account, submitted one after another at `at`, `at + 1`... */
  const submitMany = (accountId: AccountId, count: number, at: number, version = limited) =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const ids: Array<JobId> = []
      for (let i = 0; i < count; i++) {
        const made = job(accountId, { ...version, createdAt: at + i })
        yield* repo.submit({ job: made, maxConcurrentJobs: 10_000, rateLimits: NO_LIMITS })
        ids.push(made.id)
      }
      return ids
    })

  /**
   * Starts jobs one at a time until none is left, each finished before the next claim when
   * `limits` holds them to one in flight: the accounts' names in the order their jobs started.
   */
  const startAll = (names: ReadonlyMap<string, string>, limits?: LimitPlan, upTo = 1_000) =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const started: Array<{ readonly who: string; readonly id: JobId }> = []
      for (let n = 0; n < upTo; n++) {
        const now = T0 + 10_000 + n
        const [next] = yield* repo.claimBatch({ workerId: "w", now, leaseMs: 60_000, maxAttempts: 3, limit: 1, limits })
        if (next === undefined) break
        started.push({ who: names.get(next.accountId)!, id: next.id })
        if (limits !== undefined) yield* repo.complete(next.id, "w", [], now)
      }
      return started
    })

  describe(`${name}: fair shares`, () => {
    test("a second account's jobs start between the first's backlog, each account first in, first out", () =>
      Effect.gen(function*() {
        const a = yield* createAccount(1_000_000)
        const b = yield* createAccount(1_000_000)
        const aIds = yield* submitMany(a.id, 6, T0)
        const names = new Map([[a.id as string, "A"], [b.id as string, "B"]])
        // Two of A's start before B submits: B's jobs queue from where the queue is, not from its start.
        const early = yield* startAll(names, undefined, 2)
        const bIds = yield* submitMany(b.id, 3, T0 + 100)
        const rest = yield* startAll(names)
        expect([...early, ...rest].map((s) => s.who).join("")).toBe("AAABABABA")
        expect([...early, ...rest].filter((s) => s.who === "A").map((s) => s.id)).toEqual(aIds)
        expect(rest.filter((s) => s.who === "B").map((s) => s.id)).toEqual(bIds)
      }))

    test("three accounts take turns while each has jobs waiting", () =>
      Effect.gen(function*() {
        const [a, b, c] = [yield* createAccount(1_000_000), yield* createAccount(1_000_000), yield* createAccount(1_000_000)]
        yield* submitMany(a!.id, 4, T0)
        yield* submitMany(b!.id, 4, T0 + 10)
        yield* submitMany(c!.id, 2, T0 + 20)
        const names = new Map([[a!.id as string, "A"], [b!.id as string, "B"], [c!.id as string, "C"]])
        expect((yield* startAll(names)).map((s) => s.who).join("")).toBe("ABCABCABAB")
      }))

    test("an account of weight 2 starts two jobs for each one of weight 1", () =>
      Effect.gen(function*() {
        const heavy = yield* createAccount(1_000_000, { fairShareWeight: 2 })
        const light = yield* createAccount(1_000_000)
        yield* submitMany(heavy.id, 6, T0)
        yield* submitMany(light.id, 6, T0 + 10)
        const names = new Map([[heavy.id as string, "H"], [light.id as string, "L"]])
        expect((yield* startAll(names)).map((s) => s.who).join("")).toBe("HLHHLHHLHLLL")
      }))

    test("jobs waiting for a provider's limit take turns the same way", () =>
      Effect.gen(function*() {
        const a = yield* createAccount(1_000_000)
        const b = yield* createAccount(1_000_000)
        const names = new Map([[a.id as string, "A"], [b.id as string, "B"]])
        const aIds = yield* submitMany(a.id, 5, T0)
        const early = yield* startAll(names, oneAtATime, 1)
        const bIds = yield* submitMany(b.id, 2, T0 + 100)
        const rest = yield* startAll(names, oneAtATime)
        expect([...early, ...rest].map((s) => s.who).join("")).toBe("AABABAA")
        expect([...early, ...rest].filter((s) => s.who === "A").map((s) => s.id)).toEqual(aIds)
        expect(rest.filter((s) => s.who === "B").map((s) => s.id)).toEqual(bIds)
      }))

    test("an account whose jobs all left the queue starts again from its front, neither behind nor ahead", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const a = yield* createAccount(1_000_000)
        const b = yield* createAccount(1_000_000)
        const names = new Map([[a.id as string, "A"], [b.id as string, "B"]])
        // B ran many jobs before; A's backlog waits when B comes back with one.
        yield* submitMany(b.id, 5, T0)
        yield* startAll(names)
        yield* submitMany(a.id, 4, T0 + 100)
        yield* startAll(names, undefined, 1)
        const [again] = yield* submitMany(b.id, 1, T0 + 200)
        const rest = yield* startAll(names)
        expect(rest.map((s) => s.who).join("")).toBe("ABAA")
        expect(rest[1]!.id).toBe(again)
        expect(yield* repo.claimBatch({ workerId: "w", now: T0 + 20_000, leaseMs: 1_000, maxAttempts: 3, limit: 1 })).toEqual([])
      }))
  })
}
