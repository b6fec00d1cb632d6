import { describe, expect, it } from "vitest"
import { PubsubPublishFailed, retryLater, ServiceUnavailable, shedReasonOf, StoreBusy, StoreError, storeBusyOf, STORE_RETRY_AFTER_SECONDS } from "../../src/domain/errors.js"
import { expectedWaitMs, observedHoldMs, shedRetryAfterSeconds } from "../../src/domain/storeWait.js"

describe("the wait a request can expect for a busy pool", () => {
  it("is the queue ahead of it and itself, served as many at a time as there are connections, one hold each", () => {
    expect(expectedWaitMs({ waiting: 0, connections: 10, holdMs: 20 })).toBe(2)
    expect(expectedWaitMs({ waiting: 499, connections: 10, holdMs: 20 })).toBe(1_000)
    expect(expectedWaitMs({ waiting: 9, connections: 1, holdMs: 5 })).toBe(50)
  })

  it("is nothing before any hold was seen: the bound alone decides then", () => {
    expect(expectedWaitMs({ waiting: 10_000, connections: 10, holdMs: undefined })).toBe(0)
  })

  it("follows the holds seen, each moving it a tenth of the way", () => {
    expect(observedHoldMs(undefined, 40)).toBe(40)
    expect(observedHoldMs(40, 140)).toBe(50)
    let hold = 1_000
    for (let i = 0; i < 50; i++) hold = observedHoldMs(hold, 10)
    expect(hold).toBeLessThan(20)
  })

  it("gives Retry-After as the seconds until the queue drains, from 1 to the store's own retry delay", () => {
    expect(shedRetryAfterSeconds(0)).toBe(1)
    expect(shedRetryAfterSeconds(1_001)).toBe(2)
    expect(shedRetryAfterSeconds(60_000)).toBe(STORE_RETRY_AFTER_SECONDS)
  })
})

describe("the answer to a request the store could not serve", () => {
  const busy = new StoreBusy({ reason: "store_busy", retryAfterSeconds: 2 })
  // As the SQL stores wrap it: the driver's error, whose cause is ours, inside a StoreError.
  const shed = new StoreError({ message: "read key failed", cause: { message: "Failed to acquire connection", cause: busy } })
  const failed = new StoreError({ message: "read key failed", cause: new Error("ECONNREFUSED") })

  it("finds the StoreBusy down the chain of causes, and nothing in a failure", () => {
    expect(storeBusyOf(shed)).toBe(busy)
    expect(storeBusyOf(failed)).toBeUndefined()
    expect(storeBusyOf(new StoreError({ message: "no cause" }))).toBeUndefined()
  })

  it("is the code asked for, with details.reason store_busy and the shed's Retry-After, counted as shed", () => {
    const answer = retryLater(PubsubPublishFailed, shed)
    expect([answer.code, answer.details, answer.retryAfterSeconds]).toEqual(["PUBSUB_PUBLISH_FAILED", { reason: "store_busy" }, 2])
    expect(shedReasonOf(answer)).toBe("store_busy")
  })

  it("is the code asked for, with details.reason store_unavailable and the store's Retry-After, not counted as shed", () => {
    const answer = retryLater(ServiceUnavailable, failed, { jobId: "job_1" })
    expect([answer.code, answer.details, answer.retryAfterSeconds])
      .toEqual(["SERVICE_UNAVAILABLE", { jobId: "job_1", reason: "store_unavailable" }, STORE_RETRY_AFTER_SECONDS])
    expect(shedReasonOf(answer)).toBeUndefined()
  })
})
