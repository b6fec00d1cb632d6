import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { StoreError } from "../../src/domain/errors.js"
import type { JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { QueueConsumer, QueueDelivery } from "../../src/ports/JobQueue.js"
import { GATHER_MS, makeBrokerClaims } from "../../src/services/brokerClaims.js"

const id = (s: string) => s as JobId
const delivery = (jobId: string, receipt: string): QueueDelivery => ({ jobId: id(jobId), receipt })

/** A consumer that gives out `deliveries` once and records what is acked. */
const consumerOf = (deliveries: ReadonlyArray<QueueDelivery>) => {
  const acked: Array<string> = []
  let given = false
  const consumer: QueueConsumer = {
    receive: () =>
      Effect.sync(() => {
        if (given) return []
        given = true
        return deliveries
      }),
    extend: () => Effect.void,
    ack: (ds) => Effect.sync(() => void acked.push(...ds.map((d) => d.receipt)))
  }
  return { consumer, acked }
}

// A: pending, claimed here (delivered twice); B: ended; C: running in another worker.
const deliveries = [delivery("A", "1"), delivery("A", "2"), delivery("B", "3"), delivery("C", "4")]
const claimA = (ids: ReadonlyArray<JobId>) => Effect.succeed(ids.filter((i) => i === "A").map((i) => ({ id: i }) as Job))

describe("a worker's claims through a broker", () => {
  it.effect("acks the deliveries of ended jobs, keeps those of running ones, reading the store once for all of them", () =>
    Effect.scoped(Effect.gen(function*() {
      const { acked, consumer } = consumerOf(deliveries)
      const claims = yield* makeBrokerClaims(consumer, 60_000)
      const reads: Array<ReadonlyArray<JobId>> = []
      const jobs = yield* claims.take(10, 0, claimA, (ids) =>
        Effect.sync(() => {
          reads.push(ids)
          return new Set(ids.filter((i) => i === "A" || i === "C"))
        }))
      expect(jobs.map((job) => job.id)).toEqual(["A"])
      expect(reads).toEqual([["A", "B", "C"]])
      // B ended: its delivery goes. A's second delivery and C's come back later, to be checked again.
      expect(acked).toEqual(["3"])
    })))

  it.effect("leaves every turned-away delivery unacked when the store cannot say, and still answers the claimed jobs", () =>
    Effect.scoped(Effect.gen(function*() {
      const { acked, consumer } = consumerOf(deliveries)
      const claims = yield* makeBrokerClaims(consumer, 60_000)
      const jobs = yield* claims.take(10, 0, claimA, () => Effect.fail(new StoreError({ message: "injected store fault" })))
      expect(jobs.map((job) => job.id)).toEqual(["A"])
      expect(acked).toEqual([])
    })))

  it.effect("a worker that stops acks the deliveries of the runs that ended as it stopped: none comes back to be turned away", () =>
    Effect.gen(function*() {
      const { acked, consumer } = consumerOf([delivery("A", "1")])
      yield* Effect.scoped(Effect.gen(function*() {
        const claims = yield* makeBrokerClaims(consumer, 60_000)
        const jobs = yield* claims.take(10, 0, claimA, () => Effect.succeed(new Set()))
        expect(jobs.map((job) => job.id)).toEqual(["A"])
        // The run ends, and the worker stops at once: before its acks' fiber sent anything.
        yield* claims.done(id("A"))
      }))
      expect(acked).toEqual(["1"])
    }))
})

/** A consumer that gives out the next of `batches` on each receive and counts its receives. */
const consumerOfBatches = (batches: Array<ReadonlyArray<QueueDelivery>>) => {
  let receives = 0
  const consumer: QueueConsumer = {
    receive: () =>
      Effect.sync(() => {
        receives++
        return batches.shift() ?? []
      }),
    extend: () => Effect.void,
    ack: () => Effect.void
  }
  return { consumer, receives: () => receives }
}

const claimAll = (ids: ReadonlyArray<JobId>) => Effect.succeed(ids.map((i) => ({ id: i }) as Job))
const none = () => Effect.succeed(new Set<JobId>())

describe("a worker's claims through a broker, gathered", () => {
  it.effect("a take for one fiber while most are busy with short runs waits for half of them to end and answers nothing; the next take claims", () =>
    Effect.scoped(Effect.gen(function*() {
      const { consumer, receives } = consumerOfBatches([["A", "B", "C", "D", "E"].map((j, i) => delivery(j, String(i))), [delivery("F", "5")]])
      const claims = yield* makeBrokerClaims(consumer, 60_000)
      expect((yield* claims.take(5, 0, claimAll, none)).length).toBe(5)
      // A's run ended at once (a short run); the four others are still going.
      yield* claims.done(id("A"))
      const gathering = yield* Effect.forkChild(claims.take(1, 0, claimAll, none))
      yield* Effect.yieldNow
      yield* claims.done(id("B"))
      yield* claims.done(id("C"))
      // Half the four busy runs ended: the take answers nothing, without asking the broker, and
      // the claimer claims for the three fibers idle by then.
      expect(yield* Fiber.join(gathering)).toEqual([])
      expect(receives()).toBe(1)
      expect((yield* claims.take(3, 0, claimAll, none)).map((job) => job.id)).toEqual(["F"])
      expect(receives()).toBe(2)
    })))

  it.effect("a take is not held back when the runs here are long (generations) or few are busy", () =>
    Effect.scoped(Effect.gen(function*() {
      const { consumer, receives } = consumerOfBatches([["A", "B", "C", "D"].map((j, i) => delivery(j, String(i))), [delivery("E", "4")], [delivery("F", "5")]])
      const claims = yield* makeBrokerClaims(consumer, 60_000)
      expect((yield* claims.take(4, 0, claimAll, none)).length).toBe(4)
      yield* TestClock.adjust(Duration.millis(GATHER_MS + 1))
      yield* claims.done(id("A"))
      // Three runs busy for one fiber asked, but the run that ended lasted longer than GATHER_MS.
      expect((yield* claims.take(1, 0, claimAll, none)).map((job) => job.id)).toEqual(["E"])
      yield* claims.done(id("B"))
      yield* claims.done(id("C"))
      yield* claims.done(id("D"))
      yield* claims.done(id("E"))
      // Short runs, but nothing busy: claimed at once.
      expect((yield* claims.take(1, 0, claimAll, none)).map((job) => job.id)).toEqual(["F"])
      expect(receives()).toBe(3)
    })))
})
