import { describe, expect, it } from "vitest"
import { retentionCutoffs } from "../../src/domain/retention.js"

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

describe("retentionCutoffs", () => {
  it("lets jobs go once they ended more than the retention ago, and idempotency records once past their window", () => {
    expect(retentionCutoffs({ jobRetentionMs: 30 * DAY, idempotencyWindowMs: DAY }, 100 * DAY)).toEqual({
      jobsEndedBy: 70 * DAY - 1,
      idempotencyCreatedBefore: 99 * DAY
    })
  })

  it("keeps every job without a retention, and still forgets idempotency records", () => {
    expect(retentionCutoffs({ jobRetentionMs: null, idempotencyWindowMs: DAY }, 10 * DAY)).toEqual({
      jobsEndedBy: null,
      idempotencyCreatedBefore: 9 * DAY
    })
  })

  it("never lets a job go while an Idempotency-Key may still name it", () => {
    // A key made at 0 still counts at DAY (claimIdempotency keeps records created at or after now - window).
    const { idempotencyCreatedBefore, jobsEndedBy } = retentionCutoffs({ jobRetentionMs: HOUR, idempotencyWindowMs: DAY }, DAY)
    expect(jobsEndedBy).toBe(-1)
    expect(idempotencyCreatedBefore).toBe(0)
  })
})
