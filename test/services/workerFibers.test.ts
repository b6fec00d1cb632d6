import { Effect, Exit, Layer, ManagedRuntime, Option, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { layerMemoryJobQueue } from "../../adapters/memory/MemoryJobQueue.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { Worker } from "../../src/services/Worker.js"
import { AHEAD_PER_FIBER } from "../../src/services/worker/start.js"
import { memoryEngine } from "../support/engineLayer.js"
import { idleProvider } from "../support/providers.js"
import { startedFibers } from "../support/fiberCount.js"
import { submitMany } from "../support/submitMany.js"

const FIBERS = 8

/**
 * Drains `n` jobs queued before the worker starts (memory store, in process, a provider that
 * finishes in its start; the store's own queue, or the memory broker) and answers how many
 * fibers the worker started meanwhile.
 */
const fibersToDrain = async (n: number, broker = false) => {
  const engine = memoryEngine(idleProvider, { leaseMs: 60_000, pollIntervalMs: 50 })
  const runtime = ManagedRuntime.make(broker ? Layer.provideMerge(engine, layerMemoryJobQueue) : engine)
  try {
    return await runtime.runPromise(Effect.gen(function*() {
      const ids = yield* submitMany(n)
      const repo = yield* JobRepo
      const completed = (id: JobId) => Effect.map(repo.get(id), (job) => Option.isSome(job) && job.value.status === "completed")
      const { count, counter } = startedFibers()
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(FIBERS).pipe(count, Scope.provide(scope))
      let from = 0
      while (from < n) {
        if (yield* completed(ids[from]!)) from++
        else yield* Effect.sleep("5 millis")
      }
      const started = counter.started
      yield* Scope.close(scope, Exit.void)
      return started
    }))
  } finally {
    await runtime.dispose()
  }
}

describe("worker fibers", () => {
  it("starts the same fibers to drain 1,000 jobs as to drain 100: a job is data on a runner fiber, not a fiber of its own", async () => {
    const few = await fibersToDrain(100)
    const many = await fibersToDrain(1_000)
    // The runners (one per fiber and one per job claimed ahead), the claimer, the reaper, the
    // relay, the lease keeper's loop, and the claimer's waits once the queue ran dry (a race with
    // a timeout, every poll interval: time, not jobs).
    expect(few).toBeGreaterThanOrEqual(FIBERS)
    expect(few).toBeLessThan(FIBERS * (1 + AHEAD_PER_FIBER) + 12)
    expect(Math.abs(many - few)).toBeLessThanOrEqual(6)
  }, 60_000)

  it("on a broker too: a run's end acks its delivery without a fiber of its own", async () => {
    const few = await fibersToDrain(100, true)
    const many = await fibersToDrain(1_000, true)
    // Besides the store's: the delivery extender and the acker, and the broker's waits for a
    // delivery once the queue ran dry (time, not jobs).
    expect(few).toBeGreaterThanOrEqual(FIBERS)
    expect(few).toBeLessThan(FIBERS * (1 + AHEAD_PER_FIBER) + 20)
    expect(Math.abs(many - few)).toBeLessThanOrEqual(6)
  }, 60_000)
})
