import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { StoreError } from "../../src/domain/errors.js"
import type { JobId } from "../../src/domain/ids.js"
import { type HeldLease, JobRepo } from "../../src/ports/JobRepo.js"
import { EngineConfig } from "../../src/services/EngineConfig.js"
import { makeLeaseKeeper, RENEWAL_CHUNK } from "../../src/services/leaseKeeper.js"

const LEASE = 3_000
const TICK = LEASE / 3

/**
 * The keeper over a store that only renews: it records each write's leases, and fails the
 * writes whose first lease is in `failing`.
 */
const keeperOver = (failing: Set<string>) => {
  const writes: Array<ReadonlyArray<HeldLease>> = []
  const repo = {
    renewLeases: (leases: ReadonlyArray<HeldLease>) =>
      Effect.suspend(() => {
        writes.push(leases)
        return failing.has(leases[0]!.id) ? Effect.fail(new StoreError({ message: "store down" })) : Effect.succeed(leases.map((l) => l.id))
      })
  } as unknown as JobRepo["Service"]
  const layer = Layer.merge(Layer.succeed(JobRepo, repo), EngineConfig.layer({ leaseMs: LEASE }))
  return { writes, keeper: makeLeaseKeeper.pipe(Effect.provide(layer)) }
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `job_${i}` as JobId)

describe("the lease keeper", () => {
  it.effect("renews the leases a process holds in writes of RENEWAL_CHUNK leases each, every tick", () =>
    Effect.scoped(Effect.gen(function*() {
      const { keeper, writes } = keeperOver(new Set())
      const k = yield* keeper
      const held = ids(RENEWAL_CHUNK * 2 + 1).map((id) => k.hold(id, "w", LEASE))
      yield* TestClock.adjust(TICK)
      expect(writes.map((w) => w.length)).toEqual([RENEWAL_CHUNK, RENEWAL_CHUNK, 1])
      expect(writes.flat().map((l) => l.id)).toEqual(held.map((l) => l.id))
      // Each lease's end moved on with the write that renewed it.
      expect(held.every((l) => l.expiresAt === TICK + LEASE && !l.lost)).toBe(true)
    })))

  it.effect("a failed write loses its leases and those after it only once their last known end passes", () =>
    Effect.scoped(Effect.gen(function*() {
      const second = `job_${RENEWAL_CHUNK}`
      const failing = new Set([second])
      const { keeper, writes } = keeperOver(failing)
      const k = yield* keeper
      const held = ids(RENEWAL_CHUNK * 3).map((id) => k.hold(id, "w", LEASE))
      yield* TestClock.adjust(TICK)
      // The tick's renewal stops at the failed write: the chunk after it waits for the next tick.
      expect(writes.map((w) => w[0]!.id)).toEqual(["job_0", second])
      expect(held.some((l) => l.lost)).toBe(false)
      // Two more ticks fail the same way; the first chunk's leases stay renewed, the others end.
      yield* TestClock.adjust(2 * TICK)
      expect(held.slice(0, RENEWAL_CHUNK).every((l) => !l.lost)).toBe(true)
      expect(held.slice(RENEWAL_CHUNK).every((l) => l.lost)).toBe(true)
    })))
})
