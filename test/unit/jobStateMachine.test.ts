import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { isTerminal, jobEvents, JobStatus, progressOf, refundsOnEntry, transition } from "../../src/domain/job.js"

/** The whole table, written out: every (status, event) pair not listed must be refused. */
const allowed: Record<string, string> = {
  "pending/Pickup": "processing",
  "pending/Cancel": "cancelled",
  "pending/Abandon": "failed",
  "processing/Reclaim": "processing",
  "processing/Complete": "completed",
  "processing/Fail": "failed",
  "processing/Abandon": "failed"
}

describe("job state machine", () => {
  for (const status of JobStatus.literals) {
    for (const event of jobEvents) {
      const expected = allowed[`${status}/${event}`]
      it(`${status} + ${event} -> ${expected ?? "refused"}`, () => {
        const result = transition(status, event)
        if (expected === undefined) {
          expect(Result.isFailure(result)).toBe(true)
          expect(Result.isFailure(result) && result.failure).toMatchObject({ _tag: "TransitionError", from: status, event })
        } else {
          expect(result).toEqual(Result.succeed(expected))
        }
      })
    }
  }

  it("has exactly the transitions of spec section 3.1 plus lease recovery", () => {
    const count = JobStatus.literals.flatMap((s) => jobEvents.map((e) => transition(s, e))).filter(Result.isSuccess).length
    expect(count).toBe(Object.keys(allowed).length)
  })

  it("names the terminal states and the ones that refund", () => {
    expect(JobStatus.literals.filter(isTerminal)).toEqual(["completed", "failed", "cancelled"])
    expect(JobStatus.literals.filter(refundsOnEntry)).toEqual(["failed", "cancelled"])
  })

  it("shows progress 0, 50, 100, and 0 for failed and cancelled jobs", () => {
    expect(JobStatus.literals.map((s) => [s, progressOf(s)])).toEqual([
      ["pending", 0],
      ["processing", 50],
      ["completed", 100],
      ["failed", 0],
      ["cancelled", 0]
    ])
  })
})
