import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer, Result } from "effect"
import { TestClock } from "effect/testing"
import { memoryAuthFailures } from "../../adapters/memory/MemoryAuthFailures.js"
import { AUTH_FAILURES_PER_MINUTE } from "../../src/domain/authThrottle.js"
import { InvalidApiKey } from "../../src/domain/accessRefusals.js"
import { isRefusal } from "../../src/domain/refusal.js"
import { AuthFailures } from "../../src/ports/AuthFailures.js"
import { AuthThrottle, CLEAN_CLIENT_TRUST_MS } from "../../src/services/AuthThrottle.js"

/** The failure store shared by "processes", counting the reads of this one. */
const shared = memoryAuthFailures()
const reads = { n: 0 }
const counted: AuthFailures["Service"] = { ...shared, recent: (client, bucket) => Effect.tap(shared.recent(client, bucket), () => Effect.sync(() => void reads.n++)) }
const layer = AuthThrottle.layer.pipe(Layer.provide(Layer.succeed(AuthFailures, counted)))

const wrongKey = Effect.fail(new InvalidApiKey({ message: "wrong" }))

describe("the guessing throttle's trust in a clean address", () => {
  it.effect("reads an address found under the limit again only after CLEAN_CLIENT_TRUST_MS, or at once after its own guess", () =>
    Effect.gen(function*() {
      const throttle = yield* AuthThrottle
      reads.n = 0
      expect(yield* throttle.guard("192.0.2.9", Effect.succeed("in"))).toBe("in")
      expect(yield* throttle.guard("192.0.2.9", Effect.succeed("in"))).toBe("in")
      expect(reads.n).toBe(1)
      yield* TestClock.adjust(CLEAN_CLIENT_TRUST_MS)
      yield* throttle.guard("192.0.2.9", Effect.succeed("in"))
      expect(reads.n).toBe(2)
      // Its own guesses count at once: the limit holds exactly within a process.
      for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) yield* Effect.result(throttle.guard("192.0.2.9", wrongKey))
      // The first guess came under the trust just given; each after it read the count again.
      expect(reads.n).toBe(2 + AUTH_FAILURES_PER_MINUTE - 1)
      const refused = yield* Effect.result(throttle.guard("192.0.2.9", Effect.succeed("in")))
      expect(Result.isFailure(refused) && isRefusal(refused.failure) ? refused.failure.code : undefined).toBe("RATE_LIMIT_EXCEEDED")
    }).pipe(Effect.provide(layer)))

  it.effect("sees another process's guesses at an address it trusted once the trust ends", () =>
    Effect.gen(function*() {
      const throttle = yield* AuthThrottle
      yield* throttle.guard("192.0.2.10", Effect.succeed("in"))
      // Another process records the address's guesses in the shared store.
      const now = yield* Clock.currentTimeMillis
      for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) yield* shared.record("192.0.2.10", Math.floor(now / 60_000))
      yield* TestClock.adjust(CLEAN_CLIENT_TRUST_MS)
      const refused = yield* Effect.result(throttle.guard("192.0.2.10", Effect.succeed("in")))
      expect(Result.isFailure(refused)).toBe(true)
    }).pipe(Effect.provide(layer)))
})
