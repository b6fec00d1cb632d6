import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import { makeHeartbeats } from "../../src/http/jobStream.js"
import { STREAMS_PER_TURN } from "../../src/services/JobFollow.js"

/** Gives the scheduler turns until `done` holds (the slices' writes go on over turns, not the clock); at most 1,000. */
const turnsUntil = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 1_000 && !done(); turn++) yield* Effect.yieldNow
  })

describe("the heartbeats of many open streams", () => {
  it.effect("reach every stream once an interval, in slices, and none removed while they are written", () =>
    Effect.gen(function*() {
      const heartbeats = yield* makeHeartbeats(Duration.seconds(15))
      const count = STREAMS_PER_TURN * 3 + 7
      const beats = Array.from({ length: count }, () => 0)
      const streams = beats.map((_, i) => ({
        push: () => {
          beats[i]!++
          // The first stream's write closes one far down the list, as a client leaving between two slices.
          if (i === 0) heartbeats.remove(streams[count - 1]!)
          return true
        }
      }))
      for (const stream of streams) heartbeats.add(stream)
      const open = beats.slice(0, count - 1)
      yield* TestClock.adjust(Duration.seconds(15))
      yield* turnsUntil(() => open.every((_, i) => beats[i] === 1))
      expect(beats.slice(0, count - 1)).toEqual(open.map(() => 1))
      expect(beats[count - 1]).toBe(0)
      yield* TestClock.adjust(Duration.seconds(15))
      yield* turnsUntil(() => open.every((_, i) => beats[i] === 2))
      expect(beats.slice(0, count - 1)).toEqual(open.map(() => 2))
      expect(beats[count - 1]).toBe(0)
    }))
})
