import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { allJobs, jobRow } from "../../adapters/sql/jobs/jobRows.js"
import { endingColumns, routeOrNull } from "../../adapters/sql/queue/held.js"
import { JobFromRow, plainJobOfRow } from "../../adapters/sql/rows.js"
import type { AccountId, ApiKeyId, JobId, RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { job } from "../conformance/fixtures.js"

const decodeRow = Schema.decodeUnknownSync(JobFromRow)
const encodeRow = Schema.encodeSync(JobFromRow)

/** Every field set, the optional and nullable ones included. */
const fullJob: Job = {
  id: "job_full" as JobId,
  accountId: "acc_1" as AccountId,
  apiKeyId: "key_1" as ApiKeyId,
  requestId: "req_1" as RequestId,
  model: "acme/video",
  version: "v2",
  input: { prompt: "a cat", seed: 7, nested: { list: [1, "two", { deep: true }], none: null } },
  webhookUrl: "https://hooks.genjobs.test/genjobs",
  status: "failed",
  costMicroCents: 1_250_000,
  error: { code: "GENERATION_FAILED", message: "the provider refused the prompt", type: "input_rejected", retryable: false },
  outputs: [
    {
      url: "https://cdn.genjobs.test/out.mp4",
      type: "video",
      thumbnail: "https://cdn.genjobs.test/thumb.png",
      posterImage: "https://cdn.genjobs.test/poster.png",
      contentType: "video/mp4",
      metadata: { width: 1280, height: 720, tags: ["a", "b"] }
    },
    { url: "https://cdn.genjobs.test/out.txt", type: "text" }
  ],
  createdAt: 1_700_000_000_000,
  estimatedCompletionAt: 1_700_000_030_000,
  startedAt: 1_700_000_001_000,
  completedAt: 1_700_000_020_000,
  attempts: 2,
  leaseOwner: "worker-1",
  leaseExpiresAt: 1_700_000_060_000,
  providerPhase: "started",
  providerHandle: {
    id: "pred_123",
    data: { statusUrl: "https://provider.genjobs.test/p/123" },
    route: { index: 1, providerId: "replicate", credentialId: "cred_a" }
  },
  providerStarts: 3,
  providerRoute: { index: 1, providerId: "fal", credentialId: "cred_2" },
  fairKey: 3_000_000,
  providerProgress: 45,
  providerLog: { taken: 12, lines: 10, bytes: 420, capped: false }
}

/** Every nullable field null; a job that recorded no key has no apiKeyId. */
const bareJob: Job = job("acc_1" as AccountId, {
  id: "job_bare" as JobId,
  requestId: "req_2" as RequestId,
  model: "acme/text",
  input: {},
  costMicroCents: 0
})

/** How PostgreSQL answers a row: BIGINT columns as strings. */
const asPostgresAnswers = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).map(([column, value]) => [column, typeof value === "number" ? String(value) : value]))

