import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Redacted } from "effect"
import { layerPostgres } from "../../adapters/sql/layer.js"
import { layerPgJobSignal } from "../../adapters/sql/PgJobSignal.js"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { runStoreConformance } from "./storeSuite.js"

const probe = await freshPostgresUrl()

if (probe === undefined) {
  describe.skip("postgres (server not reachable)", () => {
    it("runs the store conformance suite", () => undefined)
  })
} else {
  // A fresh database per test, so queue tests see only their own jobs.
  runStoreConformance("postgres", () =>
    Layer.unwrapEffect(
      Effect.promise(freshPostgresUrl).pipe(Effect.map((url) => layerPostgres({ url: Redacted.make(url!) })))
    ))

  describe("postgres: JobSignal over LISTEN/NOTIFY", () => {
    /** Each signal has its own pool, as separate processes would. */
    const signal = Layer.build(layerPgJobSignal({ url: Redacted.make(probe) })).pipe(
      Effect.map((context) => Context.get(context, JobSignal))
    )

    it.live("a notify from one process wakes a waiter in another", () =>
      Effect.gen(function*() {
        const listener = yield* signal
        const sender = yield* signal
        yield* Effect.sleep("300 millis")
        const waiting = yield* Effect.fork(Effect.timed(listener.wait(10_000)))
        yield* Effect.sleep("100 millis")
        yield* sender.notify
        const [elapsed] = yield* Fiber.join(waiting)
        expect(Duration.toMillis(elapsed)).toBeLessThan(5_000)
      }).pipe(Effect.scoped))

    it.live("wait gives up after its timeout when nothing is queued", () =>
      Effect.gen(function*() {
        const listener = yield* signal
        const [elapsed] = yield* Effect.timed(listener.wait(300))
        expect(Duration.toMillis(elapsed)).toBeGreaterThanOrEqual(290)
      }).pipe(Effect.scoped))
  })
}
