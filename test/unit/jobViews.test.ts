import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { JobListItem, JobView, SubmitResponse } from "../../src/http/schemas/jobs.js"
import { jobListItem, jobView, submitView } from "../../src/http/views.js"
import { job, T0 } from "../conformance/fixtures.js"

const aJob = (overrides: Partial<Job>): Job =>
  job("acc_1" as AccountId, { id: "job_1" as JobId, requestId: "req_1" as RequestId, model: "acme/image", costMicroCents: 25_000, ...overrides })

/** The answer's bytes as a handler sends them: through the answer's schema. */
const body = <A, I>(schema: Schema.Codec<A, I>, view: A) => JSON.stringify(Schema.encodeSync(schema)(view))

// What clients parse, key order included (spec, jobs).
describe("the API's answers about a job", () => {
  it("answers a submit with its id, request id, estimate as ISO and cost", () => {
    const expected = "{\"jobId\":\"job_1\",\"requestId\":\"req_1\",\"status\":\"pending\","
      + "\"estimatedCompletionTime\":\"2023-11-14T22:13:50.000Z\",\"costMicroCents\":25000}"
    expect(JSON.stringify(submitView(aJob({})))).toBe(expected)
    expect(body(SubmitResponse, submitView(aJob({})))).toBe(expected)
  })

  it("shows a completed job with its first output's URL, its outputs and times as ISO", () => {
    const job = aJob({
      status: "completed",
      completedAt: T0 + 5_000,
      outputs: [
        { url: "https://cdn/1.png", type: "image", contentType: "image/png", metadata: { width: 512 } },
        { url: "https://cdn/2.png", type: "image" }
      ]
    })
    const expected = "{\"jobId\":\"job_1\",\"status\":\"completed\",\"progress\":100,\"providerProgress\":null,"
      + "\"createdAt\":\"2023-11-14T22:13:20.000Z\",\"completedAt\":\"2023-11-14T22:13:25.000Z\","
      + "\"output\":\"https://cdn/1.png\",\"outputs\":[{\"url\":\"https://cdn/1.png\",\"type\":\"image\","
      + "\"contentType\":\"image/png\",\"metadata\":{\"width\":512}},{\"url\":\"https://cdn/2.png\",\"type\":\"image\"}],"
      + "\"error\":null}"
    expect(JSON.stringify(jobView(job))).toBe(expected)
    expect(body(JobView, jobView(job))).toBe(expected)
  })

  it("shows a failed job's error, no output and progress 0", () => {
    const job = aJob({ status: "failed", completedAt: T0 + 5_000, error: { code: "GENERATION_FAILED", message: "no luck", type: "input_rejected", retryable: false } })
    expect(JSON.stringify(jobView(job))).toBe(
      "{\"jobId\":\"job_1\",\"status\":\"failed\",\"progress\":0,\"providerProgress\":null,"
        + "\"createdAt\":\"2023-11-14T22:13:20.000Z\",\"completedAt\":\"2023-11-14T22:13:25.000Z\","
        + "\"output\":null,\"outputs\":null,\"error\":{\"code\":\"GENERATION_FAILED\",\"message\":\"no luck\","
        + "\"type\":\"input_rejected\",\"retryable\":false}}"
    )
  })

  it("lists a job with its model and without its outputs", () => {
    const job = aJob({ status: "processing", startedAt: T0 + 1_000, providerProgress: 37 })
    const expected = "{\"jobId\":\"job_1\",\"status\":\"processing\",\"progress\":50,\"providerProgress\":37,\"model\":\"acme/image\","
      + "\"createdAt\":\"2023-11-14T22:13:20.000Z\",\"completedAt\":null,\"error\":null}"
    expect(body(JobListItem, jobListItem(job))).toBe(expected)
  })
})