describe("a job's row", () => {
  it.each([["every field set", fullJob], ["every nullable null", bareJob]])("reads back as the job it was written from: %s", (_, job) => {
    expect(decodeRow(jobRow(job))).toStrictEqual(job)
    expect(decodeRow(asPostgresAnswers(jobRow(job)))).toStrictEqual(job)
  })

  it("holds each field in its column, JSON fields as JSON text and nulls as NULL", () => {
    expect(jobRow(fullJob)).toStrictEqual({
      id: "job_full",
      account_id: "acc_1",
      api_key_id: "key_1",
      request_id: "req_1",
      model: "acme/video",
      version: "v2",
      input: JSON.stringify(fullJob.input),
      webhook_url: "https://hooks.genjobs.test/genjobs",
      status: "failed",
      cost_micro_cents: 1_250_000,
      error: JSON.stringify(fullJob.error),
      outputs: JSON.stringify(fullJob.outputs),
      created_at: 1_700_000_000_000,
      estimated_completion_at: 1_700_000_030_000,
      started_at: 1_700_000_001_000,
      completed_at: 1_700_000_020_000,
      attempts: 2,
      lease_owner: "worker-1",
      lease_expires_at: 1_700_000_060_000,
      provider_phase: "started",
      provider_handle: JSON.stringify(fullJob.providerHandle),
      provider_starts: 3,
      provider_route: JSON.stringify(fullJob.providerRoute),
      fair_key: 3_000_000,
      provider_progress: 45,
      provider_log: JSON.stringify(fullJob.providerLog)
    })
    const bare = jobRow(bareJob)
    expect([bare.api_key_id, bare.error, bare.outputs, bare.provider_handle, bare.webhook_url, bare.provider_route, bare.provider_progress, bare.provider_log])
      .toStrictEqual([null, null, null, null, null, null, null, null])
  })

  it.each([
    ["a submitted job", job("acc_1" as AccountId, { apiKeyId: "key_1" as ApiKeyId, webhookUrl: "https://hooks.genjobs.test/a" })],
    ["a job without a key", bareJob],
    ["a key recorded as null", { ...bareJob, apiKeyId: null }],
    ["a claimed job with progress", { ...bareJob, status: "processing", startedAt: 1, attempts: 1, leaseOwner: "w", leaseExpiresAt: 2, providerPhase: "starting", providerStarts: 1, providerProgress: 3 } as const],
    ["every field set", fullJob]
  ])("is the Schema's row, column for column and in its order: %s", (_, written: Job) => {
    expect(jobRow(written)).toStrictEqual(encodeRow(written))
    expect(Object.keys(jobRow(written))).toStrictEqual(Object.keys(encodeRow(written)))
  })

  it.each([
    ["a fractional cost", { costMicroCents: 1.5 }],
    ["an unsafe integer", { createdAt: 2 ** 60 }],
    ["a fractional progress", { providerProgress: 0.5 }]
  ])("refuses what the Schema refuses: %s", (_, wrong) => {
    expect(() => encodeRow({ ...bareJob, ...wrong })).toThrow()
    expect(() => jobRow({ ...bareJob, ...wrong })).toThrow()
  })

  it("reads the rows earlier releases wrote: no api_key_id column, JSON null for no error, extra columns", () => {
    const { api_key_id: _, ...older } = jobRow(bareJob)
    expect(decodeRow({ ...older, error: "null", some_later_column: 1 })).toStrictEqual(bareJob)
    expect(decodeRow({ ...jobRow(bareJob), api_key_id: null })).toStrictEqual(bareJob)
  })

  it("refuses a row a job cannot come from", () => {
    expect(() => decodeRow({ ...jobRow(bareJob), status: "lost" })).toThrow()
    expect(() => decodeRow({ ...jobRow(bareJob), attempts: "1.5" })).toThrow()
    expect(() => decodeRow({ ...jobRow(bareJob), outputs: "{not json" })).toThrow()
  })
})

/** A job as a drain's claim and ending answer it: the rows read without the Schema. */
const claimedJob: Job = {
  ...bareJob,
  apiKeyId: "key_1" as ApiKeyId,
  input: { prompt: "a cat", n: 2, nested: { list: [1, { deep: true }] } },
  status: "processing",
  startedAt: 1_700_000_001_000,
  attempts: 1,
  leaseOwner: "worker-1",
  leaseExpiresAt: 1_700_000_060_000,
  providerPhase: "starting",
  providerStarts: 1
}
const endedJob: Job = {
  ...claimedJob,
  status: "completed",
  outputs: [{ url: "https://cdn.genjobs.test/a.png", type: "image", contentType: "image/png" }, { url: "https://cdn.genjobs.test/b.txt", type: "text" }],
  completedAt: 1_700_000_002_000,
  leaseOwner: null,
  leaseExpiresAt: null,
  providerPhase: "started",
  providerRoute: { index: 0, providerId: "noop" },
  providerProgress: 100
}

/** The Schema's answer for a row: the job, or undefined when it refuses the row. */
const schemaJob = (row: unknown): Job | undefined => {
  try {
    return decodeRow(row)
  } catch {
    return undefined
  }
}

/** How @effect/sql-pg answers a row: BIGINT columns as bigints. */
const asBigInts = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).map(([column, value]) => [column, typeof value === "number" && column !== "attempts" ? BigInt(value) : value]))

