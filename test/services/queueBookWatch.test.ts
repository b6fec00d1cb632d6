import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { EVERY_CHANGE_WITHIN, FAR_TURNS, type QueuePlace } from "../../src/domain/queuePosition.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { Jobs } from "../../src/services/Jobs.js"
import { QueueBook } from "../../src/services/QueueBook.js"
import { engineOver } from "../support/engineLayer.js"
import { idleProvider } from "../support/providers.js"
import { submitAs, submitMany, unlimitedCaller } from "../support/submitMany.js"
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

  it.effect("tell every change near the head at the next refresh, and a place further back once, in its stream's turn", () => {
    const POLL_MS = 20
    const { reads, stores } = countedReads()
    return Effect.gen(function*() {
      const caller = yield* unlimitedCaller
      const ids = yield* submitAs(caller, EVERY_CHANGE_WITHIN + FAR_TURNS + 5)
      const book = yield* QueueBook
      const repo = yield* JobRepo
      /** One refresh of the places: the test clock moves a poll interval, and the loop reads the queue once. */
      const refresh = Effect.gen(function*() {
        const before = reads.count
        yield* TestClock.adjust(POLL_MS)
        for (let i = 0; i < 1_000 && reads.count === before; i++) yield* Effect.yieldNow
        expect(reads.count).toBe(before + 1)
        // The round tells its streams after its read.
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      })
      const told: Array<{ readonly stream: number; readonly round: number; readonly position: number }> = []
      // Third in the queue, and FAR_TURNS jobs from the 102nd on: still beyond the first hundred after one job leaves.
      const followed = [2, ...Array.from({ length: FAR_TURNS }, (_, k) => EVERY_CHANGE_WITHIN + 1 + k)]
      const stops: Array<() => void> = []
      for (const [stream, index] of followed.entries()) {
        const job = Option.getOrThrow(yield* repo.get(ids[index]!))
        const place = yield* book.place(job)
        expect(place?.position).toBe(index + 1)
        stops.push(book.watch(job, (found) => told.push({ stream, round: reads.count, position: found.position }), place))
      }
      // The loop's first round and one more: nothing moved, nothing told.
      yield* refresh
      yield* refresh
      expect(told).toEqual([])
      // The queue's first job leaves: every followed job moves up one place.
      yield* (yield* Jobs).cancel(caller, ids[0]!)
      const moved = reads.count + 1
      for (let i = 0; i < 2 * FAR_TURNS; i++) yield* refresh
      // The job near the head, at the first refresh after the move.
      expect(told.filter((t) => t.stream === 0)).toEqual([{ stream: 0, round: moved, position: 2 }])
      const far = told.filter((t) => t.stream > 0)
      // Each job further back, once, its new place, within FAR_TURNS refreshes of the move...
      expect(far.map((t) => [t.stream, t.position]).sort((a, b) => a[0]! - b[0]!)).toEqual(
        followed.slice(1).map((index, k) => [k + 1, index]))
      for (const t of far) expect(t.round - moved).toBeLessThan(FAR_TURNS)
      // ...each in a refresh of its own: the streams' turns spread their writes.
      expect(new Set(far.map((t) => t.round)).size).toBe(FAR_TURNS)
      for (const stop of stops) stop()
    }).pipe(Effect.provide(engineOver(stores, idleProvider, { pollIntervalMs: POLL_MS })))
  })
})
