import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { makeWakeOne } from "../../adapters/memory/LocalJobSignal.js"

/** A wait forked now, and whether it has ended. */
const waiting = (signal: Effect.Success<typeof makeWakeOne>, maxMs: number) =>
  Effect.map(Effect.forkChild(signal.wait(maxMs)), (fiber) => ({ ended: () => fiber.pollUnsafe() !== undefined, fiber }))

describe("the job signal's wake-ups (makeWakeOne)", () => {
  it.effect("a notify wakes the oldest waiter only; one with nobody waiting is kept for the next wait", () =>
    Effect.scoped(Effect.gen(function*() {
      const signal = yield* makeWakeOne
      const first = yield* waiting(signal, 60_000)
      const second = yield* waiting(signal, 60_000)
      yield* TestClock.adjust(1)
      yield* signal.notify
      yield* TestClock.adjust(1)
      expect([first.ended(), second.ended()]).toEqual([true, false])
      yield* signal.notify
      yield* Fiber.join(second.fiber)
      // Kept: the next wait returns at once, the one after it waits again.
      yield* signal.notify
      yield* signal.wait(60_000)
      const third = yield* waiting(signal, 60_000)
      yield* TestClock.adjust(59_000)
      expect(third.ended()).toBe(false)
    })))

  it.effect("a wait nobody wakes ends at its maxMs on the Clock; a shorter one started later ends at its own", () =>
    Effect.scoped(Effect.gen(function*() {
      const signal = yield* makeWakeOne
      const long = yield* waiting(signal, 1_000)
      yield* TestClock.adjust(100)
      // Its end (at 300) is before the long one's (at 1,000), which the timer sleeps toward.
      const short = yield* waiting(signal, 200)
      yield* TestClock.adjust(199)
      expect([long.ended(), short.ended()]).toEqual([false, false])
      yield* TestClock.adjust(1)
      expect([long.ended(), short.ended()]).toEqual([false, true])
      yield* TestClock.adjust(699)
      expect(long.ended()).toBe(false)
      yield* TestClock.adjust(1)
      expect(long.ended()).toBe(true)
    })))

  it.effect("an interrupted wait leaves the list: the next notify goes to the waiter behind it", () =>
    Effect.scoped(Effect.gen(function*() {
      const signal = yield* makeWakeOne
      const gone = yield* waiting(signal, 60_000)
      const next = yield* waiting(signal, 60_000)
      yield* TestClock.adjust(1)
      yield* Fiber.interrupt(gone.fiber)
      yield* signal.notify
      yield* Fiber.join(next.fiber)
    })))
})
