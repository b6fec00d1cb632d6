import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { TestEngine, testCatalog } from "genjobs/testing"

const LEASE_MS = 10_000

describe("the test engine on TestClock", () => {
  it.effect("expires a key only when the clock is moved", () =>
    Effect.gen(function*() {
      const alice = yield* TestEngine.account({ expiresIn: "1 hour" })
      const { createdAt, jobId } = yield* alice.submit("test/text").pipe(Effect.flatMap((s) => alice.get(s.jobId)))
      expect(createdAt).toBe("1970-01-01T00:00:00.000Z")
      yield* TestClock.adjust("59 minutes")
      expect((yield* alice.get(jobId)).status).toBe("pending")
      yield* TestClock.adjust("1 minute")
      expect(yield* Effect.flip(alice.get(jobId))).toMatchObject({ status: 401, code: "API_KEY_EXPIRED" })
    }).pipe(Effect.provide(TestEngine.layer())))

  it.effect("lets another run take over a job once the lease of a dead one expires, resuming its generation", () =>
    Effect.gen(function*() {
      const engine = yield* TestEngine
      const alice = yield* engine.account()
      const hang = engine.provider.hangNext()
      const { jobId } = yield* alice.submit("test/text")
      const dying = yield* Effect.forkChild(engine.runNextJob)
      yield* Effect.promise(() => hang.reached)
      yield* Fiber.interrupt(dying)
      expect((yield* alice.get(jobId)).status).toBe("processing")
      expect(yield* engine.runNextJob).toBe(false)
      yield* TestClock.adjust(LEASE_MS)
      const taking = yield* Effect.forkChild(engine.runNextJob)
      yield* TestClock.adjust(1)
      hang.release()
      expect(yield* Fiber.join(taking)).toBe(true)
      expect((yield* alice.get(jobId)).status).toBe("completed")
      // The second run polled the generation the first one started: the provider was asked once.
      // (Whether the dying run got to its own first poll before its interruption is scheduling.)
      expect(engine.provider.calls.map((c) => c.job.attempts)).toEqual([1])
      expect(engine.provider.starts).toBe(1)
      expect(engine.provider.polls).toBeGreaterThanOrEqual(1)
    }).pipe(Effect.provide(TestEngine.layer({ settings: { leaseMs: LEASE_MS } }))))

  it.effect("opens a model's rate-limit window again a minute later", () =>
    Effect.gen(function*() {
      const [text] = testCatalog.models
      const limited = { ...text!, versions: text!.versions.map((v) => ({ ...v, rateLimits: { requestsPerMinute: 1, requestsPerDay: 0 } })) }
      yield* TestEngine.catalog({ ...testCatalog, models: [limited] })
      const alice = yield* TestEngine.account()
      yield* alice.submit("test/text")
      expect(yield* Effect.flip(alice.submit("test/text"))).toMatchObject({ status: 429, code: "RATE_LIMIT_EXCEEDED" })
      yield* TestClock.adjust("1 minute")
      yield* alice.submit("test/text")
      expect(yield* TestEngine.runJobs).toBe(2)
    }).pipe(Effect.provide(TestEngine.layer())))
})
