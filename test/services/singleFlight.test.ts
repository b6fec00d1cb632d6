import { Deferred, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { makeSingleFlight } from "../../src/services/singleFlight.js"

/** A read that counts its runs and answers when `gate` opens. */
const gatedRead = (gate: Deferred.Deferred<number, string>) => {
  let runs = 0
  return { read: Effect.suspend(() => (runs++, Deferred.await(gate))), runs: () => runs }
}

describe("single-flight reads", () => {
  it("answers a herd asking for one key with one read, and reads again once it answered", () =>
    Effect.runPromise(Effect.gen(function*() {
      const once = makeSingleFlight<string, number, string>()
      const gate = yield* Deferred.make<number, string>()
      const { read, runs } = gatedRead(gate)
      const herd = yield* Effect.forEach(Array.from({ length: 100 }), () => Effect.forkChild(once("k", read)))
      yield* Effect.yieldNow
      expect(runs()).toBe(1)
      yield* Deferred.succeed(gate, 7)
      expect(yield* Effect.forEach(herd, Fiber.join)).toEqual(Array.from({ length: 100 }, () => 7))
      expect(yield* once("k", Effect.succeed(8))).toBe(8)
    })))

  it("reads each key on its own", () =>
    Effect.runPromise(Effect.gen(function*() {
      const once = makeSingleFlight<string, string, never>()
      const answers = yield* Effect.all([once("a", Effect.succeed("A")), once("b", Effect.succeed("B"))], { concurrency: 2 })
      expect(answers).toEqual(["A", "B"])
    })))

  it("gives the read's failure to every waiter, and a leaving first caller does not fail the others", () =>
    Effect.runPromise(Effect.gen(function*() {
      const once = makeSingleFlight<string, number, string>()
      const gate = yield* Deferred.make<number, string>()
      const { read } = gatedRead(gate)
      const first = yield* Effect.forkChild(once("k", read))
      yield* Effect.yieldNow
      const second = yield* Effect.forkChild(once("k", read))
      yield* Effect.yieldNow
      // The first caller's client leaves: its read still answers the second.
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(first))
      yield* Deferred.fail(gate, "down")
      yield* Fiber.join(interrupting)
      // That failure alone (compared by what the cause holds: Effect 4 may annotate its reasons).
      const exit = yield* Fiber.await(second)
      expect(Exit.isFailure(exit) && exit.cause.reasons.map((reason) => (reason._tag === "Fail" ? reason.error : reason._tag))).toEqual(["down"])
    })))
})
