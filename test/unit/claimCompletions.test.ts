import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { accountRepo } from "../../adapters/memory/MemoryAccounts.js"
import { memoryJobDriver } from "../../adapters/memory/MemoryJobs.js"
import { makeMemoryState } from "../../adapters/memory/state.js"
import type { JobDrivers } from "../../src/ports/JobLeaseDriver.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { account, job, NO_LIMITS, T0 } from "../conformance/fixtures.js"

/** A memory repo whose completion writes take a store's round trip (20 ms), recording the jobs each ended. */
const setup = Effect.gen(function*() {
  const state = yield* makeMemoryState
  const owner = yield* accountRepo(state).create(account(), 1_000_000)
  const base = memoryJobDriver(state)
  const writes: Array<ReadonlyArray<string>> = []
  const drivers: JobDrivers = {
    ...base,
    leases: {
      ...base.leases,
      finishHeld: (endings) =>
        Effect.andThen(
          Effect.sync(() => writes.push(endings.map((e) => e.id))),
          Effect.andThen(Effect.sleep("20 millis"), base.leases.finishHeld(endings))
        )
    }
  }
  const repo = yield* makeJobRepo(drivers)
  const submitted = (count: number, from: number) =>
    Effect.forEach(Array.from({ length: count }, (_, i) => job(owner.id, { createdAt: T0 + from + i, fairKey: from + i })), (j) =>
      repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS }))
  return { repo, writes, submitted }
})

describe("a claim's completions", () => {
  it.live("the first of a claim's quick jobs to end waits for the others: one write for the claim", () =>
    Effect.gen(function*() {
      const { repo, submitted, writes } = yield* setup
      // A claim of one job ends at once (and gives the writer its round trip's length).
      yield* submitted(1, 0)
      const [single] = yield* repo.claimBatch({ workerId: "w_1", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3, limit: 1 })
      yield* repo.complete(single!.id, "w_1", [], T0 + 11)
      expect(writes).toEqual([[single!.id]])

      yield* submitted(3, 1)
      const claimed = yield* repo.claimBatch({ workerId: "w_2", now: T0 + 20, leaseMs: 60_000, maxAttempts: 3, limit: 3 })
      expect(claimed).toHaveLength(3)
      const first = yield* Effect.forkChild(repo.complete(claimed[0]!.id, "w_2", [], T0 + 21))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      const rest = yield* Effect.forkChild(Effect.all(claimed.slice(1).map((j) => repo.complete(j.id, "w_2", [], T0 + 22)), { concurrency: "unbounded" }))
      yield* Fiber.join(first)
      yield* Fiber.join(rest)
      // Without the hold: the first alone, then the other two one round trip later.
      expect(writes.slice(1).map((ids) => [...ids].sort())).toEqual([claimed.map((j) => j.id).sort()])
    }))
})
