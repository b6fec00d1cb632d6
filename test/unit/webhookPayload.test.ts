import { describe, expect, it } from "vitest"
import type { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { webhookPayload } from "../../src/domain/webhook.js"
import { job, T0 } from "../conformance/fixtures.js"

const ended = (overrides: Partial<Job>): Job =>
  job("acc_1" as AccountId, {
    id: "job_1" as JobId,
    requestId: "req_1" as RequestId,
    model: "acme/image",
    webhookUrl: "https://app.example/hooks",
    status: "completed",
    startedAt: T0 + 1_000,
    completedAt: T0 + 5_000,
    attempts: 1,
    providerPhase: "started",
    providerHandle: { id: "pred_1" },
    providerStarts: 1,
    ...overrides
  })

// The bodies receivers verify signatures over: these exact bytes, key order included (spec 6.2).
describe("a webhook's body", () => {
  it("carries a completed job's first output with its metadata, leaving out what the output lacks", () => {
    const job = ended({
      outputs: [
        {
          url: "https://cdn/1.png",
          type: "image",
          thumbnail: "https://cdn/1-t.png",
          posterImage: "https://cdn/1-p.png",
          contentType: "image/png",
          metadata: { width: 512 }
        },
        { url: "https://cdn/2.png", type: "image" }
      ]
    })
    expect(webhookPayload(job)).toBe(
      "{\"jobId\":\"job_1\",\"requestId\":\"req_1\",\"status\":\"completed\",\"output\":{\"url\":\"https://cdn/1.png\",\"type\":\"image\","
        + "\"contentType\":\"image/png\",\"thumbnail\":\"https://cdn/1-t.png\",\"metadata\":{\"width\":512}},"
        + "\"completedAt\":\"2023-11-14T22:13:25.000Z\"}"
    )
    expect(webhookPayload(ended({ outputs: [{ url: "https://cdn/1.txt", type: "text" }] }))).toBe(
      "{\"jobId\":\"job_1\",\"requestId\":\"req_1\",\"status\":\"completed\",\"output\":{\"url\":\"https://cdn/1.txt\",\"type\":\"text\",\"metadata\":{}},"
        + "\"completedAt\":\"2023-11-14T22:13:25.000Z\"}"
    )
  })

  it("carries a failed job's error and no output", () => {
    const job = ended({
      status: "failed",
      error: { code: "GENERATION_FAILED", message: "no luck", type: "input_rejected", retryable: false },
      outputs: [{ url: "https://cdn/partial.png", type: "image" }]
    })
    expect(webhookPayload(job)).toBe(
      "{\"jobId\":\"job_1\",\"requestId\":\"req_1\",\"status\":\"failed\",\"error\":{\"code\":\"GENERATION_FAILED\",\"message\":\"no luck\","
        + "\"type\":\"input_rejected\",\"retryable\":false},"
        + "\"completedAt\":\"2023-11-14T22:13:25.000Z\"}"
    )
  })

  it("dates a job without a completion time at its creation", () => {
    expect(webhookPayload(ended({ completedAt: null }))).toBe(
      "{\"jobId\":\"job_1\",\"requestId\":\"req_1\",\"status\":\"completed\",\"completedAt\":\"2023-11-14T22:13:20.000Z\"}"
    )
  })
})
