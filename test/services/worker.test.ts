import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, type Layer, Option, Ref, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { Jobs } from "../../src/services/Jobs.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"
import { textOutput } from "../support/providers.js"

/** A provider whose first `hangs` polls never answer (their worker "dies"), later polls succeed after `takesMs`. */
const scripted = (hangs: number, takesMs = 0) =>
  Effect.map(Ref.make(0), (polls): GenerationProvider => ({
    start: () => Effect.succeed({ _tag: "Started", handle: { id: "gen_1" } }),
    poll: () =>
      Ref.getAndUpdate(polls, (n) => n + 1).pipe(
        Effect.flatMap((n) => (n < hangs ? Effect.never : Effect.sleep(takesMs))),
        Effect.as({ _tag: "Succeeded", outputs: [textOutput("done")] } as const)
      ),
    cancel: () => Effect.void
  }))

const LEASE = 10_000
const settings = { leaseMs: LEASE, maxAttempts: 2, pollIntervalMs: 100, drainTimeoutMs: 60_000 }
const submitText = (caller: Effect.Success<ReturnType<typeof demoCaller>>) =>
  Jobs.use((jobs) =>
    jobs.submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: "p" } }, "req_t" as RequestId)
  )
const jobOf = (id: JobId) => JobRepo.use((repo) => repo.get(id)).pipe(Effect.map(Option.getOrThrow))
const balanceOf = (id: AccountId) => AccountRepo.use((repo) => repo.get(id)).pipe(Effect.map((a) => Option.getOrThrow(a).balanceMicroCents))

type EngineServices = Layer.Success<ReturnType<typeof memoryEngine>>
const withGenerator = <A, E>(hangs: number, takesMs: number, body: Effect.Effect<A, E, EngineServices>) =>
  Effect.flatMap(scripted(hangs, takesMs), (generator) => Effect.provide(body, memoryEngine(generator, settings)))

describe("Worker", () => {
  it.effect("takes over a job whose worker died once the lease expires", () =>
    withGenerator(1, 0, Effect.gen(function*() {
      const worker = yield* Worker
      const caller = yield* demoCaller()
      const { job } = yield* submitText(caller)
      const dying = yield* Effect.forkChild(worker.runOnce("A"))
      yield* TestClock.adjust(1)
      yield* Fiber.interrupt(dying)
      expect((yield* jobOf(job.id))).toMatchObject({ status: "processing", attempts: 1, leaseOwner: "A" })

      expect(yield* worker.runOnce("B")).toBe(false)
      yield* TestClock.adjust(LEASE)
      expect(yield* worker.runOnce("B")).toBe(true)
      const done = yield* jobOf(job.id)
      expect(done).toMatchObject({ status: "completed", attempts: 2, leaseOwner: null })
      expect(done.outputs?.[0]?.url).toMatch(new RegExp(`^http://files.test/files/${job.id}-[0-9a-f]{8}-0\\.txt$`))
    })))

  it.effect("fails the job with a refund when every attempt's worker died", () =>
    withGenerator(2, 0, Effect.gen(function*() {
      const worker = yield* Worker
      const caller = yield* demoCaller(100_000)
      const { job } = yield* submitText(caller)
      for (const id of ["A", "B"]) {
        const dying = yield* Effect.forkChild(worker.runOnce(id))
        yield* TestClock.adjust(1)
        yield* Fiber.interrupt(dying)
        yield* TestClock.adjust(LEASE)
      }
      expect(yield* balanceOf(caller.account.id)).toBe(100_000 - job.costMicroCents)
      expect(yield* worker.runOnce("C")).toBe(false)
      expect(yield* worker.reapOnce("R")).toBe(1)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "failed", attempts: 2, error: { code: "INTERNAL_ERROR" } })
      expect(yield* balanceOf(caller.account.id)).toBe(100_000)
    })))

  it.effect("keeps the lease alive while a long job runs", () =>
    withGenerator(0, 3 * LEASE, Effect.gen(function*() {
      const worker = yield* Worker
      const { job } = yield* submitText(yield* demoCaller())
      const running = yield* Effect.forkChild(worker.runOnce("A"))
      yield* TestClock.adjust(2 * LEASE)
      expect(yield* worker.runOnce("B")).toBe(false)
      yield* TestClock.adjust(LEASE)
      yield* Fiber.join(running)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", attempts: 1 })
    })))

  it.effect("on shutdown hands back a job whose generation waits at its provider, and claims nothing new", () =>
    withGenerator(0, 5_000, Effect.gen(function*() {
      const worker = yield* Worker
      const caller = yield* demoCaller()
      const { job } = yield* submitText(caller)
      const scope = yield* Scope.make()
      yield* worker.start(1).pipe(Scope.provide(scope))
      yield* TestClock.adjust(1)
      expect((yield* jobOf(job.id)).status).toBe("processing")
      const closed = yield* Deferred.make<void>()
      yield* Effect.forkChild(Scope.close(scope, Exit.void).pipe(Effect.andThen(Deferred.succeed(closed, undefined))))
      yield* TestClock.adjust(1)
      const later = yield* submitText(caller)
      yield* TestClock.adjust(5_000)
      yield* Deferred.await(closed)
      // Its generation was started and its handle stored: its lease is given back for the next claim to resume it.
      expect(yield* jobOf(job.id)).toMatchObject({ status: "processing", leaseOwner: null, attempts: 0, providerHandle: { id: "gen_1" } })
      expect((yield* jobOf(later.job.id)).status).toBe("pending")
    })))
})
