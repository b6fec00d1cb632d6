import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import type { QueuePlace } from "../../src/domain/queuePosition.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { QueueBook } from "../../src/services/QueueBook.js"
import { engineOver } from "../support/engineLayer.js"
import { idleProvider } from "../support/providers.js"
import { submitMany } from "../support/submitMany.js"
import { until } from "../support/waitFor.js"

/** The memory stores, their queue's grouped reads counted: one per refresh of the places. */
const countedReads = () => {
  const reads = { count: 0 }
  const stores = Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Layer.Success<typeof layerMemoryStores>>()
    const repo = Context.get(context, AdminReadRepo)
    return Context.add(context, AdminReadRepo, { ...repo, waitingSummary: Effect.suspend(() => (reads.count++, repo.waitingSummary)) })
  })).pipe(Layer.provide(layerMemoryStores))
  return { reads, stores }
}

describe("the status streams' places, refreshed", () => {
  it.live("tell a stream opened while the queue stands still its place at the next refresh", () => {
    const { reads, stores } = countedReads()
    return Effect.gen(function*() {
      // No worker runs here: the jobs stay pending, and the queue does not move.
      const ids = yield* submitMany(3)
      const book = yield* QueueBook
      const third = Option.getOrThrow(yield* (yield* JobRepo).get(ids[2]!))
      const first = Option.getOrThrow(yield* (yield* JobRepo).get(ids[0]!))
      const placeOfFirst = yield* book.place(first)
      // A stream of the first job, told its place: the refreshes run, and find nothing moved.
      const toldFirst: Array<number> = []
      const stopFirst = book.watch(first, (place) => toldFirst.push(place.position), placeOfFirst)
      const before = reads.count
      yield* until("two refreshes of a queue that did not move", () => reads.count >= before + 2, 5_000)
      // A stream opened now with a place that is no longer right (as one read before a change
      // would be): the queue has not moved since the last refresh, and still this stream is told.
      const told: Array<QueuePlace> = []
      const stale = { position: 1, ahead: 0, estimatedStartAt: { p50: 0, p90: 0 }, estimatedCompletionAt: { p50: 0, p90: 0 } }
      const stopThird = book.watch(third, (place) => told.push(place), stale)
      yield* until("the third job's place told", () => told.length > 0, 5_000)
      expect(told.map((place) => place.position)).toEqual([3])
      // The first job's stream was told nothing: its place never changed.
      expect(toldFirst).toEqual([])
      stopFirst()
      stopThird()
    }).pipe(Effect.provide(engineOver(stores, idleProvider, { pollIntervalMs: 20 })))
  })
})
