import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import type { RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { JobFollow } from "../../src/services/JobFollow.js"
import { Jobs } from "../../src/services/Jobs.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"

const LEASE = 10_000
/** Every run hangs: its worker "dies" and the lease runs out. */
const hanging: GenerationProvider = { start: () => Effect.never, poll: () => Effect.never, cancel: () => Effect.void }

/** Waits for `effect` at most `ms` of real time (TestClock does not move by itself). */
const withinRealTime = <A, E>(ms: number, effect: Effect.Effect<A, E>) =>
  Effect.race(effect, Effect.promise(() => new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))))

describe("JobFollow", () => {
  it.effect("hears of a job the reaper failed at once, without waiting for the sweep", () =>
    Effect.gen(function*() {
      const worker = yield* Worker
      const follow = yield* JobFollow
      const { job } = yield* (yield* Jobs).submit(yield* demoCaller(), { model: "demo/text-gen/text-to-text", input: { prompt: "p" } }, "req_t" as RequestId)
      const dying = yield* Effect.forkChild(worker.runOnce("A"))
      yield* TestClock.adjust(1)
      yield* Fiber.interrupt(dying)
      yield* TestClock.adjust(LEASE)

      const seen: Array<Job["status"]> = []
      const processing = yield* Deferred.make<void>()
      const ended = yield* Deferred.make<void>()
      yield* follow.listen(job.id, 0, {
        onJob: (current) => {
          seen.push(current.status)
          if (current.status === "processing") Deferred.doneUnsafe(processing, Effect.void)
        },
        onEnd: () => Deferred.doneUnsafe(ended, Effect.void)
      })
      yield* withinRealTime(2_000, Deferred.await(processing))
      // The clock stands still from here: only the reaper's hint can make the follower read again.
      expect(yield* worker.reapOnce("R")).toBe(1)
      yield* withinRealTime(2_000, Deferred.await(ended))
      expect(seen).toEqual(["processing", "failed"])
    }).pipe(Effect.provide(memoryEngine(hanging, { leaseMs: LEASE, maxAttempts: 1 }))))
})
