import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountId } from "../../src/domain/ids.js"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { enqueue } from "../../src/services/jobs/storeSubmit.js"
import { job } from "../conformance/fixtures.js"

/** A signal that counts its notifies. */
const countingSignal = () => {
  const counted = { notifies: 0 }
  const signal = JobSignal.of({ notify: Effect.sync(() => void counted.notifies++), wait: () => Effect.void })
  return { counted, signal }
}

describe("queuing a stored job", () => {
  it("wakes the store's claimers once, unless the store's own write woke them", () => {
    const queued = job("acc_q" as AccountId)
    for (const [woken, notifies] of [[false, 1], [true, 0]] as const) {
      const { counted, signal } = countingSignal()
      Effect.runSync(enqueue({ queue: Option.none(), signal }, queued, 1, woken))
      expect(counted.notifies).toBe(notifies)
    }
  })
})