describe("a job's row read without the Schema", () => {
  const plainRows: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ["a pending job", jobRow(bareJob)],
    ["a claimed job", jobRow(claimedJob)],
    ["an ended job", jobRow(endedJob)],
    ["an ended job with a route's credential", jobRow({ ...endedJob, providerRoute: { index: 2, providerId: "fal", credentialId: "c" } })],
    ["a key recorded as null", { ...jobRow(claimedJob), api_key_id: null }],
    ["an earlier release's row", (({ api_key_id: _, provider_log: _l, provider_progress: _p, ...older }) => ({ ...older, error: "null", later: 1 }))(jobRow(endedJob))]
  ]

  it.each(plainRows)("is the Schema's job, field for field and in its order: %s", (_, row) => {
    for (const answered of [row, asPostgresAnswers(row), asBigInts(row)]) {
      const plain = plainJobOfRow(answered)
      expect(plain).toStrictEqual(decodeRow(answered))
      expect(Object.keys(plain!)).toStrictEqual(Object.keys(decodeRow(answered)))
    }
  })

  it.each([
    ["an error", jobRow(fullJob)],
    ["output metadata", jobRow({ ...endedJob, outputs: fullJob.outputs })],
    ["an input with __proto__", { ...jobRow(claimedJob), input: '{"__proto__":{"x":1}}' }]
  ])("leaves the rest to the Schema: %s", (_, row) => {
    expect(plainJobOfRow(row)).toBeUndefined()
    expect(Effect.runSync(allJobs([jobRow(claimedJob), row]))).toStrictEqual([claimedJob, decodeRow(row)])
  })

  // Each column of each plain row set to values of the wrong kind, one at a time: the hand-read
  // job is the Schema's wherever it reads one, and it refuses every row the Schema refuses.
  const wrongValues: ReadonlyArray<unknown> = [
    undefined, null, "", "x", "null", "[]", "{}", "[{}]", '[{"url":"u","type":"movie"}]', '[{"url":1,"type":"text"}]',
    '[{"url":"u","type":"text","thumbnail":1}]', '{"index":-1,"providerId":"p"}', '{"index":0,"providerId":""}',
    '{"index":0.5,"providerId":"p"}', '{"index":0,"providerId":"p","credentialId":2}', "{not json", 0, -1, 1.5, "1.5", "-0", "007",
    " 12", "1e3", "9007199254740993", 2 ** 60, 12n, -3n, 2n ** 60n, true, "lost", "started", "completed", [], {}
  ]
  it("agrees with the Schema on every wrong value of every column", () => {
    for (const [, row] of plainRows) {
      for (const column of Object.keys(row)) {
        for (const value of wrongValues) {
          const wrong = { ...row, [column]: value }
          const plain = plainJobOfRow(wrong)
          if (plain !== undefined) expect(plain, `${column} = ${String(value)}`).toStrictEqual(schemaJob(wrong))
          if (schemaJob(wrong) === undefined) expect(plain, `${column} = ${String(value)}`).toBeUndefined()
        }
      }
    }
  })
})

describe("a held job's ending as its columns", () => {
  /** The job's row's columns the ending writes, as JobFromRow encodes them. */
  const schemaEnding = (ended: Job) => {
    const row = encodeRow(ended)
    return { status: row.status, error: row.error, outputs: row.outputs, completed_at: row.completed_at }
  }
  const ending = (ended: Job) => ({ id: ended.id, leaseOwner: "worker-1", status: ended.status, outputs: ended.outputs, error: ended.error, completedAt: ended.completedAt! })

  it.each([
    ["outputs", endedJob],
    ["no outputs", { ...endedJob, outputs: null }],
    ["outputs with metadata", { ...endedJob, outputs: fullJob.outputs }],
    ["an error", { ...endedJob, status: "failed", outputs: null, error: fullJob.error }],
    ["an output's key the Schema does not know", { ...endedJob, outputs: [{ url: "u", type: "text", extra: 1 } as never] }]
  ] as const)("is the Schema's, column for column and in its order: %s", (_, ended: Job) => {
    expect(endingColumns(ending(ended))).toStrictEqual(schemaEnding(ended))
    expect(Object.keys(endingColumns(ending(ended)))).toStrictEqual(Object.keys(schemaEnding(ended)))
  })

  it.each([
    ["an unknown status", { status: "lost" }],
    ["an unknown output type", { outputs: [{ url: "u", type: "movie" }] }],
    ["a fractional end", { completedAt: 1.5 }]
  ])("refuses what the Schema refuses: %s", (_, wrong) => {
    expect(() => endingColumns({ ...ending(endedJob), ...wrong } as never)).toThrow()
  })

  it.each([
    ["without a credential", { index: 0, providerId: "noop" }],
    ["with one", { index: 3, providerId: "fal", credentialId: "c" }],
    ["with a key the Schema does not know", { index: 1, providerId: "fal", extra: true } as never]
  ])("records a route as the Schema writes it: %s", (_, route) => {
    expect(routeOrNull(route)).toBe(encodeRow({ ...endedJob, providerRoute: route }).provider_route)
  })

  it("refuses a route the Schema refuses, and records none for none", () => {
    expect(() => routeOrNull({ index: -1, providerId: "fal" })).toThrow()
    expect(routeOrNull(undefined)).toBeNull()
  })
})
