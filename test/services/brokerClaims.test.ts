import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { StoreError } from "../../src/domain/errors.js"
import type { JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { QueueConsumer, QueueDelivery } from "../../src/ports/JobQueue.js"
import { makeBrokerClaims } from "../../src/services/brokerClaims.js"

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
