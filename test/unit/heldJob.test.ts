import { describe, expect, it } from "vitest"
import { heldJob } from "../../src/domain/heldJob.js"
import { Job } from "../../src/domain/job.js"

/**
 * heldJob copies a job field by field; a field added to the Job schema and not to the copy would
 * be lost by every worker that holds the job (an optional one silently: the type checker only
 * sees required fields missing).
 */
describe("heldJob", () => {
  const every = Object.fromEntries(Object.keys(Job.fields).map((key, i) => [key, `value-${i}`])) as unknown as Job

  it("keeps every field of the Job schema, the optional ones included", () => {
    expect(Object.keys(heldJob(every)).sort()).toEqual(Object.keys(Job.fields).sort())
    expect(heldJob(every)).toEqual(every)
  })

  it("adds no optional field the job does not have", () => {
    const { apiKeyId: _a, providerLog: _l, providerProgress: _p, ...without } = every
    expect(Object.keys(heldJob(without as Job)).sort()).toEqual(Object.keys(without).sort())
  })
})
